import type { RouteModule } from '../http/app.ts';
import type { Queryable } from '../db/database.ts';
import { notFound } from '../http/errors.ts';
import { declareRoutes, LIST_RESPONSE } from '../http/route-spec.ts';
import { companyForRequest } from './company-access.ts';
import { accessState, AGENT_REFERENCE_PARAMETERS, agentForRequest, agentMayManageAgents, callerMayReadConfig, type Caller } from './agent-access.ts';
import { chainOfCommand, findAgent, listCompanyAgents, toAgentJson, type AgentJson, type AgentRow } from './agents.ts';

/** The agent as this caller may see it: full (masked) configuration, or the redacted view. */
export async function agentView(db: Queryable, caller: Caller, row: AgentRow): Promise<AgentJson> {
  return toAgentJson(row, { redacted: !(await callerMayReadConfig(db, caller, row)) });
}

/** GET of one agent adds the chain of command and the access block. */
export async function agentDetail(db: Queryable, caller: Caller, row: AgentRow): Promise<Record<string, unknown>> {
  // Independent reads: issued together so the request waits for one round trip, not three.
  const [view, chain, access] = await Promise.all([agentView(db, caller, row), chainOfCommand(db, row), accessState(db, row)]);
  return { ...view, chainOfCommand: chain, access };
}

export const agentReadRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Agents');

  // Registered before /api/agents/:agentId so that "me" is never taken for a shortname.
  route({ method: 'GET', path: '/api/agents/me', auth: 'agent', success: 200, errors: [404], summary: 'The calling agent, with its chain of command and access' }, async (ctx, req) => {
    const actor = req.actor;
    const row = await findAgent(kernel.db, actor.agentId);
    if (!row) throw notFound('Agent not found');
    ctx.body = await agentDetail(kernel.db, actor, row);
  });

  route({
    method: 'GET', path: '/api/companies/:companyId/agents', auth: 'any', success: 200, response: LIST_RESPONSE,
    summary: "The company's agents (configuration redacted for agents without agents:create)",
  }, async (ctx) => {
    const { actor, company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    const rows = await listCompanyAgents(kernel.db, company.id);
    const readsPeers = actor.kind === 'board' || (await agentMayManageAgents(kernel.db, actor.agentId, company.id));
    ctx.body = rows.map((row) => toAgentJson(row, { redacted: !readsPeers && !(actor.kind === 'agent' && actor.agentId === row.id) }));
  });

  route({
    method: 'GET', path: '/api/agents/:agentId', auth: 'any', parameters: AGENT_REFERENCE_PARAMETERS, success: 200, errors: [400],
    summary: 'One agent (by id, or by shortname), with its chain of command and access',
  }, async (ctx) => {
    const { caller, agent } = await agentForRequest(ctx, kernel.db);
    ctx.body = await agentDetail(kernel.db, caller, agent);
  });
};
