import type { Context } from 'koa';
import { KeelError } from '../http/errors.ts';
import type { ServerSentEvent } from '../../sdk/plugin/answers.ts';

/** A comment line that keeps proxies and load balancers from closing an idle stream. */
export const SSE_HEARTBEAT_MS = 15_000;
/**
 * A client that does not read: once this much is queued on its socket, it is dropped rather than
 * buffered without end (a plugin publishing faster than a client reads cannot grow the kernel).
 */
export const SSE_MAX_QUEUED_BYTES = 1024 * 1024;
/** Held streams of one plugin in one company (or the instance) on this process, unless the route declares fewer. */
export const DEFAULT_MAX_STREAMS = 20;

const EVENT_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const EVENT_ID = /^[\x21-\x7e]{1,128}$/;

/** Held streams per `plugin/scope`, on one process: each is a socket that process keeps open. */
export type HeldStreams = Map<string, number>;

/**
 * One event in the SSE wire form. The data is JSON on one line (JSON escapes CR and LF inside
 * strings), and the name and id are checked, so no field can start another field or event.
 */
export function sseFrame(event: ServerSentEvent): string {
  if (event.event !== undefined && !(typeof event.event === 'string' && EVENT_NAME.test(event.event))) {
    throw new KeelError(502, 'plugin_invalid_response', 'The plugin answered an event whose name is not 1-64 letters, digits, ".", "_" or "-"', { expose: true });
  }
  if (event.id !== undefined && !(typeof event.id === 'string' && EVENT_ID.test(event.id))) {
    throw new KeelError(502, 'plugin_invalid_response', 'The plugin answered an event whose id is not 1-128 visible ASCII characters', { expose: true });
  }
  return `${event.id !== undefined ? `id: ${event.id}\n` : ''}${event.event !== undefined ? `event: ${event.event}\n` : ''}data: ${JSON.stringify(event.data ?? null)}\n\n`;
}

/** The events of an answer, already framed, so that an invalid one refuses the answer before its head is written. */
export function sseFrames(events: unknown): string {
  if (!Array.isArray(events)) throw new KeelError(502, 'plugin_invalid_response', 'The plugin answered events that are not an array', { expose: true });
  return events.map((event) => {
    if (!event || typeof event !== 'object' || Array.isArray(event)) throw new KeelError(502, 'plugin_invalid_response', 'The plugin answered an event that is not an object', { expose: true });
    return sseFrame(event as ServerSentEvent);
  }).join('');
}

export interface SseHold {
  /** The process's counts (StreamHub.held), and the key (`plugin/scope`) this stream counts against while held. */
  counts: HeldStreams;
  key: string;
  limit: number;
  /** Starts relaying; returns what stops it. Called once the head is written; `end` closes the stream (its plugin stopped). */
  subscribe: (write: (frame: string) => void, end: () => void) => () => void;
}

/**
 * Answers a request with server-sent events: the head, the framed events of the answer, then
 * either the end (one-shot) or a held connection that relays a subscription with heartbeats until
 * the client leaves. The kernel's own headers win over any the plugin set: the content type,
 * no caching, no sniffing, no proxy buffering. A held stream over its limit is refused with 429
 * before anything is written, as a JSON error.
 */
export function answerSse(ctx: Context, frames: string, hold?: SseHold): void {
  if (hold && (hold.counts.get(hold.key) ?? 0) >= hold.limit) {
    throw new KeelError(429, 'stream_limit_reached', `This plugin already holds ${hold.limit} streams for this company on this server; close one or try again later`, { details: { limit: hold.limit } });
  }
  ctx.state.skipAudit = true;
  ctx.respond = false;
  const res = ctx.res;
  res.statusCode = 200;
  res.setHeader('content-type', 'text/event-stream; charset=utf-8');
  res.setHeader('cache-control', 'no-store');
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('x-accel-buffering', 'no');
  res.removeHeader('content-length');
  if (ctx.method === 'HEAD') { res.end(); return; }
  if (!hold) { res.end(frames); return; }
  ctx.req.socket.setTimeout(0);
  ctx.req.socket.setKeepAlive(true);
  res.setHeader('connection', 'keep-alive');
  res.flushHeaders();
  const { counts, key } = hold;
  counts.set(key, (counts.get(key) ?? 0) + 1);
  let closed = false;
  const write = (frame: string) => {
    if (closed || res.writableEnded) return;
    if (res.writableLength > SSE_MAX_QUEUED_BYTES) { res.destroy(); return; }
    res.write(frame);
  };
  // Ended by the server: what was written still reaches the client, then the response ends.
  const end = () => { if (!closed && !res.writableEnded) res.end(); };
  const unsubscribe = hold.subscribe(write, end);
  if (frames) write(frames);
  const heartbeat = setInterval(() => write(': keep-alive\n\n'), SSE_HEARTBEAT_MS);
  heartbeat.unref();
  res.on('close', () => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    unsubscribe();
    const left = (counts.get(key) ?? 1) - 1;
    if (left > 0) counts.set(key, left); else counts.delete(key);
  });
}
