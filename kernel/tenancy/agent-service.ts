import type { Context } from 'koa';
import { activityActor, type Actor } from '../auth/actor.ts';
import { iso, type Tx } from '../db/database.ts';
import type { KernelServices } from '../services.ts';
import { applyCreateDefaults, DEFAULT_ADAPTER_TYPE } from './adapter-defaults.ts';
import { maskConfig, normalizeNewRuntimeConfig, validateAdapterEnv, withDesiredSkills } from './agent-config.ts';
import { CONFIG_FIELDS, recordRevision, type RevisionSource } from './agent-config-revisions.ts';
import type { CreateAgentInput } from './agent-input.ts';
import { trimmedOrNull } from './agent-input.ts';
import { lockCompanyShortnames, uniqueNameForCreate } from './agent-shortname.ts';
import { assertSecretRefsBelongToCompany, assertValidManager, eventAgent, type AgentRow } from './agents.ts';
import { liftAllHolds, placeOperatorHold } from './scope-holds.ts';
import { AGENT_WITH_SPEND } from './month-spend.ts';

/**
 * Writes of agents shared by several routes: create (and hire), full-row updates, and status
 * transitions with their side effects (auth cache eviction, activity, events).
 */
export function callerIds(ctx: Context): { userId: string | null; agentId: string | null } {
  const actor = ctx.state.actor as Actor;
  if (actor.kind === 'agent') return { userId: null, agentId: actor.agentId };
  if (actor.kind === 'board') return { userId: actor.userId, agentId: null };
  return { userId: null, agentId: null };
}

export function eventActor(ctx: Context): { actorType: 'agent' | 'user' | 'system'; actorId: string } {
  const who = activityActor(ctx.state.actor as Actor);
  return { actorType: who.actorType, actorId: who.actorId };
}

export interface NewAgentValues {
  name: string;
  role: string;
  title: string | null;
  icon: string | null;
  capabilities: string | null;
  reportsTo: string | null;
  adapterType: string;
  adapterConfig: Record<string, unknown>;
  runtimeConfig: Record<string, unknown>;
  budgetMonthlyCents: number;
  metadata: Record<string, unknown> | null;
  permissions: Record<string, unknown>;
}

/** Create and hire share this normalisation; it throws before anything is written. */
export function normalizeNewAgent(body: CreateAgentInput): NewAgentValues {
  const role = body.role?.trim().toLowerCase() || 'general';
  const adapterType = body.adapterType ?? DEFAULT_ADAPTER_TYPE;
  const requested = withDesiredSkills({ ...(body.adapterConfig ?? {}) }, body.desiredSkills);
  validateAdapterEnv(requested);
  return {
    name: body.name.trim(),
    role,
    title: trimmedOrNull(body.title),
    icon: trimmedOrNull(body.icon),
    capabilities: trimmedOrNull(body.capabilities),
    reportsTo: body.reportsTo ? body.reportsTo.toLowerCase() : null,
    adapterType,
    adapterConfig: applyCreateDefaults(adapterType, requested),
    runtimeConfig: normalizeNewRuntimeConfig(body.runtimeConfig),
    budgetMonthlyCents: body.budgetMonthlyCents ?? 0,
    metadata: body.metadata ?? null,
    // The CEO starts with the authority to build its team; everyone else starts with none.
    permissions: role === 'ceo' ? { canCreateAgents: true } : {},
  };
}

/** The configuration snapshot an approver sees: what was asked for, with secrets masked. */
export function requestedSnapshot(values: NewAgentValues): Record<string, unknown> {
  return { ...values, adapterConfig: maskConfig(values.adapterConfig), runtimeConfig: maskConfig(values.runtimeConfig) };
}

export async function insertAgent(ctx: Context, kernel: KernelServices, tx: Tx, companyId: string, values: NewAgentValues, status: 'idle' | 'pending_approval', extraDetails: Record<string, unknown> = {}, source: 'create' | 'import' = 'create'): Promise<AgentRow> {
  await assertSecretRefsBelongToCompany(tx, companyId, values.adapterConfig);
  if (values.reportsTo) await assertValidManager(tx, companyId, values.reportsTo);
  await lockCompanyShortnames(tx, companyId);
  const { name, urlKey } = await uniqueNameForCreate(tx, companyId, values.name);
  const { userId, agentId } = callerIds(ctx);
  const rows = await tx.query<AgentRow>(
    `insert into agents (company_id, name, url_key, role, title, icon, capabilities, reports_to, adapter_type, adapter_config,
                         runtime_config, budget_monthly_cents, status, permissions, metadata, created_by_user_id, created_by_agent_id)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, ?, ?, ?::jsonb, ?::jsonb, ?, ?) returning ${AGENT_WITH_SPEND}`,
    [companyId, name, urlKey, values.role, values.title, values.icon, values.capabilities, values.reportsTo, values.adapterType,
      JSON.stringify(values.adapterConfig), JSON.stringify(values.runtimeConfig), values.budgetMonthlyCents, status,
      JSON.stringify(values.permissions), values.metadata === null ? null : JSON.stringify(values.metadata), userId, agentId],
  );
  const agent = rows[0]!;
  await recordRevision(tx, source === 'import'
    ? { agent, source, changedKeys: CONFIG_FIELDS, userId: null, agentId: null }
    : { agent, source, changedKeys: CONFIG_FIELDS, userId, agentId });
  await kernel.activity.recordFor(ctx, tx, {
    companyId, action: 'agent.created', entityType: 'agent', entityId: agent.id,
    details: { name: agent.name, role: agent.role, adapterType: agent.adapter_type, status: agent.status, ...extraDetails },
  });
  await kernel.events.emit(tx, 'agent.created', { companyId, agentId: agent.id, agent: eventAgent(agent), actor: eventActor(ctx) }, { awaited: true });
  return agent;
}

/** Every column a route may change; writeAgent stores all of them at once. */
export type AgentState = Pick<AgentRow,
  'name' | 'url_key' | 'role' | 'title' | 'icon' | 'capabilities' | 'reports_to' | 'adapter_type' | 'adapter_config' |
  'runtime_config' | 'budget_monthly_cents' | 'status' | 'pause_reason' | 'paused_at' | 'metadata' | 'terminated_at' | 'permissions'>;

export function stateOf(row: AgentRow): AgentState {
  return {
    name: row.name, url_key: row.url_key, role: row.role, title: row.title, icon: row.icon, capabilities: row.capabilities,
    reports_to: row.reports_to, adapter_type: row.adapter_type, adapter_config: row.adapter_config, runtime_config: row.runtime_config,
    budget_monthly_cents: row.budget_monthly_cents, status: row.status, pause_reason: row.pause_reason,
    paused_at: iso(row.paused_at), metadata: row.metadata, terminated_at: iso(row.terminated_at), permissions: row.permissions,
  };
}

export async function writeAgent(tx: Tx, agentId: string, next: AgentState): Promise<AgentRow> {
  const rows = await tx.query<AgentRow>(
    `update agents set name = ?, url_key = ?, role = ?, title = ?, icon = ?, capabilities = ?, reports_to = ?, adapter_type = ?,
            adapter_config = ?::jsonb, runtime_config = ?::jsonb, budget_monthly_cents = ?, status = ?, pause_reason = ?,
            paused_at = ?::timestamptz, metadata = ?::jsonb, terminated_at = ?::timestamptz, permissions = ?::jsonb, updated_at = now()
      where id = ? returning ${AGENT_WITH_SPEND}`,
    [next.name, next.url_key, next.role, next.title, next.icon, next.capabilities, next.reports_to, next.adapter_type,
      JSON.stringify(next.adapter_config ?? {}), JSON.stringify(next.runtime_config ?? {}), next.budget_monthly_cents, next.status,
      next.pause_reason, next.paused_at, next.metadata === null || next.metadata === undefined ? null : JSON.stringify(next.metadata),
      next.terminated_at, JSON.stringify(next.permissions ?? {}), agentId],
  );
  return rows[0]!;
}

/** The columns that follow from a status: pause bookkeeping and the termination time. */
export function withStatus(state: AgentState, status: string, pauseReason?: string | null): AgentState {
  const now = new Date().toISOString();
  const next = { ...state, status };
  if (status === 'paused') {
    next.paused_at = state.status === 'paused' && state.paused_at ? state.paused_at : now;
    next.pause_reason = pauseReason ?? (state.status === 'paused' ? state.pause_reason : null) ?? 'manual';
  } else {
    next.paused_at = null;
    next.pause_reason = null;
  }
  next.terminated_at = status === 'terminated' ? state.terminated_at ?? now : null;
  return next;
}

/**
 * The board's status decisions as holds (see scope-holds.ts): a pause it makes is its own hold
 * (also on an agent a plugin already holds, so lifting the plugin's hold leaves it paused); a
 * status it sets over a pause (resume, terminate) lifts every hold, which it answers.
 */
export async function syncBoardHolds(tx: Tx, before: AgentRow, after: AgentRow, pausedByThisWrite: boolean): Promise<Array<{ holder: string; reason: string }>> {
  if (after.status === 'paused') {
    if (pausedByThisWrite) await placeOperatorHold(tx, after.company_id, 'agent', after.id, after.pause_reason ?? 'manual');
    return [];
  }
  return before.status === 'paused' ? liftAllHolds(tx, after.company_id, 'agent', after.id) : [];
}

/**
 * After a write: evict cached credentials when something the resolver caches changed
 * (status, role, adapter type), and announce a status change.
 */
export async function afterAgentWrite(ctx: Context, kernel: KernelServices, tx: Tx, before: AgentRow, after: AgentRow, reason: string | null = null): Promise<void> {
  if (before.status !== after.status || before.role !== after.role || before.adapter_type !== after.adapter_type) {
    await kernel.invalidate(tx, { type: 'agent', id: after.id });
  }
  if (before.status !== after.status) {
    await kernel.events.emit(tx, 'agent.status_changed', {
      companyId: after.company_id, agentId: after.id, from: before.status, to: after.status, reason, actor: eventActor(ctx),
    });
  }
}

export async function recordConfigRevision(ctx: Context, tx: Tx, agent: AgentRow, source: RevisionSource, changedKeys: readonly string[], rolledBackFromRevisionId?: string) {
  const { userId, agentId } = callerIds(ctx);
  return recordRevision(tx, { agent, source, changedKeys, rolledBackFromRevisionId, userId, agentId });
}
