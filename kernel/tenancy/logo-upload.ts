import busboy from 'busboy';
import type { Context } from 'koa';
import { badRequest, KeelError, unprocessable, unsupportedMediaType } from '../http/errors.ts';
import { matchesSignature, mediaType } from '../blobs/content-types.ts';
import { canonicalImageType, LOGO_CONTENT_TYPES, SVG_TYPE } from './assets.ts';
import { sanitizeSvg } from './svg-sanitizer.ts';

export interface UploadedFile {
  filename: string | undefined;
  declaredType: string;
  data: Buffer;
}

/** Room for multipart boundaries and part headers on top of the file itself. */
const MULTIPART_OVERHEAD = 64 * 1024;

export const fileTooLarge = (limit: number) => new KeelError(413, 'payload_too_large', `File exceeds the upload limit of ${limit} bytes`);

/**
 * Reads the one file part named `field` from a multipart/form-data request, keeping at most
 * `limit` bytes in memory. Other parts are drained and ignored. A request that declares a
 * length far beyond the limit is refused before its body is read.
 */
export async function readSingleFile(ctx: Context, field: string, limit: number): Promise<UploadedFile> {
  if (!/^multipart\/form-data\b/i.test(ctx.get('content-type'))) throw unsupportedMediaType('multipart/form-data');
  const declared = ctx.request.length;
  if (declared !== undefined && declared > limit + MULTIPART_OVERHEAD) throw fileTooLarge(limit);
  let parser: busboy.Busboy;
  try {
    parser = busboy({ headers: ctx.req.headers, limits: { fileSize: limit, files: 5, fields: 20, fieldSize: 64 * 1024, parts: 30 } });
  } catch (error) {
    throw badRequest(`Malformed multipart body: ${(error as Error).message}`);
  }
  return new Promise<UploadedFile>((resolve, reject) => {
    let found: { filename: string | undefined; declaredType: string; chunks: Buffer[] } | undefined;
    let truncated = false;
    let failed = false;
    const fail = (error: KeelError) => {
      if (failed) return;
      failed = true;
      ctx.req.unpipe(parser);
      ctx.req.resume();
      reject(error);
    };
    parser.on('file', (name, stream, info) => {
      // A body that ends inside a part destroys that part's stream with an error as well as
      // the parser: without a listener here it would be thrown from the event loop and end the
      // process. The parser's own 'error' answers the request.
      stream.on('error', (error: Error) => fail(badRequest(`Malformed multipart body: ${error.message}`)));
      if (name !== field || found) { stream.resume(); return; }
      const entry = { filename: info.filename, declaredType: info.mimeType, chunks: [] as Buffer[] };
      found = entry;
      stream.on('data', (chunk: Buffer) => { if (!truncated) entry.chunks.push(chunk); });
      stream.on('limit', () => { truncated = true; entry.chunks.length = 0; });
    });
    parser.on('error', (error: Error) => fail(badRequest(`Malformed multipart body: ${error.message}`)));
    parser.on('close', () => {
      if (failed) return;
      if (truncated) return fail(fileTooLarge(limit));
      if (!found) return fail(badRequest(`Missing file field '${field}'`));
      resolve({ filename: found.filename, declaredType: found.declaredType, data: Buffer.concat(found.chunks) });
    });
    ctx.req.on('error', (error) => fail(badRequest(`Could not read request body: ${error.message}`)));
    ctx.req.pipe(parser);
  });
}

export interface PreparedLogo { contentType: string; data: Buffer; sanitized: boolean }

const ALLOWED_LIST = LOGO_CONTENT_TYPES.join(', ');

/**
 * Decides whether an uploaded file may become a logo: the declared type must be one of the
 * logo types (415 otherwise), the file must not be empty, raster bytes must carry their
 * format's signature, and SVG is replaced by its sanitised form (422 for content that cannot
 * be accepted).
 */
export async function prepareLogo(file: UploadedFile): Promise<PreparedLogo> {
  const declared = mediaType(file.declaredType);
  if (!(LOGO_CONTENT_TYPES as readonly string[]).includes(declared)) {
    throw new KeelError(415, 'unsupported_media_type', `Unsupported image type: ${declared || 'unknown'}; allowed types are ${ALLOWED_LIST}`);
  }
  if (file.data.length === 0) throw unprocessable('Image is empty', undefined, 'empty_image');
  if (declared === SVG_TYPE) {
    const result = await sanitizeSvg(file.data);
    if (!result.ok) throw unprocessable(result.reason, undefined, 'invalid_svg');
    return { contentType: SVG_TYPE, data: result.svg, sanitized: true };
  }
  const contentType = canonicalImageType(declared);
  if (!matchesSignature(contentType, file.data)) {
    throw unprocessable(`File content does not match its declared type ${declared}`, undefined, 'image_type_mismatch');
  }
  return { contentType, data: file.data, sanitized: false };
}
