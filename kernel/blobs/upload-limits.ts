import type { Queryable } from '../db/database.ts';

/**
 * The largest company upload limit an admin may set: 1 TiB, far above any upload Keel
 * streams, and well inside both the bigint column and the integers a double holds exactly.
 */
export const MAX_COMPANY_UPLOAD_LIMIT_BYTES = 2 ** 40;

/**
 * The largest upload a company may make: its own limit (company_upload_limits, set by an
 * instance admin) or else the instance's limits.attachmentBytes; a route's maxBytes caps either.
 */
export async function effectiveUploadLimit(db: Queryable, instanceLimit: number, companyId: string, routeMaxBytes?: number): Promise<number> {
  const row = await db.maybeOne<{ max_bytes: string }>('select max_bytes from company_upload_limits where company_id = ?', [companyId]);
  const companyLimit = row ? Number(row.max_bytes) : instanceLimit;
  return Math.min(routeMaxBytes ?? companyLimit, companyLimit);
}

export async function companyUploadLimit(db: Queryable, companyId: string): Promise<number | null> {
  const row = await db.maybeOne<{ max_bytes: string }>('select max_bytes from company_upload_limits where company_id = ?', [companyId]);
  return row ? Number(row.max_bytes) : null;
}

export async function setCompanyUploadLimit(db: Queryable, companyId: string, maxBytes: number | null): Promise<void> {
  if (maxBytes === null) await db.exec('delete from company_upload_limits where company_id = ?', [companyId]);
  else await db.exec('insert into company_upload_limits (company_id, max_bytes) values (?, ?) on conflict (company_id) do update set max_bytes = excluded.max_bytes, updated_at = now()', [companyId, maxBytes]);
}
