import type { Tx } from '../db/database.ts';
import type { EventActor } from '../events/event-bus.ts';
import type { KernelServices } from '../services.ts';
import type { Assignment, CompanyStatus } from './companies.ts';
import { liftAllHolds, placeOperatorHold, type HoldChange, type LiftedHold } from './scope-holds.ts';

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

export interface StatusSideEffects { pausedAgentIds: string[]; resumedAgentIds: string[]; liftedHolds: LiftedHold[] }

/**
 * Archiving holds the company's agents for the archive; reactivating lifts exactly those holds,
 * so agents held for other reasons (the board's own pause, a budget stop) stay paused. Runs
 * before the company's status is written, so an archive's executions are stopped by their
 * agents' pause first (their cancel reason), as always.
 */
export async function applyStatusSideEffects(kernel: KernelServices, tx: Tx, companyId: string, from: CompanyStatus, to: CompanyStatus, actor: EventActor): Promise<StatusSideEffects> {
  const effects: StatusSideEffects = { pausedAgentIds: [], resumedAgentIds: [], liftedHolds: [] };
  if (from === to) return effects;
  if (to === 'archived') effects.pausedAgentIds = await changeArchiveHolds(kernel, tx, companyId, true, actor);
  if (from === 'archived' && to === 'active') effects.resumedAgentIds = await changeArchiveHolds(kernel, tx, companyId, false, actor);
  return effects;
}

/**
 * The company's own holds after the board wrote its status (scope-holds.ts): pausing the
 * company is the board's hold; setting any other status over a pause lifts every hold of the
 * company. Answers the holds of others than the board that were lifted.
 */
export async function syncBoardCompanyHolds(tx: Tx, companyId: string, from: CompanyStatus, to: CompanyStatus): Promise<LiftedHold[]> {
  if (from === to) return [];
  if (to === 'paused') await placeOperatorHold(tx, companyId, 'company', companyId, MANUAL_PAUSE_REASON);
  else if (from === 'paused') return (await liftAllHolds(tx, companyId, 'company', companyId)).filter((hold) => hold.holder !== 'operator');
  return [];
}

/**
 * Places the archive's hold on every agent that is working or able to work (terminated and
 * pending agents take none), or lifts it from every agent that has it; answers the agents whose
 * status changed.
 */
async function changeArchiveHolds(kernel: KernelServices, tx: Tx, companyId: string, held: boolean, actor: EventActor): Promise<string[]> {
  const targets = held
    ? "select id from agents where company_id = ? and status not in ('terminated', 'pending_approval')"
    : "select scope_id as id from scope_holds where company_id = ? and scope = 'agent' and holder = 'kernel' and reason = ?";
  const rows = await tx.query<{ id: string; change: HoldChange | null }>(
    `select t.id, keel_private.change_hold(?::uuid, 'agent', t.id, 'kernel', ?, ?) -> 'change' as change
       from (${targets} order by id) t`,
    [companyId, ARCHIVE_PAUSE_REASON, held, companyId, ...(held ? [] : [ARCHIVE_PAUSE_REASON])]);
  const changed = rows.filter((row) => row.change !== null);
  for (const { id, change } of changed) {
    await kernel.invalidate(tx, { type: 'agent', id });
    await kernel.events.emit(tx, 'agent.status_changed', {
      companyId, agentId: id, from: change!.from, to: change!.to, reason: held ? ARCHIVE_PAUSE_REASON : 'company_reactivated', actor,
    });
  }
  return changed.map((row) => row.id).sort();
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
