import type { Context } from 'koa';
import type { Actor } from '../../auth/actor.ts';
import { KeelError } from '../../http/errors.ts';
import type { RouteResponseManifest } from '../../../sdk/plugin/manifest.ts';
import type { InvokeResult } from '../plugin-process.ts';
import type { RouteEnvelope } from '../protocol/messages.ts';
import { heldKey, type StreamHub, type StreamScope } from '../stream-hub.ts';
import { answerSse, DEFAULT_MAX_STREAMS, sseFrames } from '../sse-connection.ts';

/**
 * Headers a plugin's answer may set. Anything else (set-cookie, CORS, CSP, content-length) is
 * dropped, and so are the x- headers the kernel owns: a plugin must not replace the request id
 * or turn sniffing back on.
 */
const ANSWER_HEADER = /^(x-[a-z0-9-]+|cache-control|etag|location|content-language|content-disposition|mcp-session-id|retry-after)$/i;
const KERNEL_OWNED = new Set(['x-request-id', 'x-content-type-options', 'x-frame-options', 'x-xss-protection', 'x-accel-buffering']);
/** `inline` or `attachment`, with an optional plain quoted file name: nothing a browser could misread. */
const CONTENT_DISPOSITION = /^(inline|attachment)(; ?filename="[\x20-\x21\x23-\x5b\x5d-\x7e]{1,200}")?$/;

/** A respond() envelope, with its body as JSON text (absent when the envelope has none). */
type Envelope = RouteEnvelope & { status?: number; headers?: Record<string, unknown>; stream?: { channel?: unknown } };

/** What a route's answer may be, and where a held stream of it belongs. */
export interface AnswerOptions {
  response?: RouteResponseManifest;
  stream?: { hub: StreamHub; plugin: string; companyId: string | null; actor: Actor };
}

const invalid = (message: string) => new KeelError(502, 'plugin_invalid_response', message, { expose: true });

/**
 * Writes a plugin's answer (or its error) as the kernel answers: JSON by default; a raw text
 * body or server-sent events only where the route declares them (`response` in plugin.json).
 * Errors are always the JSON error body.
 */
export function respond(ctx: Context, result: InvokeResult, successStatus: number, options: AnswerOptions = {}): void {
  if (!result.ok) {
    const error = result.error!;
    const status = error.status >= 400 && error.status <= 599 ? error.status : 500;
    throw new KeelError(status, error.code, error.message, { details: error.details, issues: error.issues, expose: true });
  }
  // The worker took a respond() envelope apart already (worker/wired-answer.ts).
  if (result.envelope) return answerEnvelope(ctx, result.envelope as Envelope, successStatus, options);
  const raw = result.value ?? 'null';
  const rawTypes = options.response?.contentTypes;
  // The worker already parsed and bounded this JSON; a plain answer goes out as the same text,
  // and only what starts like a respond() envelope (or a string on a raw route) is parsed here.
  if (!raw.startsWith('{"$response"')) {
    if (rawTypes && raw.startsWith('"')) return sendRaw(ctx, successStatus, JSON.parse(raw) as string, rawTypes[0]!);
    ctx.status = successStatus;
    ctx.type = 'application/json';
    ctx.body = raw;
    return;
  }
  const value = JSON.parse(raw) as { $response?: unknown };
  const parts = value.$response && typeof value.$response === 'object' && !Array.isArray(value.$response) ? value.$response as Record<string, unknown> : null;
  if (!parts) {
    ctx.status = successStatus;
    ctx.type = 'application/json';
    ctx.body = raw;
    return;
  }
  const { body, ...rest } = parts;
  answerEnvelope(ctx, { ...rest, ...(body === undefined ? {} : { body: JSON.stringify(body) }) } as Envelope, successStatus, options);
}

/** A respond() envelope: its headers, status and content type checked, its body written as the JSON text it is (or as raw text where the route allows). */
function answerEnvelope(ctx: Context, envelope: Envelope, successStatus: number, options: AnswerOptions): void {
  // A proxy answer is served by route-proxy.ts, on routes that declare proxy and hold http.proxy only.
  if (envelope.proxy !== undefined) throw invalid('The plugin answered a proxy on a route that does not declare proxy');
  const rawTypes = options.response?.contentTypes;
  const headers = answerHeaders(envelope.headers, Boolean(rawTypes));
  if (envelope.events !== undefined || envelope.stream !== undefined) return sendEvents(ctx, envelope, headers, options);
  const status = Number.isInteger(envelope.status) && envelope.status! >= 200 && envelope.status! <= 599 ? envelope.status! : successStatus;
  const chosen = headers.contentType;
  if (chosen !== undefined && chosen !== 'application/json' && !rawTypes?.includes(chosen as never)) {
    throw invalid(`The plugin answered with content type ${chosen}, which the route does not declare under response.contentTypes`);
  }
  for (const [name, text] of headers.rest) ctx.set(name, text);
  const bodyText = envelope.body;
  // JSON text that starts with a quote is a string.
  const text = bodyText !== undefined && bodyText.startsWith('"') ? JSON.parse(bodyText) as string : undefined;
  if (text !== undefined && rawTypes && chosen !== 'application/json') return sendRaw(ctx, status, text, chosen ?? rawTypes[0]!);
  if (chosen !== undefined && chosen !== 'application/json') throw invalid(`The plugin answered a ${chosen} body that is not a string`);
  ctx.status = status;
  // MCP and others answer 202 Accepted with no body at all.
  if (bodyText === undefined && (status === 202 || status === 204)) {
    ctx.body = '';
    ctx.remove('Content-Type');
    return;
  }
  // A string body goes out as its characters, unquoted, as it always has; any other is its JSON text.
  ctx.body = bodyText === undefined ? 'null' : text ?? bodyText;
  ctx.type = 'application/json';
}

/** The plugin's headers, checked: values that would split a header refuse the answer; names not allowed are dropped. */
function answerHeaders(given: Record<string, unknown> | undefined, rawRoute: boolean): { contentType?: string; rest: Array<[string, string]> } {
  const rest: Array<[string, string]> = [];
  let contentType: string | undefined;
  if (given === undefined || given === null) return { rest };
  if (typeof given !== 'object' || Array.isArray(given)) throw invalid('The plugin answered headers that are not an object');
  for (const [name, headerValue] of Object.entries(given)) {
    const text = typeof headerValue === 'string' ? headerValue : String(headerValue);
    // A value with control characters would split the header (or make Node throw): the plugin's answer is invalid.
    if (text.length > 8192 || /[^\t\x20-\x7e\x80-\xff]/.test(text)) throw invalid(`The plugin answered with an invalid value for the ${name.slice(0, 64)} header`);
    const lower = name.toLowerCase();
    if (lower === 'content-type') { contentType = text.split(';')[0]!.trim().toLowerCase(); continue; }
    if (!ANSWER_HEADER.test(name) || KERNEL_OWNED.has(lower)) continue;
    if (lower === 'content-disposition' && !(rawRoute && CONTENT_DISPOSITION.test(text))) {
      throw invalid('The plugin answered a Content-Disposition other than inline or attachment with a plain quoted filename, or on a route that declares no raw content type');
    }
    rest.push([name, text]);
  }
  return { contentType, rest };
}

/**
 * A raw text body, with the kernel's framing: the declared type with its charset, the exact
 * length, no sniffing, and a sandboxing CSP so that even a browser that ignored the type could
 * not run it in Keel's origin. Opaque bytes are a download, never shown inline.
 */
function sendRaw(ctx: Context, status: number, text: string, type: string): void {
  ctx.status = status;
  ctx.set('Content-Type', type === 'application/octet-stream' ? type : `${type}; charset=utf-8`);
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Content-Security-Policy', "default-src 'none'; sandbox");
  if (type === 'application/octet-stream') ctx.set('Content-Disposition', 'attachment');
  ctx.body = text;
  ctx.length = Buffer.byteLength(text);
}

/** Server-sent events: one-shot, or held on a channel of the request's own scope. */
function sendEvents(ctx: Context, envelope: Envelope, headers: { contentType?: string; rest: Array<[string, string]> }, options: AnswerOptions): void {
  const stream = options.stream;
  if (options.response?.stream !== 'sse' || !stream) throw invalid("The plugin answered server-sent events on a route that does not declare response.stream 'sse'");
  if (envelope.status !== undefined && envelope.status !== 200) throw invalid('A server-sent event answer has status 200');
  if (headers.contentType !== undefined && headers.contentType !== 'text/event-stream') throw invalid(`The plugin answered events with content type ${headers.contentType}`);
  const frames = sseFrames(envelope.events ?? []);
  let hold;
  if (envelope.stream !== undefined) {
    const channel = envelope.stream && typeof envelope.stream === 'object' ? envelope.stream.channel : undefined;
    if (typeof channel !== 'string' || !/^[a-z][a-z0-9-]{0,63}$/.test(channel)) throw invalid('The plugin answered a stream whose channel is not lower-case letters, digits and dashes');
    // The scope is the request's, never the plugin's choice: a company it serves, or the
    // instance, whose events only instance admins may read (as on the UI bridge).
    const scope: StreamScope = stream.companyId ? { companyId: stream.companyId } : { instance: true };
    if (!stream.companyId && !(stream.actor.kind === 'board' && stream.actor.isInstanceAdmin)) {
      throw new KeelError(403, 'instance_admin_required', 'This stream serves no company: only instance admins may hold it');
    }
    hold = {
      counts: stream.hub.held, key: heldKey(stream.plugin, scope), limit: options.response.maxStreams ?? DEFAULT_MAX_STREAMS,
      subscribe: (write: (frame: string) => void, end: () => void) => stream.hub.subscribe(stream.plugin, scope, channel, (data) => write(`data: ${data}\n\n`), end),
    };
  }
  for (const [name, text] of headers.rest) ctx.set(name, text);
  answerSse(ctx, frames, hold);
}
