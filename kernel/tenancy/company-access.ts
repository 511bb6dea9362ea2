import type { Context } from 'koa';
import type { AgentActor, BoardActor } from '../auth/actor.ts';
import type { Queryable, Row } from '../db/database.ts';
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
  const company = await db.maybeOne('select * from companies where id = ?', [id]);
  if (!company) throw notFound('Company not found');
  ctx.state.auditCompanyId = id;
  return { actor, company };
}
