import type { Readable } from 'node:stream';
import { iso, type Queryable, type Row } from '../db/database.ts';
import { readBlobStream, writeBlobFromBuffer } from '../blobs/blob-store.ts';
import { assetContentPath } from './companies.ts';

/**
 * Stored binary objects of a company (logos today). An asset is the kernel's record of a
 * kernel-owned blob (kernel/blobs/blob-store.ts, migration 0013): the bytes live in the blob
 * store, which several kernel processes sharing one PostgreSQL see alike; a company delete
 * removes them with everything else, and deleting the blob deletes the asset.
 */
export const SVG_TYPE = 'image/svg+xml';

/** Declared upload types accepted for logos; `image/jpg` is a common alias and is stored as image/jpeg. */
export const LOGO_CONTENT_TYPES = ['image/png', 'image/jpeg', 'image/jpg', 'image/webp', 'image/gif', SVG_TYPE] as const;

export function canonicalImageType(type: string): string {
  return type === 'image/jpg' ? 'image/jpeg' : type;
}

export interface NewAsset {
  companyId: string;
  kind: string;
  contentType: string;
  data: Buffer;
  originalFilename: string | null;
  createdByUserId: string | null;
  createdByAgentId: string | null;
}

const META_COLUMNS = 'id, company_id, kind, content_type, byte_size, sha256, original_filename, created_by_user_id, created_by_agent_id, created_at, blob_id';

/** Writes the bytes to the blob store (owner `kernel`) and the asset row naming them, in the caller's transaction. */
export async function insertAsset(db: Queryable, asset: NewAsset): Promise<Row> {
  const blob = await writeBlobFromBuffer(db, { companyId: asset.companyId, owner: 'kernel', contentType: asset.contentType, filename: asset.originalFilename }, asset.data);
  const row = await db.maybeOne(
    `insert into assets (company_id, kind, content_type, byte_size, sha256, original_filename, blob_id, created_by_user_id, created_by_agent_id)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?)
     returning ${META_COLUMNS}`,
    [asset.companyId, asset.kind, asset.contentType, blob.byteSize, blob.sha256, asset.originalFilename, blob.id, asset.createdByUserId, asset.createdByAgentId]);
  return row!;
}

/** Everything but the bytes. */
export async function findAsset(db: Queryable, id: string): Promise<Row | undefined> {
  return db.maybeOne(`select ${META_COLUMNS} from assets where id = ?`, [id]);
}

/** The asset's bytes, streamed from the blob store. */
export function readAssetStream(db: Queryable, asset: Row): Readable {
  return readBlobStream(db, { id: asset.blob_id, byteSize: Number(asset.byte_size) });
}

/** Deletes the asset's blob; the asset row goes with it (on delete cascade). */
export async function deleteAsset(db: Queryable, id: string, companyId: string): Promise<boolean> {
  return (await db.exec('delete from blobs where id = (select blob_id from assets where id = ? and company_id = ?)', [id, companyId])) > 0;
}

export function toUploadedAsset(row: Row): Record<string, unknown> {
  return {
    assetId: row.id,
    companyId: row.company_id,
    kind: row.kind,
    contentType: row.content_type,
    byteSize: Number(row.byte_size),
    sha256: row.sha256,
    originalFilename: row.original_filename ?? null,
    contentPath: assetContentPath(row.id),
    createdAt: iso(row.created_at),
  };
}
