import { CapabilityError } from '../../worker/capabilities/types.ts';

/**
 * The arguments of `ctx.http.fetch(url, {method, headers, body, timeoutMs})`, checked and
 * bounded before anything touches the network. Headers that only the host may set (Host,
 * Content-Length, hop-by-hop and proxy headers, content negotiation of the encoding) are
 * dropped: the plugin chooses what to say, not how the connection is made.
 */
export interface FetchRequest {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body: Buffer | null;
  timeoutMs: number | null;
}

export const MAX_URL_LENGTH = 8192;
export const MAX_REQUEST_BODY_BYTES = 1024 * 1024;
const MAX_HEADERS = 64;
const MAX_HEADER_BYTES = 16 * 1024;
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const HOST_CONTROLLED = new Set(['host', 'connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'content-length', 'expect', 'accept-encoding', 'http2-settings']);

const invalid = (message: string) => new CapabilityError(400, 'invalid_request', message);

/**
 * Headers that say how to answer, not who is asking: the only ones a plugin set that follow a
 * redirect to another origin. Anything else may be a credential, whatever its name (an
 * X-Api-Key, a vendor signature, a session header), and was meant for the origin it was sent to.
 */
const PLAIN_HEADERS = new Set(['accept', 'accept-language', 'content-type', 'content-language', 'user-agent', 'cache-control']);

/** The plugin's headers that may go on to another origin after a redirect. */
export function headersForOtherOrigin(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => PLAIN_HEADERS.has(name)));
}

export function isHostControlledHeader(name: string): boolean {
  return HOST_CONTROLLED.has(name) || name.startsWith('proxy-');
}

export function parseFetchArgs(args: unknown[]): FetchRequest {
  const [rawUrl, rawInit] = args;
  if (typeof rawUrl !== 'string' || rawUrl.length === 0) throw new CapabilityError(400, 'invalid_url', 'ctx.http.fetch needs a URL string');
  if (rawUrl.length > MAX_URL_LENGTH) throw new CapabilityError(400, 'invalid_url', `URLs may be at most ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try { url = new URL(rawUrl); } catch { throw new CapabilityError(400, 'invalid_url', 'Not a valid absolute URL'); }
  if (rawInit !== undefined && rawInit !== null && (typeof rawInit !== 'object' || Array.isArray(rawInit))) throw invalid('The fetch options must be an object');
  const init = (rawInit ?? {}) as { method?: unknown; headers?: unknown; body?: unknown; timeoutMs?: unknown };

  const method = init.method === undefined ? 'GET' : typeof init.method === 'string' ? init.method.toUpperCase() : '';
  if (!METHODS.has(method)) throw invalid(`method must be one of ${[...METHODS].join(', ')}`);

  const headers: Record<string, string> = {};
  if (init.headers !== undefined && init.headers !== null) {
    if (typeof init.headers !== 'object' || Array.isArray(init.headers)) throw invalid('headers must be an object of strings');
    const entries = Object.entries(init.headers as Record<string, unknown>);
    if (entries.length > MAX_HEADERS) throw invalid(`at most ${MAX_HEADERS} headers`);
    let bytes = 0;
    for (const [rawName, value] of entries) {
      if (!TOKEN.test(rawName)) throw invalid(`"${rawName.slice(0, 100)}" is not a valid header name`);
      if (typeof value !== 'string') throw invalid(`header ${rawName} must be a string`);
      if (/[\r\n\0]/.test(value)) throw invalid(`header ${rawName} contains a line break or NUL`);
      bytes += rawName.length + value.length;
      const name = rawName.toLowerCase();
      if (!isHostControlledHeader(name)) headers[name] = value;
    }
    if (bytes > MAX_HEADER_BYTES) throw invalid(`headers larger than ${MAX_HEADER_BYTES} bytes`);
  }
  headers['user-agent'] ??= 'keel-plugin-fetch';

  let body: Buffer | null = null;
  if (init.body !== undefined && init.body !== null) {
    if (typeof init.body !== 'string') throw invalid('body must be a string (JSON.stringify objects first)');
    if (method === 'GET' || method === 'HEAD') throw invalid(`a ${method} request cannot have a body`);
    body = Buffer.from(init.body, 'utf8');
    if (body.length > MAX_REQUEST_BODY_BYTES) throw new CapabilityError(413, 'request_too_large', `Request bodies may be at most ${MAX_REQUEST_BODY_BYTES} bytes`);
  }

  let timeoutMs: number | null = null;
  if (init.timeoutMs !== undefined && init.timeoutMs !== null) {
    if (typeof init.timeoutMs !== 'number' || !Number.isInteger(init.timeoutMs) || init.timeoutMs < 1) throw invalid('timeoutMs must be a positive integer');
    timeoutMs = init.timeoutMs;
  }
  return { url, method, headers, body, timeoutMs };
}
