import type { Context } from 'koa';
import { badRequest, payloadTooLarge, unsupportedMediaType, validationFailed } from './errors.ts';

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\b/i;

/** Deeper than any configuration needs, shallow enough for every recursive walk and for PostgreSQL's jsonb. */
export const MAX_JSON_DEPTH = 100;

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
  assertStorableJson(value);
  ctx.state.parsedBody = { value };
  return value;
}

/**
 * Refuses, before any route sees them, JSON values that would break further down: nesting
 * beyond MAX_JSON_DEPTH (recursive walks would overflow the stack), NUL characters in strings
 * or keys (PostgreSQL text and jsonb cannot hold them, and neither can an environment
 * variable) and lone UTF-16 surrogates (`"\ud800"` is valid JSON, but jsonb refuses it and
 * text would store U+FFFD instead of what was sent), and numbers JSON.parse cannot hold
 * (`1e309` parses to Infinity, which no column stores and JSON.stringify would turn into null
 * on its way to a plugin). Kernel and plugin routes read bodies here, so both refuse them
 * alike. The walk is iterative, so the check itself cannot overflow.
 */
export function assertStorableJson(root: unknown): void {
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value: root, path: '', depth: 0 }];
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop()!;
    if (typeof value === 'string') {
      const problem = unstorableText(value);
      if (problem) throw unstorable('request body', path || '(body)', problem);
      continue;
    }
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) throw unstorable('request body', path || '(body)', 'infinite');
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) throw badRequest(`Request body nests deeper than ${MAX_JSON_DEPTH} levels`);
    for (const [key, child] of Object.entries(value)) {
      const childPath = path ? `${path}.${key}` : key;
      const problem = unstorableText(key);
      if (problem) throw unstorable('request body', childPath, problem);
      stack.push({ value: child, path: childPath, depth: depth + 1 });
    }
  }
}

/**
 * Refuses NUL characters in query parameters: one cannot even be sent to PostgreSQL as a
 * parameter. (Query strings are decoded leniently, into U+FFFD, so they hold no lone surrogates.)
 */
export function assertStorableQuery(query: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(query)) {
    if ((Array.isArray(value) ? value : [value]).some((item) => typeof item === 'string' && item.includes('\u0000'))) {
      throw unstorable('query', name, 'nul');
    }
  }
}

/**
 * Refuses numbers a query parameter became that no column holds: a schema's number or integer
 * coerces `?limit=1e309` to Infinity, which passes the type check. Called on the query as the
 * route's schema left it (kernel and plugin routes alike).
 */
export function assertFiniteQuery(query: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(query)) {
    if ((Array.isArray(value) ? value : [value]).some((item) => typeof item === 'number' && !Number.isFinite(item))) {
      throw unstorable('query', name, 'infinite');
    }
  }
}

type TextProblem = 'nul' | 'surrogate';
type Problem = TextProblem | 'infinite';

function unstorableText(text: string): TextProblem | undefined {
  if (text.includes('\u0000')) return 'nul';
  if (!text.isWellFormed()) return 'surrogate';
  return undefined;
}

const PROBLEMS: Record<Problem, string> = {
  nul: 'must not contain NUL (\\u0000) characters',
  surrogate: 'must not contain unpaired UTF-16 surrogates (\\ud800-\\udfff)',
  infinite: 'must be a finite number (this one is beyond the range of a 64-bit float)',
};

function unstorable(where: 'request body' | 'query', path: string, problem: Problem) {
  // A key with a lone surrogate is named with U+FFFD in its place: the answer itself stays well-formed.
  const shown = path.toWellFormed();
  const subject = shown === '(body)' ? 'body' : shown;
  return validationFailed(`Invalid ${where}: ${subject} ${PROBLEMS[problem]}`, [{ path: shown, message: PROBLEMS[problem], keyword: problem }]);
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
