import { int, iso, type Queryable } from '../db/database.ts';
import { conflict, notFound, unprocessable, type KeelError } from '../http/errors.ts';
import { assertSecretRefsBelongToCompany as vaultAssertSecretRefs } from '../vault/secret-refs.ts';
import { isPlainObject, maskConfig, readDesiredSkills } from './agent-config.ts';
import { AGENT_WITH_SPEND } from './month-spend.ts';

/**
 * The agents repository: row shape, the agent JSON of the API, and the lookups and checks
 * that every agent route shares.
 */
export interface AgentRow {
  id: string;
  company_id: string;
  name: string;
  url_key: string;
  role: string;
  title: string | null;
  icon: string | null;
  capabilities: string | null;
  reports_to: string | null;
  adapter_type: string;
  adapter_config: Record<string, unknown>;
  runtime_config: Record<string, unknown>;
  budget_monthly_cents: string | number;
  /** The costs plugin's month-to-date figure, read with the row (AGENT_WITH_SPEND, month-spend.ts). */
  spent_monthly_cents: string | number;
  status: string;
  pause_reason: string | null;
  paused_at: string | null;
  permissions: Record<string, unknown>;
  metadata: Record<string, unknown> | null;
  last_heartbeat_at: string | null;
  created_by_user_id: string | null;
  created_by_agent_id: string | null;
  terminated_at: string | null;
  /** Set on an agent a plugin manages (migration 0028): the plugin's key and the agent's key in its manifest. */
  managed_by_plugin?: string | null;
  managed_key?: string | null;
  created_at: string;
  updated_at: string;
}

import type { AgentJson } from '../../sdk/shared/principal-json.ts';
export type { AgentJson } from '../../sdk/shared/principal-json.ts';

/**
 * The agent as the API shows it. Configuration objects are always masked (secrets never
 * leave the server); `redacted` is the view for callers that may not read configuration at
 * all: adapterConfig and runtimeConfig become empty objects and `configRedacted` says so.
 */
export function toAgentJson(row: AgentRow, options: { redacted?: boolean } = {}): AgentJson {
  const adapterConfig = isPlainObject(row.adapter_config) ? row.adapter_config : {};
  const runtimeConfig = isPlainObject(row.runtime_config) ? row.runtime_config : {};
  const json: AgentJson = {
    id: row.id,
    companyId: row.company_id,
    name: row.name,
    urlKey: row.url_key,
    role: row.role,
    title: row.title,
    icon: row.icon,
    capabilities: row.capabilities,
    reportsTo: row.reports_to,
    adapterType: row.adapter_type,
    adapterConfig: options.redacted ? {} : maskConfig(adapterConfig),
    runtimeConfig: options.redacted ? {} : maskConfig(runtimeConfig),
    budgetMonthlyCents: int(row.budget_monthly_cents),
    spentMonthlyCents: int(row.spent_monthly_cents),
    status: row.status,
    pauseReason: row.pause_reason,
    pausedAt: iso(row.paused_at),
    permissions: isPlainObject(row.permissions) ? row.permissions : {},
    desiredSkills: readDesiredSkills(adapterConfig),
    metadata: row.metadata ?? null,
    lastHeartbeatAt: iso(row.last_heartbeat_at),
    // Both or neither (check agents_managed_pair, migration 0030).
    managedBy: row.managed_by_plugin && row.managed_key ? { plugin: row.managed_by_plugin, key: row.managed_key } : null,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
  if (options.redacted) json.configRedacted = true;
  return json;
}

export async function findAgent(db: Queryable, agentId: string): Promise<AgentRow | undefined> {
  return db.maybeOne<AgentRow>(`select ${AGENT_WITH_SPEND} from agents where id = ?`, [agentId]);
}

/** Locks the row for the rest of the transaction: agent mutations are serialised per agent. */
export async function lockAgent(db: Queryable, agentId: string): Promise<AgentRow> {
  const row = await db.maybeOne<AgentRow>(`select ${AGENT_WITH_SPEND} from agents where id = ? for update`, [agentId]);
  if (!row) throw notFound('Agent not found');
  return row;
}

export async function findByShortname(db: Queryable, companyId: string, urlKey: string): Promise<AgentRow | undefined> {
  return db.maybeOne<AgentRow>(
    `select ${AGENT_WITH_SPEND} from agents where company_id = ? and url_key = ? and status <> 'terminated'`, [companyId, urlKey]);
}

export async function listCompanyAgents(db: Queryable, companyId: string): Promise<AgentRow[]> {
  return db.query<AgentRow>(
    `select ${AGENT_WITH_SPEND} from agents where company_id = ? and status <> 'terminated' order by created_at, name`, [companyId]);
}

export interface ChainLink { id: string; name: string; role: string; title: string | null }

/** Managers up the reportsTo chain, nearest first. The walk stops at a repeat, defensively. */
export async function chainOfCommand(db: Queryable, agent: AgentRow): Promise<ChainLink[]> {
  const rows = await db.query<{ id: string; name: string; role: string; title: string | null; depth: number }>(
    `with recursive chain(id, name, role, title, reports_to, depth, path) as (
       select a.id, a.name, a.role, a.title, a.reports_to, 1, array[?::uuid, a.id]
         from agents a where a.id = ?
       union all
       select a.id, a.name, a.role, a.title, a.reports_to, c.depth + 1, c.path || a.id
         from agents a join chain c on a.id = c.reports_to
        where not a.id = any(c.path) and c.depth < 100
     )
     select id, name, role, title, depth from chain order by depth`,
    [agent.id, agent.reports_to],
  );
  return rows.map((row) => ({ id: row.id, name: row.name, role: row.role, title: row.title }));
}

/**
 * `reportsTo` must name an agent of the same company, and following the chain upwards from
 * it must never reach the agent itself.
 */
export async function assertValidManager(db: Queryable, companyId: string, managerId: string, agentId?: string): Promise<void> {
  if (agentId && managerId === agentId) throw unprocessable('Agent cannot report to itself', { field: 'reportsTo' }, 'invalid_reports_to');
  const manager = await findAgent(db, managerId);
  if (!manager) throw unprocessable('Manager not found: reportsTo must name an agent of this company', { field: 'reportsTo' }, 'invalid_reports_to');
  if (manager.company_id !== companyId) throw unprocessable('Manager must belong to the same company', { field: 'reportsTo' }, 'invalid_reports_to');
  if (!agentId) return;
  const chain = await chainOfCommand(db, manager);
  if (chain.some((link) => link.id === agentId)) {
    throw unprocessable('Reporting relationship would create a cycle', { field: 'reportsTo' }, 'invalid_reports_to');
  }
}

/**
 * Secret references in `adapterConfig.env` must name secrets of the agent's own company (and
 * a pinned version must exist). The vault owns the rule; agent writes call it through here
 * after validateAdapterEnv has checked the reference shape.
 */
export async function assertSecretRefsBelongToCompany(tx: Queryable, companyId: string, adapterConfig: Record<string, unknown>): Promise<void> {
  await vaultAssertSecretRefs(tx, companyId, adapterConfig);
}

/** The activity and event payloads carry the masked agent, never raw configuration. */
export function eventAgent(row: AgentRow): AgentJson {
  return toAgentJson(row);
}

/**
 * Pause reasons of agents whose adapter configuration the board did not write: `imported` (a
 * company import created it or changed its configuration: it came from a package) and `managed`
 * (the host made it for a plugin). Such an agent starts paused; it is resumed only once the
 * board approved its configuration (approveHeldAgent) or wrote it itself (PATCH): resuming is
 * not approving.
 */
export const IMPORTED_PAUSE_REASON = 'imported';
export const MANAGED_PAUSE_REASON = 'managed';

export function awaitsBoardApproval(agent: Pick<AgentRow, 'status' | 'pause_reason'>): boolean {
  return agent.status === 'paused' && (agent.pause_reason === IMPORTED_PAUSE_REASON || agent.pause_reason === MANAGED_PAUSE_REASON);
}

/** 409 for a resume of an agent whose configuration still waits for the board (awaitsBoardApproval). */
export function awaitingApproval(agent: Pick<AgentRow, 'status' | 'pause_reason'>): KeelError {
  return conflict('The agent\'s configuration must be approved by the board first: POST /api/agents/{agentId}/approve (or configure it with PATCH /api/agents/{agentId})',
    { status: agent.status, pauseReason: agent.pause_reason }, 'invalid_status_transition');
}
