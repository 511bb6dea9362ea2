import type { Context } from 'koa';
import { badRequest, payloadTooLarge, unsupportedMediaType } from './errors.ts';

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\b/i;

/**
 * Reads and parses a JSON request body with a byte limit. An absent body yields
 * `undefined`; a body with another content type is refused with 415, malformed JSON with 400
 * and an oversized body with 413 before it is buffered whole.
 */
export async function readJsonBody(ctx: Context, limit: number): Promise<unknown> {
  if (ctx.state.parsedBody !== undefined) return ctx.state.parsedBody.value;
  const declared = ctx.request.length;
  const chunked = ctx.get('transfer-encoding') !== '';
  if (!chunked && (declared === undefined || declared === 0)) {
    ctx.state.parsedBody = { value: undefined };
    return undefined;
  }
  if (declared !== undefined && declared > limit) throw payloadTooLarge(limit);
  const type = ctx.get('content-type');
  if (!JSON_TYPE.test(type)) throw unsupportedMediaType('application/json');
  const raw = await readRaw(ctx, limit);
  if (raw.length === 0) {
    ctx.state.parsedBody = { value: undefined };
    return undefined;
  }
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch (error) {
    throw badRequest(`Malformed JSON body: ${(error as Error).message}`);
  }
  ctx.state.parsedBody = { value };
  return value;
}

export function readRaw(ctx: Context, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    const req = ctx.req;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limit) {
        failed = true;
        reject(payloadTooLarge(limit));
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => { if (!failed) resolve(Buffer.concat(chunks)); });
    req.on('error', (error) => { if (!failed) { failed = true; reject(badRequest(`Could not read request body: ${error.message}`)); } });
  });
}
