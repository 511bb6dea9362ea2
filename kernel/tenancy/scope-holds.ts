import type { Queryable } from '../db/database.ts';

/**
 * Pauses are holds (migration 0020): a company or agent is paused while any hold is on it, and
 * each holder lifts only its own. Every hold is placed and lifted by keel_private.change_hold
 * (migration 0043), whoever decides it: a plugin in its own transaction, the kernel's archive
 * cascade as holder `kernel`, and the board, here, as holder `operator`, in the transaction
 * that writes the status. The board writes the status first, so its own decisions never have
 * the function change a status; the function keeps scope_holds in step with them.
 */
export type HoldScope = 'company' | 'agent';

/** A status change keel_private.change_hold answers (its `change`), when the first hold paused or the last one resumed. */
export interface HoldChange { from: string; to: string }

/** A hold the board's lift removed: who placed it and why. */
export interface LiftedHold { holder: string; reason: string }

/** The board paused the scope (again, perhaps, for another reason): its hold stays until the board resumes it. */
export async function placeOperatorHold(db: Queryable, companyId: string, scope: HoldScope, scopeId: string, reason: string): Promise<void> {
  await db.query(`select keel_private.change_hold(?::uuid, ?, ?::uuid, 'operator', ?, true)`, [companyId, scope, scopeId, reason]);
}

/**
 * The board's resume (or a status it sets over a pause: terminated, archived, active) is its
 * decision over every hold: all of them go, and the holders are answered (oldest first) for
 * the activity log.
 */
export async function liftAllHolds(db: Queryable, companyId: string, scope: HoldScope, scopeId: string): Promise<LiftedHold[]> {
  const rows = await db.query<{ lifted: LiftedHold[] | null }>(
    `select keel_private.change_hold(?::uuid, ?, ?::uuid, 'operator', null, false) -> 'lifted' as lifted`, [companyId, scope, scopeId]);
  return rows[0]?.lifted ?? [];
}
