import type { Tx } from '../db/database.ts';
import type { EventActor } from '../events/event-bus.ts';
import type { KernelServices } from '../services.ts';
import type { Assignment, CompanyStatus } from './companies.ts';

/**
 * What a company status change does beyond the status column: archiving stamps archived_at
 * and pauses the company's working agents; leaving `archived` for `active` wakes exactly the
 * agents that the archive paused (pause reason `company_archived`), so agents paused for
 * other reasons stay paused; entering `paused` stamps paused_at.
 */
export const ARCHIVE_PAUSE_REASON = 'company_archived';
const MANUAL_PAUSE_REASON = 'manual';

export function statusColumns(from: CompanyStatus, to: CompanyStatus): Record<string, Assignment> {
  const columns: Record<string, Assignment> = { status: { value: to } };
  if (from === to) return columns;
  if (to === 'archived') columns.archived_at = { sql: 'now()' };
  if (from === 'archived') columns.archived_at = { sql: 'null' };
  if (to === 'paused') {
    columns.paused_at = { sql: 'now()' };
    columns.pause_reason = { value: MANUAL_PAUSE_REASON };
  }
  if (from === 'paused') {
    columns.paused_at = { sql: 'null' };
    columns.pause_reason = { sql: 'null' };
  }
  return columns;
}

export interface StatusSideEffects { pausedAgentIds: string[]; resumedAgentIds: string[] }

export async function applyStatusSideEffects(kernel: KernelServices, tx: Tx, companyId: string, from: CompanyStatus, to: CompanyStatus, actor: EventActor): Promise<StatusSideEffects> {
  const effects: StatusSideEffects = { pausedAgentIds: [], resumedAgentIds: [] };
  if (from === to) return effects;
  if (to === 'archived') effects.pausedAgentIds = await pauseAgentsForArchive(kernel, tx, companyId, actor);
  if (from === 'archived' && to === 'active') effects.resumedAgentIds = await resumeArchivedAgents(kernel, tx, companyId, actor);
  return effects;
}

/** Pauses every agent that is working or able to work; terminated, pending and already paused agents are left alone. */
async function pauseAgentsForArchive(kernel: KernelServices, tx: Tx, companyId: string, actor: EventActor): Promise<string[]> {
  const rows = await tx.query<{ id: string; previous_status: string }>(
    `with targets as (
       select id, status from agents
        where company_id = ? and status not in ('terminated', 'pending_approval', 'paused')
        for update)
     update agents a
        set status = 'paused', pause_reason = ?, paused_at = now(), updated_at = now()
       from targets t
      where a.id = t.id
     returning a.id, t.status as previous_status`, [companyId, ARCHIVE_PAUSE_REASON]);
  for (const row of rows) {
    await kernel.invalidate(tx, { type: 'agent', id: row.id });
    await kernel.events.emit(tx, 'agent.status_changed', { companyId, agentId: row.id, from: row.previous_status, to: 'paused', reason: ARCHIVE_PAUSE_REASON, actor });
  }
  return rows.map((row) => row.id).sort();
}

async function resumeArchivedAgents(kernel: KernelServices, tx: Tx, companyId: string, actor: EventActor): Promise<string[]> {
  const rows = await tx.query<{ id: string }>(
    `update agents set status = 'idle', pause_reason = null, paused_at = null, updated_at = now()
      where company_id = ? and status = 'paused' and pause_reason = ?
     returning id`, [companyId, ARCHIVE_PAUSE_REASON]);
  for (const row of rows) {
    await kernel.invalidate(tx, { type: 'agent', id: row.id });
    await kernel.events.emit(tx, 'agent.status_changed', { companyId, agentId: row.id, from: 'paused', to: 'idle', reason: 'company_reactivated', actor });
  }
  return rows.map((row) => row.id).sort();
}

export interface PurgeResult { agentIds: string[]; userIds: string[]; purgedActivityEntries: number }

/**
 * Removes the company and everything that belongs to it. Foreign keys cascade to agents,
 * keys, memberships, grants, approvals, assets and resource memberships. The activity log
 * refuses deletes except this one purge, which the session setting announces for exactly
 * this company; the company's chain head goes with its entries, so the remaining chains
 * still verify.
 */
export async function purgeCompany(tx: Tx, companyId: string): Promise<PurgeResult> {
  const agents = await tx.query<{ id: string }>('select id from agents where company_id = ?', [companyId]);
  const members = await tx.query<{ principal_id: string }>(
    "select principal_id from company_memberships where company_id = ? and principal_type = 'user'", [companyId]);
  await tx.query("select set_config('keel.activity_purge_company', ?, true)", [companyId]);
  const purged = await tx.query<{ count: string }>(
    'with removed as (delete from activity_log where company_id = ? returning 1) select count(*) as count from removed', [companyId]);
  await tx.exec('delete from activity_chain_heads where chain_key = ?', [companyId]);
  // The security audit trail follows the same rule: append-only except for this purge.
  await tx.exec('delete from security_audit_log where company_id = ?', [companyId]);
  await tx.exec('delete from companies where id = ?', [companyId]);
  return {
    agentIds: agents.map((row) => row.id),
    userIds: members.map((row) => row.principal_id),
    purgedActivityEntries: Number(purged[0]?.count ?? 0),
  };
}
