import type { RouteModule } from '../http/app.ts';
import type { Queryable } from '../db/database.ts';
import { forbidden, notFound, unprocessable } from '../http/errors.ts';
import { declareRoutes, LIST_RESPONSE } from '../http/route-spec.ts';
import { isUuid } from '../http/validate.ts';
import { AGENT_REFERENCE_PARAMETERS, agentForRequest, assertMayManageAgents, callerMayReadConfig, type Caller } from './agent-access.ts';
import { contributedAdapterConfig, storeSecretFields } from './adapter-config-point.ts';
import { isPlainObject } from './agent-config.ts';
import { findRevision, listRevisions, toRevisionJson, type ConfigSnapshot } from './agent-config-revisions.ts';
import type { AgentFieldsInput } from './agent-input.ts';
import { applyConfigFields } from './agent-patch.ts';
import { stateOf, writeAgent } from './agent-service.ts';
import { finishUpdate } from './agent-update-routes.ts';
import { lockAgent, toAgentJson, type AgentRow } from './agents.ts';

/**
 * Configuration and its history: the masked configuration view, the revision list, one
 * revision, and rollback to a revision (which writes a new revision, source `rollback`).
 */
async function assertMayReadConfig(db: Queryable, caller: Caller, agent: AgentRow): Promise<void> {
  if (!(await callerMayReadConfig(db, caller, agent))) {
    throw forbidden("Missing permission: reading another agent's configuration requires the agents:create grant", 'permission_denied', { permission: 'agents:create' });
  }
}

function configurationView(row: AgentRow): Record<string, unknown> {
  const agent = toAgentJson(row);
  return {
    agentId: row.id,
    companyId: row.company_id,
    name: agent.name,
    urlKey: agent.urlKey,
    role: agent.role,
    title: agent.title,
    status: agent.status,
    reportsTo: agent.reportsTo,
    capabilities: agent.capabilities,
    adapterType: agent.adapterType,
    adapterConfig: agent.adapterConfig,
    runtimeConfig: agent.runtimeConfig,
    budgetMonthlyCents: agent.budgetMonthlyCents,
    desiredSkills: agent.desiredSkills,
    metadata: agent.metadata,
    permissions: agent.permissions,
    updatedAt: agent.updatedAt,
  };
}

/** A stored snapshot as patch input; a snapshot that no longer fits the schema is refused. */
function snapshotAsInput(snapshot: ConfigSnapshot): AgentFieldsInput {
  const text = (value: unknown) => (typeof value === 'string' ? value : null);
  if (typeof snapshot.name !== 'string' || snapshot.name.trim() === '' || typeof snapshot.role !== 'string' || typeof snapshot.adapterType !== 'string') {
    throw unprocessable('Revision snapshot is incomplete and cannot be restored', undefined, 'invalid_revision');
  }
  return {
    name: snapshot.name,
    role: snapshot.role,
    title: text(snapshot.title),
    capabilities: text(snapshot.capabilities),
    reportsTo: typeof snapshot.reportsTo === 'string' ? snapshot.reportsTo : null,
    adapterType: snapshot.adapterType,
    adapterConfig: isPlainObject(snapshot.adapterConfig) ? snapshot.adapterConfig : {},
    runtimeConfig: isPlainObject(snapshot.runtimeConfig) ? snapshot.runtimeConfig : {},
    budgetMonthlyCents: typeof snapshot.budgetMonthlyCents === 'number' ? Math.max(0, Math.floor(snapshot.budgetMonthlyCents)) : 0,
    metadata: isPlainObject(snapshot.metadata) ? snapshot.metadata : null,
  };
}

function revisionParam(value: string | undefined): string {
  if (!isUuid(value)) throw notFound('Revision not found');
  return value.toLowerCase();
}

export const agentConfigRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Agents');
  const parameters = AGENT_REFERENCE_PARAMETERS;

  route({
    method: 'GET', path: '/api/agents/:agentId/configuration', auth: 'any', parameters, success: 200,
    summary: "The agent's configuration, secrets masked",
  }, async (ctx) => {
    const { caller, agent } = await agentForRequest(ctx, kernel.db);
    await assertMayReadConfig(kernel.db, caller, agent);
    ctx.body = configurationView(agent);
  });

  route({
    method: 'GET', path: '/api/agents/:agentId/config-revisions', auth: 'any', parameters, success: 200, response: LIST_RESPONSE,
    summary: "The agent's configuration revisions, newest first",
  }, async (ctx) => {
    const { caller, agent } = await agentForRequest(ctx, kernel.db);
    await assertMayReadConfig(kernel.db, caller, agent);
    ctx.body = (await listRevisions(kernel.db, agent.id)).map(toRevisionJson);
  });

  route({ method: 'GET', path: '/api/agents/:agentId/config-revisions/:revisionId', auth: 'any', parameters, success: 200, summary: 'One configuration revision' }, async (ctx) => {
    const { caller, agent } = await agentForRequest(ctx, kernel.db);
    await assertMayReadConfig(kernel.db, caller, agent);
    const revision = await findRevision(kernel.db, agent.id, revisionParam(ctx.params.revisionId));
    if (!revision) throw notFound('Revision not found');
    ctx.body = toRevisionJson(revision);
  });

  route({
    method: 'POST', path: '/api/agents/:agentId/config-revisions/:revisionId/rollback', auth: 'any', parameters, success: 200, errors: [409, 422],
    summary: 'Restore the configuration of a revision (recorded as a new revision)',
  }, async (ctx) => {
    const { caller, agent } = await agentForRequest(ctx, kernel.db);
    await assertMayManageAgents(kernel.db, caller, agent.company_id, 'rolling back agent configuration');
    const revisionId = revisionParam(ctx.params.revisionId);
    // Revisions never change: read before the transaction, so that a contributed adapter type can
    // validate the configuration being restored first, as create and update do (a refusal writes nothing).
    const revision = await findRevision(kernel.db, agent.id, revisionId);
    if (!revision) throw notFound('Revision not found');
    const input = snapshotAsInput(revision.snapshot);
    const contributed = await contributedAdapterConfig(ctx, kernel, { companyId: agent.company_id, adapterType: input.adapterType!, adapterConfig: input.adapterConfig!, agentId: agent.id });
    const updated = await kernel.db.transaction(async (tx) => {
      const before = await lockAgent(tx, agent.id);
      const next = await applyConfigFields(tx, before, stateOf(before), input, { replaceAdapterConfig: true });
      // The snapshot is restored as it was (or as its adapter's plugin normalised it), including keys a replace would otherwise preserve.
      next.adapter_config = contributed.answered ? await storeSecretFields(ctx, kernel, tx, agent.company_id, contributed) : input.adapterConfig!;
      const after = await writeAgent(tx, before.id, next);
      await finishUpdate(ctx, kernel, tx, before, after, 'agent.config_rolled_back', 'rollback', {
        revisionId: revision.id, details: { revisionId: revision.id, revisionNumber: revision.revision_number },
      });
      return after;
    });
    ctx.body = toAgentJson(updated);
  });
};
