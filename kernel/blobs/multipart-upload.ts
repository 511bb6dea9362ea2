import busboy from 'busboy';
import type { Context } from 'koa';
import type { Database } from '../db/database.ts';
import { badRequest, KeelError, unsupportedMediaType } from '../http/errors.ts';
import { mediaType } from './content-types.ts';
import { cleanFilename } from './file-names.ts';
import { blobTooLarge, writeBlob, type BlobMetadata } from './blob-store.ts';
import { blobRoom, type BlobQuota } from './blob-quota.ts';
import { allowedType, contradictsDeclaredType } from './content-types.ts';

/** Room for boundaries and part headers on top of the file itself. */
const MULTIPART_OVERHEAD = 64 * 1024;

export interface UploadRules { companyId: string; owner: string; field: string; limit: number; contentTypes: readonly string[]; deadlineMs: number; quota: BlobQuota }

/**
 * Checks what can be checked before the body is read: a multipart request, and a declared
 * length within the limit. The error handler discards the unread body before answering.
 */
export function assertUploadHeaders(ctx: Context, limit: number): void {
  if (!/^multipart\/form-data\b/i.test(ctx.get('content-type'))) throw unsupportedMediaType('multipart/form-data');
  const declared = ctx.request.length;
  if (declared !== undefined && declared > limit + MULTIPART_OVERHEAD) throw blobTooLarge(limit);
}

/** The fewest bytes the file part can have, by the declared length: what the quota must still hold. */
function leastFileBytes(ctx: Context): number {
  const declared = ctx.request.length;
  return declared === undefined ? 0 : Math.max(0, declared - MULTIPART_OVERHEAD);
}

/**
 * Streams the one file part named `field` into the blob store, in one transaction: the part's
 * declared type must be on the allow-list (and match its bytes for signed raster types), the
 * bytes are counted against the limit and hashed as they pass, and the whole upload must end
 * before the deadline (408 otherwise). Nothing is stored unless all of it succeeds.
 */
export async function streamUpload(ctx: Context, db: Database, rules: UploadRules): Promise<BlobMetadata> {
  assertUploadHeaders(ctx, rules.limit);
  // A company or plugin out of room is refused before the body is read.
  await blobRoom(db, rules.quota, rules.companyId, rules.owner, leastFileBytes(ctx));
  let parser: busboy.Busboy;
  try {
    parser = busboy({ headers: ctx.req.headers, limits: { files: 1, fields: 20, fieldSize: 8 * 1024, parts: 30 } });
  } catch (error) {
    throw badRequest(`Malformed multipart body: ${(error as Error).message}`);
  }
  let timer: NodeJS.Timeout | undefined;
  // Ends the part's stream, so that a transaction still waiting for bytes rolls back.
  let abort = () => undefined as void;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => abort() ?? reject(new KeelError(408, 'upload_timeout', `The upload did not finish within ${Math.round(rules.deadlineMs / 1000)} s`)), rules.deadlineMs);
  });
  const stored = new Promise<BlobMetadata>((resolve, reject) => {
    let seen = false;
    let writing = false;
    parser.on('file', (name, stream, info) => {
      // Once the store reads the part, its own failure (413, 415, 408) is the answer; a stream
      // error that the store's refusal caused is not.
      stream.on('error', (error: Error) => { if (!writing) reject(badRequest(`Malformed multipart body: ${error.message}`)); });
      if (name !== rules.field || seen) { stream.resume(); return; }
      seen = true;
      const declared = mediaType(info.mimeType);
      if (!allowedType(declared, rules.contentTypes)) {
        stream.resume();
        reject(new KeelError(415, 'unsupported_media_type', `Unsupported file type: ${declared || 'unknown'}; allowed types are ${rules.contentTypes.join(', ')}`));
        return;
      }
      abort = () => { stream.destroy(new Error('upload deadline passed')); };
      writing = true;
      const source = checkedSource(stream, declared);
      const blob = { companyId: rules.companyId, owner: rules.owner, contentType: declared, filename: cleanFilename(info.filename) };
      db.transaction((tx) => writeBlob(tx, blob, source, { maxBytes: rules.limit, quota: rules.quota, declaredBytes: leastFileBytes(ctx) }))
        .then(resolve, (error: unknown) => {
          stream.resume();
          // A body that breaks off inside the part fails the part's stream: the client's fault.
          reject(!(error instanceof KeelError) && stream.errored ? badRequest(`Malformed multipart body: ${(error as Error).message}`) : error);
        });
    });
    parser.on('error', (error: Error) => writing || reject(badRequest(`Malformed multipart body: ${error.message}`)));
    parser.on('close', () => { if (!seen) reject(badRequest(`Missing file field '${rules.field}'`)); });
    ctx.req.on('error', (error) => reject(badRequest(`Could not read request body: ${error.message}`)));
  });
  ctx.req.pipe(parser);
  try {
    return await Promise.race([stored, deadline]);
  } finally {
    clearTimeout(timer);
    // Whatever is left (after a refusal) is read and discarded by the error handler.
    ctx.req.unpipe(parser);
  }
}

/** The part's bytes, refusing at the first chunk a signed raster type whose bytes are something else. */
async function* checkedSource(stream: AsyncIterable<Buffer>, declared: string): AsyncIterable<Buffer> {
  let first = true;
  for await (const chunk of stream) {
    if (first && contradictsDeclaredType(declared, chunk)) {
      throw new KeelError(415, 'blob_type_mismatch', `File content does not match its declared type ${declared}`);
    }
    first = false;
    yield chunk;
  }
}
