import type { Readable } from 'node:stream';
import { iso, type Queryable, type Row } from '../db/database.ts';
import { readBlobStream, writeBlobFromBuffer } from '../blobs/blob-store.ts';
import { assetContentPath } from './companies.ts';
import { stripInvisibleCharacters } from '../../sdk/shared/invisible-characters.ts';

/**
 * Stored binary objects of a company (logos today). An asset is the kernel's record of a
 * kernel-owned blob (kernel/blobs/blob-store.ts, migration 0013): the bytes live in the blob
 * store, which several kernel processes sharing one PostgreSQL see alike; a company delete
 * removes them with everything else, and deleting the blob deletes the asset.
 */
export const SVG_TYPE = 'image/svg+xml';

/** Declared upload types accepted for logos; `image/jpg` is a common alias and is stored as image/jpeg. */
export const LOGO_CONTENT_TYPES = ['image/png', 'image/jpeg', 'image/jpg', 'image/webp', 'image/gif', SVG_TYPE] as const;

/** Lower-cases a declared media type and drops parameters (`image/png; charset=x` -> `image/png`). */
export function mediaType(declared: string | undefined): string {
  return (declared ?? '').split(';', 1)[0]!.trim().toLowerCase();
}

export function canonicalImageType(type: string): string {
  return type === 'image/jpg' ? 'image/jpeg' : type;
}

const startsWith = (bytes: Buffer, signature: number[], offset = 0) =>
  bytes.length >= offset + signature.length && signature.every((byte, i) => bytes[offset + i] === byte);
const ascii = (text: string) => [...text].map((c) => c.charCodeAt(0));

/**
 * Whether the bytes really are the raster format they claim to be, judged by the format's
 * signature, so that a file labelled image/png cannot smuggle HTML or a script past the
 * type check. SVG is text and is judged by the sanitiser instead.
 */
export function matchesSignature(type: string, bytes: Buffer): boolean {
  switch (type) {
    case 'image/png': return startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    case 'image/jpeg': return startsWith(bytes, [0xff, 0xd8, 0xff]);
    case 'image/gif': return startsWith(bytes, ascii('GIF87a')) || startsWith(bytes, ascii('GIF89a'));
    case 'image/webp': return startsWith(bytes, ascii('RIFF')) && startsWith(bytes, ascii('WEBP'), 8);
    default: return false;
  }
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

/** Keeps a display name only: no directories, no control, bidi or invisible characters, bounded length. */
export function cleanFilename(name: string | undefined): string | null {
  if (!name) return null;
  // Invisible characters go first, so that none can hide a separator or survive the trim.
  const base = stripInvisibleCharacters(name).split(/[\\/]/).pop() ?? '';
  const cleaned = base.trim().slice(0, 255).toWellFormed().trim();
  return cleaned || null;
}
