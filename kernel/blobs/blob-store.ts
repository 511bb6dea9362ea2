import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { iso, type Queryable, type Row } from '../db/database.ts';
import { KeelError } from '../http/errors.ts';
import type { BlobHandle } from '../../sdk/capabilities/blobs.ts';
import { blobRoom, chargeBlob, type BlobQuota } from './blob-quota.ts';
import { ActiveContentSniffer, sniffsAsMarkup, sniffsAsScriptedPdf } from './content-sniff.ts';

/**
 * The blob store (kernel migration 0013): bytes in PostgreSQL, in chunks of CHUNK_BYTES, so
 * that writing and reading hold one chunk (or a few) in memory, never the whole blob. Blobs are
 * immutable once written; they are removed with their company, or by their owner.
 */
export const CHUNK_BYTES = 256 * 1024;
/** Chunks read per query while streaming a download. */
const CHUNKS_PER_READ = 4;

/** A blob's metadata: the handle plugins receive (the SDK's type, so the two cannot drift). */
export type BlobMetadata = BlobHandle;

export interface NewBlob { companyId: string; owner: string; contentType: string; filename: string | null }

/**
 * What a new blob must stay within: `maxBytes` (its upload limit) and, when given, the blob
 * quotas (limits.blobQuota), checked before the first byte is read and again when it is charged.
 * The kernel's own assets pass no quota: they are counted, bounded by their upload limit.
 */
export interface BlobLimits { maxBytes: number; quota?: BlobQuota; declaredBytes?: number }

export const blobTooLarge = (limit: number) => new KeelError(413, 'payload_too_large', `File exceeds the upload limit of ${limit} bytes`, { details: { limitBytes: limit } });

const COLUMNS = 'id, company_id, owner, content_type, byte_size, sha256, filename, created_at';

export function toBlobMetadata(row: Row): BlobMetadata {
  return {
    id: row.id, companyId: row.company_id, owner: row.owner, contentType: row.content_type, byteSize: Number(row.byte_size),
    sha256: row.sha256, filename: row.filename ?? null, createdAt: iso(row.created_at)!,
  };
}

/**
 * Writes a blob from a stream of buffers inside the caller's transaction: the row first (so
 * chunks can reference it), chunks as they fill, size, sha256 and the sniffed verdict at the
 * end, then the charge against the quotas. More than `maxBytes` throws 413 payload_too_large,
 * more than the quotas leave 413 blob_quota_exceeded (the transaction then rolls back everything).
 */
export async function writeBlob(tx: Queryable, blob: NewBlob, source: AsyncIterable<Buffer>, limits: BlobLimits): Promise<BlobMetadata> {
  // The room left is read before the first byte, so that a blob that cannot fit is refused unread.
  let room = limits.quota ? await blobRoom(tx, limits.quota, blob.companyId, blob.owner, limits.declaredBytes) : Number.MAX_SAFE_INTEGER;
  const created = await tx.maybeOne<{ id: string }>(
    `insert into blobs (company_id, owner, content_type, byte_size, sha256, filename) values (?, ?, ?, 0, '', ?) returning id`,
    [blob.companyId, blob.owner, blob.contentType, blob.filename]);
  const id = created!.id;
  const hash = createHash('sha256');
  const sniffer = new ActiveContentSniffer();
  let size = 0;
  let seq = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const flush = async (all: boolean) => {
    while (pendingBytes >= CHUNK_BYTES || (all && pendingBytes > 0)) {
      const joined = Buffer.concat(pending, pendingBytes);
      const chunk = joined.subarray(0, Math.min(CHUNK_BYTES, joined.length));
      const rest = joined.subarray(chunk.length);
      pending = rest.length ? [rest] : [];
      pendingBytes = rest.length;
      await tx.exec('insert into blob_chunks (blob_id, seq, data) values (?, ?, ?)', [id, seq++, chunk]);
    }
  };
  for await (const piece of source) {
    size += piece.length;
    if (size > limits.maxBytes) throw blobTooLarge(limits.maxBytes);
    // Past the room read at the start: refused unless blobs deleted since have made more.
    if (size > room) room = await blobRoom(tx, limits.quota!, blob.companyId, blob.owner, size);
    hash.update(piece);
    sniffer.feed(piece);
    pending.push(piece);
    pendingBytes += piece.length;
    if (pendingBytes >= CHUNK_BYTES) await flush(false);
  }
  await flush(true);
  const row = await tx.maybeOne(`update blobs set byte_size = ?, sha256 = ?, active_content = ? where id = ? returning ${COLUMNS}`, [size, hash.digest('hex'), sniffer.verdict(), id]);
  await chargeBlob(tx, limits.quota, blob.companyId, blob.owner, size);
  return toBlobMetadata(row!);
}

/**
 * A blob from bytes already in memory (small ones: a sanitised logo, a plugin's text); the
 * caller has bounded their size.
 */
export function writeBlobFromBuffer(tx: Queryable, blob: NewBlob, data: Buffer, quota?: BlobQuota): Promise<BlobMetadata> {
  return writeBlob(tx, blob, [data] as unknown as AsyncIterable<Buffer>, { maxBytes: Number.MAX_SAFE_INTEGER, quota, declaredBytes: data.length });
}

export async function findBlob(db: Queryable, id: string): Promise<BlobMetadata | undefined> {
  const row = await db.maybeOne(`select ${COLUMNS} from blobs where id = ?`, [id]);
  return row ? toBlobMetadata(row) : undefined;
}

/**
 * The blob's bytes as a stream, read CHUNKS_PER_READ chunks per query. A blob deleted while it
 * streams ends the stream with an error (the response is cut short of its Content-Length).
 */
export function readBlobStream(db: Queryable, blob: Pick<BlobMetadata, 'id' | 'byteSize'>): Readable {
  const chunks = Math.ceil(blob.byteSize / CHUNK_BYTES);
  async function* read() {
    for (let from = 0; from < chunks; from += CHUNKS_PER_READ) {
      const rows = await db.query<{ data: Buffer }>('select data from blob_chunks where blob_id = ? and seq >= ? and seq < ? order by seq', [blob.id, from, from + CHUNKS_PER_READ]);
      const expected = Math.min(CHUNKS_PER_READ, chunks - from);
      if (rows.length !== expected) throw new Error(`blob ${blob.id} lost chunks while streaming`);
      for (const row of rows) yield row.data;
    }
  }
  return Readable.from(read(), { objectMode: false });
}

/** The whole blob in memory: for small blobs only (callers bound byteSize first). */
export async function readBlobBuffer(db: Queryable, id: string): Promise<Buffer> {
  const rows = await db.query<{ data: Buffer }>('select data from blob_chunks where blob_id = ? order by seq', [id]);
  return Buffer.concat(rows.map((row) => row.data));
}

/**
 * Whether the blob's content sniffs as something a browser would run (content-sniff.ts): the
 * verdict stored when it was written, or, for a blob written before verdicts were stored, its
 * first chunk sniffed now.
 */
export async function blobIsActiveContent(db: Queryable, id: string): Promise<boolean> {
  const row = await db.maybeOne<{ active_content: boolean | null }>('select active_content from blobs where id = ?', [id]);
  if (!row) return false;
  if (row.active_content !== null) return row.active_content;
  const first = await db.maybeOne<{ data: Buffer }>('select data from blob_chunks where blob_id = ? and seq = 0', [id]);
  return first ? sniffsAsMarkup(first.data) || sniffsAsScriptedPdf(first.data) : false;
}

export async function deleteBlob(db: Queryable, id: string): Promise<boolean> {
  return (await db.exec('delete from blobs where id = ?', [id])) > 0;
}
