import type { Context } from 'koa';
import type { AgentActor, BoardActor } from '../auth/actor.ts';
import { Database, type Queryable, type Row } from '../db/database.ts';
import { notFound } from '../http/errors.ts';
import { assertCompanyAccess } from '../http/guards.ts';
import { isUuid } from '../http/validate.ts';
import { COMPANY_WITH_SPEND } from './month-spend.ts';

/**
 * The company guard of every company route: authentication (401), company scoping (403 for
 * another company) and existence (404), in that order, so that a caller learns nothing
 * about companies it cannot reach. Returns the raw company row.
 */
export async function companyForRequest(ctx: Context, db: Queryable, companyId: string | undefined): Promise<{ actor: BoardActor | AgentActor; company: Row }> {
  if (!isUuid(companyId)) {
    assertCompanyAccess(ctx, String(companyId));
    throw notFound('Company not found');
  }
  const id = companyId.toLowerCase();
  const actor = assertCompanyAccess(ctx, id);
  const company = await readCompany(db, id);
  if (!company) throw notFound('Company not found');
  ctx.state.auditCompanyId = id;
  return { actor, company };
}

/**
 * Outside a transaction company rows come from the read-through cache (evicted by the
 * companies trigger on every change); inside one they are always read from the database.
 * The row carries the month-to-date spend it was read with, which may be older than the
 * company's latest cost event: what shows the spend takes the row through withCurrentSpend.
 */
export async function readCompany(db: Queryable, id: string): Promise<Row | undefined> {
  const cache = db instanceof Database ? db.companyCache : undefined;
  const cached = cache?.get(id);
  // A copy, so that a handler editing its row can never corrupt the cached one.
  if (cached) return { ...cached };
  const stamp = cache?.stamp(id);
  const row = await db.maybeOne(`select ${COMPANY_WITH_SPEND} from companies where id = ?`, [id]);
  if (row && cache && stamp) cache.set(id, { ...row }, stamp);
  return row;
}

/**
 * A row of readCompany with its month-to-date spend as of now, give or take CACHED_SPEND_MS
 * for another process's cost events (db/company-cache.ts): read again only when the cached
 * figure is older than that, or this process carried a cost event since.
 */
export async function withCurrentSpend(db: Queryable, row: Row): Promise<Row> {
  const cache = db instanceof Database ? db.companyCache : undefined;
  if (!cache || cache.spendIsCurrent(row.id)) return row;
  const stamp = cache.stamp(row.id);
  const spend = await db.maybeOne<{ cents: string }>("select keel_private.month_spend(?, 'company', ?) as cents", [row.id, row.id]);
  cache.setSpend(row.id, spend?.cents ?? 0, stamp);
  return { ...row, spent_monthly_cents: spend?.cents ?? 0 };
}
