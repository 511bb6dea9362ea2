import type { KeelConfig } from '../config/schema.ts';
import type { Queryable } from '../db/database.ts';
import { KeelError } from '../http/errors.ts';

/**
 * Blob quotas: a company's blobs and bytes, all owners together and per owner (a plugin, or
 * the kernel's own assets), counted in `blob_usage` (kernel migration 0034). A new blob is
 * checked twice: against the room left before its bytes are read (so an upload or a text past
 * the quota is refused without reading it), and atomically when it is charged at the end of its
 * transaction (the upsert locks the usage rows, so concurrent writers, in any Keel process,
 * are serialised there and cannot jointly pass a quota). Deletes give the room back (a trigger).
 */
export interface BlobQuota { companyBlobs: number; companyBytes: number; pluginBlobs: number; pluginBytes: number }

export const DEFAULT_BLOB_QUOTA: BlobQuota = { companyBlobs: 10_000, companyBytes: 4 * 1024 ** 3, pluginBlobs: 2_000, pluginBytes: 1024 ** 3 };

export function blobQuota(config: Pick<KeelConfig, 'limits'>): BlobQuota {
  return { ...DEFAULT_BLOB_QUOTA, ...config.limits.blobQuota };
}

/** The company's total is kept in the row of this owner; no plugin key or 'kernel' can be '*'. */
const COMPANY_TOTAL = '*';

type Limit = keyof BlobQuota;

export function blobQuotaExceeded(limit: Limit, value: number, used: number, owner: string): KeelError {
  const scope = limit.startsWith('company') ? 'this company' : `${owner} in this company`;
  const what = limit.endsWith('Blobs') ? `${value} blobs` : `${value} bytes`;
  return new KeelError(413, 'blob_quota_exceeded',
    `The blob quota of ${scope} (${what}, ${used} used) does not leave room for this blob; delete blobs, or raise limits.blobQuota.${limit} in the instance configuration`,
    { details: { limit: `limits.blobQuota.${limit}`, limitValue: value, used } });
}

interface Usage { blobs: number; bytes: number }

async function usageOf(db: Queryable, companyId: string, owner: string): Promise<Usage> {
  const row = await db.maybeOne<{ blob_count: string; byte_count: string }>('select blob_count, byte_count from blob_usage where company_id = ? and owner = ?', [companyId, owner]);
  return { blobs: Number(row?.blob_count ?? 0), bytes: Number(row?.byte_count ?? 0) };
}

/**
 * The bytes one more blob of `owner` may have, read before its bytes are: refuses at once (413
 * blob_quota_exceeded) when no blob fits any more, or when `declaredBytes` (a known length)
 * does not fit. A concurrent writer may still take the room; the charge decides.
 */
export async function blobRoom(db: Queryable, quota: BlobQuota, companyId: string, owner: string, declaredBytes = 0): Promise<number> {
  const company = await usageOf(db, companyId, COMPANY_TOTAL);
  const own = await usageOf(db, companyId, owner);
  assertWithin(quota, owner, company, own, 1, declaredBytes);
  return Math.min(quota.companyBytes - company.bytes, quota.pluginBytes - own.bytes);
}

/**
 * Adds a written blob to the usage rows inside its transaction and refuses it when a quota is
 * passed (the transaction then rolls the blob back). Without a quota the blob is counted only:
 * the kernel's own assets, bounded by their upload limit.
 */
export async function chargeBlob(tx: Queryable, quota: BlobQuota | undefined, companyId: string, owner: string, bytes: number): Promise<void> {
  // The company's row first, then the owner's: the order every writer and the release trigger take them in.
  const charge = async (rowOwner: string) => {
    const row = await tx.maybeOne<{ blob_count: string; byte_count: string }>(
      `insert into blob_usage (company_id, owner, blob_count, byte_count) values (?, ?, 1, ?)
         on conflict (company_id, owner) do update set blob_count = blob_usage.blob_count + 1, byte_count = blob_usage.byte_count + excluded.byte_count
         returning blob_count, byte_count`, [companyId, rowOwner, bytes]);
    return { blobs: Number(row!.blob_count), bytes: Number(row!.byte_count) };
  };
  const company = await charge(COMPANY_TOTAL);
  const own = await charge(owner);
  if (quota) assertWithin(quota, owner, { blobs: company.blobs - 1, bytes: company.bytes - bytes }, { blobs: own.blobs - 1, bytes: own.bytes - bytes }, 1, bytes);
}

function assertWithin(quota: BlobQuota, owner: string, company: Usage, own: Usage, blobs: number, bytes: number): void {
  if (company.blobs + blobs > quota.companyBlobs) throw blobQuotaExceeded('companyBlobs', quota.companyBlobs, company.blobs, owner);
  if (own.blobs + blobs > quota.pluginBlobs) throw blobQuotaExceeded('pluginBlobs', quota.pluginBlobs, own.blobs, owner);
  if (company.bytes + bytes > quota.companyBytes) throw blobQuotaExceeded('companyBytes', quota.companyBytes, company.bytes, owner);
  if (own.bytes + bytes > quota.pluginBytes) throw blobQuotaExceeded('pluginBytes', quota.pluginBytes, own.bytes, owner);
}
