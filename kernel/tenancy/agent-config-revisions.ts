import { int, iso, type Queryable, type Row } from '../db/database.ts';
import { isPlainObject, maskConfig } from './agent-config.ts';
import type { AgentRow } from './agents.ts';

/**
 * Configuration history of an agent. Each revision stores the full configuration as it
 * stood after the change (unmasked, so that a rollback restores secrets too) and the keys
 * that changed. Views mask the snapshot like every other configuration view.
 */
export const CONFIG_FIELDS = [
  'name', 'role', 'title', 'reportsTo', 'capabilities', 'adapterType', 'adapterConfig', 'runtimeConfig',
  'budgetMonthlyCents', 'metadata',
] as const;

export type ConfigField = (typeof CONFIG_FIELDS)[number];
export type ConfigSnapshot = Record<ConfigField, unknown>;

/** `instructions`: instruction keys only (agents.instructions), never what runs. */
/**
 * `import`: written from a company package, with no author: the package's adapter configuration
 * is not the importing board's own writing, so it runs only after a board approval (start-checks.ts).
 */
export type RevisionSource = 'create' | 'patch' | 'rollback' | 'approval' | 'instructions' | 'import';

export function snapshotOf(row: AgentRow): ConfigSnapshot {
  return {
    name: row.name,
    role: row.role,
    title: row.title,
    reportsTo: row.reports_to,
    capabilities: row.capabilities,
    adapterType: row.adapter_type,
    adapterConfig: isPlainObject(row.adapter_config) ? row.adapter_config : {},
    runtimeConfig: isPlainObject(row.runtime_config) ? row.runtime_config : {},
    budgetMonthlyCents: int(row.budget_monthly_cents),
    metadata: row.metadata ?? null,
  };
}

export function changedConfigKeys(before: ConfigSnapshot, after: ConfigSnapshot): ConfigField[] {
  return CONFIG_FIELDS.filter((field) => !deepEqual(before[field], after[field]));
}

/** Structural equality; jsonb reorders object keys, so string comparison would not do. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return a === b;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((item, index) => deepEqual(item, other[index]));
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left).filter((key) => left[key] !== undefined);
  if (keys.length !== Object.keys(right).filter((key) => right[key] !== undefined).length) return false;
  return keys.every((key) => deepEqual(left[key], right[key]));
}

export interface RevisionRow {
  id: string;
  company_id: string;
  agent_id: string;
  revision_number: number;
  source: string;
  snapshot: ConfigSnapshot;
  changed_keys: string[];
  rolled_back_from_revision_id: string | null;
  created_by_user_id: string | null;
  created_by_agent_id: string | null;
  created_at: string;
}

export function toRevisionJson(row: RevisionRow): Record<string, unknown> {
  const snapshot: Record<string, unknown> = isPlainObject(row.snapshot) ? row.snapshot : {};
  return {
    id: row.id,
    companyId: row.company_id,
    agentId: row.agent_id,
    revisionNumber: int(row.revision_number),
    source: row.source,
    changedKeys: row.changed_keys ?? [],
    snapshot: { ...snapshot, adapterConfig: maskConfig(snapshot.adapterConfig ?? {}), runtimeConfig: maskConfig(snapshot.runtimeConfig ?? {}) },
    rolledBackFromRevisionId: row.rolled_back_from_revision_id,
    createdByUserId: row.created_by_user_id,
    createdByAgentId: row.created_by_agent_id,
    createdAt: iso(row.created_at),
  };
}

/** Call with the agent row locked (lockAgent), which keeps revision numbers gap- and race-free. */
export async function recordRevision(db: Queryable, input: {
  agent: AgentRow;
  source: RevisionSource;
  changedKeys: readonly string[];
  rolledBackFromRevisionId?: string | null;
  userId: string | null;
  agentId: string | null;
}): Promise<RevisionRow> {
  const rows = await db.query<RevisionRow>(
    `insert into agent_config_revisions
       (company_id, agent_id, revision_number, source, snapshot, changed_keys, rolled_back_from_revision_id, created_by_user_id, created_by_agent_id)
     values (?, ?, (select coalesce(max(revision_number), 0) + 1 from agent_config_revisions where agent_id = ?), ?, ?::jsonb,
             array(select jsonb_array_elements_text(?::jsonb)), ?, ?, ?)
     returning *`,
    [input.agent.company_id, input.agent.id, input.agent.id, input.source, JSON.stringify(snapshotOf(input.agent)),
      JSON.stringify(input.changedKeys), input.rolledBackFromRevisionId ?? null, input.userId, input.agentId],
  );
  return rows[0]!;
}

export async function listRevisions(db: Queryable, agentId: string): Promise<RevisionRow[]> {
  return db.query<RevisionRow>('select * from agent_config_revisions where agent_id = ? order by revision_number desc', [agentId]);
}

export async function findRevision(db: Queryable, agentId: string, revisionId: string): Promise<RevisionRow | undefined> {
  return db.maybeOne<RevisionRow>('select * from agent_config_revisions where agent_id = ? and id = ?', [agentId, revisionId]);
}

/** Why the agent's current adapter configuration may not run, or null when a board actor wrote or approved it. */
export async function unapprovedConfig(db: Queryable, agentId: string): Promise<string | null> {
  const revision = await db.maybeOne<Row>(
    `select revision_number, created_by_user_id, created_by_agent_id, created_at from agent_config_revisions
      where agent_id = ? and changed_keys && array['adapterType', 'adapterConfig'] and source <> 'instructions'
      order by revision_number desc limit 1`, [agentId]);
  if (!revision) return 'it has no configuration revision a board actor wrote';
  if (revision.created_by_user_id && !revision.created_by_agent_id) return null;
  const approved = await db.maybeOne(
    `select 1 from approvals where subject_agent_id = ? and status = 'approved' and decided_by_user_id is not null and decided_at >= ?
     union all
     select 1 from agent_config_revisions where agent_id = ? and source = 'approval' and revision_number > ?
        and created_by_user_id is not null and created_by_agent_id is null`,
    [agentId, revision.created_at, agentId, revision.revision_number]);
  return approved ? null : `revision ${revision.revision_number} was not written by a board actor and no board approval followed it`;
}
