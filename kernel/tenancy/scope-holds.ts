import type { Queryable } from '../db/database.ts';

/**
 * Pauses are holds (migration 0020): a company or agent is paused while any hold is on it, and
 * each holder lifts only its own. Plugins place and lift theirs in their own transaction through
 * keel_private.change_hold (so does the kernel's archive cascade, as holder `kernel`); the
 * kernel's routes record the board's decisions here, in the transaction that writes the status.
 */
export type HoldScope = 'company' | 'agent';

/** A status change keel_private.change_hold answers (its `change`), when the first hold paused or the last one resumed. */
export interface HoldChange { from: string; to: string }

/** The board paused the scope (again, perhaps, for another reason): its hold stays until the board resumes it. */
export async function placeOperatorHold(db: Queryable, companyId: string, scope: HoldScope, scopeId: string, reason: string): Promise<void> {
  await db.exec(
    `insert into scope_holds (company_id, scope, scope_id, holder, reason) values (?, ?, ?, 'operator', ?) on conflict do nothing`,
    [companyId, scope, scopeId, reason]);
}

/**
 * The board's resume (or a status it sets over a pause: terminated, archived, active) is its
 * decision over every hold: all of them go, and the holders are answered for the activity log.
 */
export async function liftAllHolds(db: Queryable, scope: HoldScope, scopeId: string): Promise<Array<{ holder: string; reason: string }>> {
  return db.query<{ holder: string; reason: string }>(
    'delete from scope_holds where scope = ? and scope_id = ? returning holder, reason', [scope, scopeId]);
}
