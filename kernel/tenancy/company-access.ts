import type { Context } from 'koa';
import type { AgentActor, BoardActor } from '../auth/actor.ts';
import { Database, type Queryable, type Row } from '../db/database.ts';
import { notFound } from '../http/errors.ts';
import { assertCompanyAccess } from '../http/guards.ts';
import { isUuid } from '../http/validate.ts';

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
 */
export async function readCompany(db: Queryable, id: string): Promise<Row | undefined> {
  const cache = db instanceof Database ? db.companyCache : undefined;
  const cached = cache?.get(id);
  // A copy, so that a handler editing its row can never corrupt the cached one.
  if (cached) return { ...cached };
  const since = cache?.epoch();
  const row = await db.maybeOne('select * from companies where id = ?', [id]);
  if (row && cache) cache.set(id, { ...row }, since);
  return row;
}
