import type { Context } from 'koa';
import type { AgentActor, BoardActor } from '../auth/actor.ts';
import type { Queryable } from '../db/database.ts';
import { badRequest, forbidden, notFound } from '../http/errors.ts';
import { assertCompanyAccess, canAccessCompany, requireActor } from '../http/guards.ts';
import type { ParameterDoc } from '../http/route-spec.ts';
import { isUuid } from '../http/validate.ts';
import { isPlainObject } from './agent-config.ts';
import { findAgent, findByShortname, type AgentRow } from './agents.ts';
import { normalizeShortname } from './agent-shortname.ts';
import { findMembership, hasGrant, listGrants, toGrantJson, toMembershipJson } from './permission-grants.ts';

/**
 * Who may do what to an agent. Board actors act on agents of companies they can reach;
 * agent actors stay inside their own company and need `agents:create` (or the legacy
 * `permissions.canCreateAgents` flag) to manage or read the configuration of peers.
 */
export type Caller = BoardActor | AgentActor;

export function legacyCanCreateAgents(agent: Pick<AgentRow, 'permissions'>): boolean {
  return isPlainObject(agent.permissions) && agent.permissions.canCreateAgents === true;
}

/** Whether an agent may create and configure agents of its company. */
export async function agentMayManageAgents(db: Queryable, agentId: string, companyId: string): Promise<boolean> {
  const self = await findAgent(db, agentId);
  if (!self || self.company_id !== companyId) return false;
  return legacyCanCreateAgents(self) || hasGrant(db, companyId, 'agent', agentId, 'agents:create');
}

/** Board with company access, or an agent of the company holding agents:create. */
export async function callerMayManageAgents(db: Queryable, caller: Caller, companyId: string): Promise<boolean> {
  if (!canAccessCompany(caller, companyId)) return false;
  if (caller.kind === 'board') return true;
  return agentMayManageAgents(db, caller.agentId, companyId);
}

export async function assertMayManageAgents(db: Queryable, caller: Caller, companyId: string, what: string): Promise<void> {
  if (!(await callerMayManageAgents(db, caller, companyId))) {
    throw forbidden(`Missing permission: ${what} requires the agents:create grant (or permissions.canCreateAgents)`, 'permission_denied', { permission: 'agents:create' });
  }
}

/** Board members read configuration with membership alone; agents read their own, or peers' with agents:create. */
export async function callerMayReadConfig(db: Queryable, caller: Caller, agent: AgentRow): Promise<boolean> {
  if (!canAccessCompany(caller, agent.company_id)) return false;
  if (caller.kind === 'board') return true;
  if (caller.agentId === agent.id) return true;
  return agentMayManageAgents(db, caller.agentId, agent.company_id);
}

/** The company's CEO agent, judged by its stored role rather than the cached one. */
export async function isCeoAgentOf(db: Queryable, caller: Caller, companyId: string): Promise<boolean> {
  if (caller.kind !== 'agent' || caller.companyId !== companyId) return false;
  const self = await findAgent(db, caller.agentId);
  return self?.role === 'ceo' && self.company_id === companyId;
}

/** The query parameter agentForRequest reads, for the reference of every route it serves. */
export const AGENT_REFERENCE_PARAMETERS: readonly ParameterDoc[] = [{
  name: 'companyId', in: 'query', schema: { type: 'string' },
  description: "The company whose agent a shortname in the path names (agents default to their own company); not needed with an agent id.",
}];

/**
 * Resolves the `:agentId` path segment: a uuid, or a shortname when the company is known
 * from `?companyId=` or from the calling agent. Then applies company scoping: an agent of a
 * company the caller cannot reach answers 403, an unknown agent 404.
 */
export async function agentForRequest(ctx: Context, db: Queryable, param = 'agentId'): Promise<{ caller: Caller; agent: AgentRow }> {
  const caller = requireActor(ctx);
  const reference = String((ctx.params as Record<string, string>)[param] ?? '').trim();
  let agent: AgentRow | undefined;
  if (isUuid(reference)) {
    agent = await findAgent(db, reference.toLowerCase());
  } else {
    const companyId = shortnameCompany(ctx, caller);
    if (!(await db.maybeOne('select 1 from companies where id = ?', [companyId]))) throw notFound('Company not found');
    const key = normalizeShortname(reference);
    agent = key ? await findByShortname(db, companyId, key) : undefined;
  }
  if (!agent) throw notFound('Agent not found');
  assertCompanyAccess(ctx, agent.company_id);
  ctx.state.auditCompanyId = agent.company_id;
  return { caller, agent };
}

function shortnameCompany(ctx: Context, caller: Caller): string {
  const query = ctx.query.companyId;
  const requested = typeof query === 'string' && query.trim() !== '' ? query.trim() : undefined;
  if (requested !== undefined) {
    assertCompanyAccess(ctx, requested.toLowerCase());
    if (!isUuid(requested)) throw notFound('Company not found');
    return requested.toLowerCase();
  }
  if (caller.kind === 'agent') return caller.companyId;
  throw badRequest('Agent shortname lookup requires the companyId query parameter (or use the agent id)');
}

const ASSIGNING_MEMBER_ROLES = new Set(['owner', 'admin', 'operator']);

export type TaskAssignSource = 'ceo_role' | 'agent_creator' | 'explicit_grant' | 'simple_default' | 'none';

/**
 * The `access` block of one agent: whether it may assign tasks and why. The CEO role and the
 * legacy creator flag carry implicit authority; otherwise an explicit tasks:assign grant, or
 * failing that an active membership whose role implies assignment (the simple default, the
 * roles that receive tasks:assign on join), decides. The plain `member` role that the
 * permissions route gives agents implies nothing, so clearing canAssignTasks really clears it.
 */
export async function accessState(db: Queryable, agent: AgentRow): Promise<Record<string, unknown>> {
  const [membershipRow, grantRows] = await Promise.all([
    findMembership(db, agent.company_id, 'agent', agent.id),
    listGrants(db, agent.company_id, { principalType: 'agent', principalId: agent.id }),
  ]);
  let source: TaskAssignSource = 'none';
  if (agent.role === 'ceo') source = 'ceo_role';
  else if (legacyCanCreateAgents(agent)) source = 'agent_creator';
  else if (grantRows.some((grant) => grant.permission_key === 'tasks:assign')) source = 'explicit_grant';
  else if (membershipRow?.status === 'active' && ASSIGNING_MEMBER_ROLES.has(membershipRow.role)) source = 'simple_default';
  return {
    canAssignTasks: source !== 'none',
    taskAssignSource: source,
    membership: membershipRow ? toMembershipJson(membershipRow) : null,
    grants: grantRows.map(toGrantJson),
  };
}
