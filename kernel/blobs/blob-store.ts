import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { iso, type Queryable, type Row } from '../db/database.ts';
import { KeelError } from '../http/errors.ts';
import type { BlobHandle } from '../../sdk/capabilities/blobs.ts';

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
 * chunks can reference it), chunks as they fill, size and sha256 at the end. More than
 * `limit` bytes throws 413 naming the limit (the transaction then rolls back everything).
 */
export async function writeBlob(tx: Queryable, blob: NewBlob, source: AsyncIterable<Buffer>, limit: number): Promise<BlobMetadata> {
  const created = await tx.maybeOne<{ id: string }>(
    `insert into blobs (company_id, owner, content_type, byte_size, sha256, filename) values (?, ?, ?, 0, '', ?) returning id`,
    [blob.companyId, blob.owner, blob.contentType, blob.filename]);
  const id = created!.id;
  const hash = createHash('sha256');
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
    if (size > limit) throw blobTooLarge(limit);
    hash.update(piece);
    pending.push(piece);
    pendingBytes += piece.length;
    if (pendingBytes >= CHUNK_BYTES) await flush(false);
  }
  await flush(true);
  const row = await tx.maybeOne(`update blobs set byte_size = ?, sha256 = ? where id = ? returning ${COLUMNS}`, [size, hash.digest('hex'), id]);
  return toBlobMetadata(row!);
}

/** A blob from bytes already in memory (small ones: a sanitised logo, a plugin's text). */
export function writeBlobFromBuffer(tx: Queryable, blob: NewBlob, data: Buffer): Promise<BlobMetadata> {
  return writeBlob(tx, blob, [data] as unknown as AsyncIterable<Buffer>, Number.MAX_SAFE_INTEGER);
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

export async function deleteBlob(db: Queryable, id: string): Promise<boolean> {
  return (await db.exec('delete from blobs where id = ?', [id])) > 0;
}
