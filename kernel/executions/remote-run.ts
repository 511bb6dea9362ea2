import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import type { RemoteRunFollow } from '../../sdk/capabilities/executions.ts';
import { pinnedLookup, type ResolvedAddress } from '../net/http-exchange.ts';
import type { ExecutionLog } from './execution-log.ts';
import { MAX_RESPONSE_BYTES } from './http-runner.ts';
import { SseParser } from '../http/sse-parser.ts';

/**
 * The remote-run variant of the `http` kind (HttpExecutionInput.remoteRun): the execution's
 * request creates a run on a run server, which is then followed to its end here, in the
 * executor, however long it takes: its event stream, reconnected after `reconnectMs` (with
 * Last-Event-ID), its status polled while the stream is unavailable, its stop asked when the
 * deadline passes or the execution is cancelled. Every request goes to the addresses checked at
 * the start (one origin: every URL is under the configured base).
 */
export interface RemoteRunSpec {
  create: { url: URL; method: string; headers: Record<string, string>; body: Buffer | null };
  follow: Required<Omit<RemoteRunFollow, 'eventsUrl' | 'statusUrl' | 'stopUrl' | 'idField'>> & { eventsUrl: string; statusUrl: string; stopUrl: string; idFields: string[] };
  /** Headers of the follow-up requests (the run server's key, the run token, the session key). */
  headers: Record<string, string>;
  addresses: ResolvedAddress[];
}

/** How to ask for a remote run's stop, stored on the execution (`remote_stop`) once the run server named the run: no secret values. */
export interface RemoteStopRecipe {
  url: string;
  /** The follow-up headers that are not secrets (the run token is left out: it dies with the run). */
  headers: Record<string, string>;
  secretHeaders: Array<{ header: string; configKey: string; scheme?: string }>;
  baseUrlKey: string;
}

export interface RemoteOutcome { httpStatus: number | null; response: unknown; failed: boolean; errorCode: string | null }

const SUCCEEDED = new Set(['succeeded', 'completed']);
const FAILED = new Set(['failed', 'error']);
const CANCELLED = new Set(['cancelled', 'canceled', 'stopped']);
/** How long a request may wait for its answer's headers (the stream's body may then last the run). */
const ANSWER_WAIT_MS = 15_000;
/** Stream and status both unreachable this many times in a row: the run server is gone. */
const MAX_UNREACHABLE = 5;
const STOP_WAIT_MS = 10_000;
/**
 * An open event stream that carries nothing (not even a comment) for twice the reconnect delay,
 * and at least this long, is closed and the status polled before it is opened again: a stream
 * held open by something that no longer delivers must not wait out the deadline.
 */
const MIN_STREAM_IDLE_MS = 1_000;
export const streamIdleMs = (reconnectMs: number) => Math.max(2 * reconnectMs, MIN_STREAM_IDLE_MS);

class Unreachable extends Error {}

interface Answer { status: number; json: unknown; streamed: boolean }

/** One request; an event-stream answer is read to its end through `onEvent`, any other answer whole (JSON when it parses). */
function request(spec: Pick<RemoteRunSpec, 'addresses'>, url: URL, method: string, headers: Record<string, string>, body: Buffer | null, signal: AbortSignal,
  onEvent?: (event: string, data: string, lastEventId: string) => void, idleMs?: number): Promise<Answer> {
  const secure = url.protocol === 'https:';
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const options: https.RequestOptions = {
    protocol: url.protocol, hostname, port: url.port === '' ? (secure ? 443 : 80) : Number(url.port), method, path: `${url.pathname}${url.search}`,
    headers: { ...headers, ...(body ? { 'content-length': String(body.length) } : {}) },
    agent: false, lookup: pinnedLookup(spec.addresses), signal, maxHeaderSize: 64 * 1024,
  };
  if (secure && isIP(hostname) === 0) options.servername = hostname;
  return new Promise<Answer>((resolve, reject) => {
    const wait = setTimeout(() => req.destroy(new Unreachable('no answer')), ANSWER_WAIT_MS);
    const req = (secure ? https : http).request(options, (res) => {
      clearTimeout(wait);
      const status = res.statusCode ?? 0;
      res.setEncoding('utf8');
      if (onEvent && status >= 200 && status < 300 && String(res.headers['content-type'] ?? '').includes('text/event-stream')) {
        const parser = new SseParser(onEvent);
        let idle: NodeJS.Timeout | null = null;
        const quiet = () => {
          if (idle) clearTimeout(idle);
          // Settled as unavailable first: the destroyed stream's own events then change nothing.
          if (idleMs !== undefined) idle = setTimeout(() => { reject(new Unreachable('stream idle')); res.destroy(); }, idleMs);
        };
        quiet();
        res.on('data', (chunk: string) => { quiet(); parser.push(chunk); });
        res.on('close', () => { if (idle) clearTimeout(idle); });
        res.on('end', () => { parser.end(); resolve({ status, json: null, streamed: true }); });
      } else {
        let text = '';
        res.on('data', (chunk: string) => {
          text += chunk;
          if (text.length > MAX_RESPONSE_BYTES) res.destroy(new Unreachable('answer too large'));
        });
        res.on('end', () => {
          let json: unknown = null;
          try { json = text.length > 0 ? JSON.parse(text) : null; } catch { /* not JSON */ }
          resolve({ status, json, streamed: false });
        });
      }
      res.on('error', reject);
      // A stream cut mid-run ends like a stream that ended: the caller reconnects.
      res.on('aborted', () => resolve({ status, json: null, streamed: true }));
    });
    req.on('error', (error) => { clearTimeout(wait); reject(error); });
    req.end(body ?? undefined);
  });
}

const sleep = (ms: number, signal: AbortSignal) => new Promise<void>((resolve) => {
  if (signal.aborted) { resolve(); return; }
  const timer = setTimeout(done, ms);
  function done() { clearTimeout(timer); signal.removeEventListener('abort', done); resolve(); }
  signal.addEventListener('abort', done, { once: true });
});

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** A status value that ends the run, as the execution's outcome; null while it runs. */
function ended(data: unknown, httpStatus: number): RemoteOutcome | null {
  if (!isObject(data) || typeof data.status !== 'string') return null;
  const status = data.status.toLowerCase();
  if (SUCCEEDED.has(status)) return { httpStatus, response: data, failed: false, errorCode: null };
  if (FAILED.has(status)) return { httpStatus, response: data, failed: true, errorCode: 'remote_run_failed' };
  if (CANCELLED.has(status)) return { httpStatus, response: data, failed: true, errorCode: 'remote_run_cancelled' };
  return null;
}

/**
 * The end a terminal event carries: its data's `status`, or, when the data has none, the last
 * part of the event's name (`run.completed`: `completed`), as run servers that name their ends
 * by the event alone send them; the response is the data with that status.
 */
function endedBy(name: string, data: unknown): RemoteOutcome | null {
  if (!isObject(data)) return null;
  if (data.status !== undefined) return ended(data, 200);
  return ended({ ...data, status: name.slice(name.lastIndexOf('.') + 1) }, 200);
}

const parseJson = (text: string): unknown => { try { return JSON.parse(text); } catch { return null; } };

/** The run an answer names: the first of `fields` present in it. */
function runIdOf(json: unknown, fields: string[]): unknown {
  if (!isObject(json)) return undefined;
  return fields.map((field) => json[field]).find((value) => value !== undefined && value !== null);
}

/** What a refused answer means: the run server's error codes for a create or a status read. */
function refusal(status: number, create: boolean): string {
  if (status === 401 || status === 403) return 'remote_auth_failed';
  if (create && (status === 404 || status === 405 || status === 501)) return 'remote_runs_unsupported';
  if (status === 429) return 'remote_rate_limited';
  if (status >= 500) return 'remote_upstream_error';
  return 'remote_protocol_error';
}

const retryable = (status: number) => status === 429 || status >= 500;

/**
 * Creates the run (again on 429, 5xx or no answer: the Idempotency-Key makes a repeat the same
 * run), then follows it until it ends, the deadline passes or the execution is cancelled
 * (`signal`); in the last two cases the run server is asked to stop the run.
 */
/**
 * `claim`: records the remote run as this execution's (its status URL, unique across every
 * execution) with how to stop it; answers false when another execution already follows it.
 */
export type ClaimRemoteRun = (runUrl: URL, stopUrl: URL) => Promise<boolean>;

export async function followRemoteRun(spec: RemoteRunSpec, log: ExecutionLog, signal: AbortSignal, claim: ClaimRemoteRun): Promise<RemoteOutcome> {
  const { follow } = spec;
  let created: Answer | null = null;
  let lastError = 'remote_connection_failed';
  let lastStatus: number | null = null;
  for (let attempt = 1; attempt <= follow.createAttempts && !signal.aborted; attempt += 1) {
    try {
      const answer = await request(spec, spec.create.url, spec.create.method, spec.create.headers, spec.create.body, signal);
      log.line('system', `create: HTTP ${answer.status}`);
      if (answer.status >= 200 && answer.status < 300) { created = answer; break; }
      lastError = refusal(answer.status, true);
      lastStatus = answer.status;
      if (!retryable(answer.status)) return { httpStatus: answer.status, response: null, failed: true, errorCode: lastError };
    } catch {
      if (signal.aborted) break;
      log.line('system', 'create: no answer');
      lastError = 'remote_connection_failed';
      lastStatus = null;
    }
    if (attempt < follow.createAttempts) await sleep(follow.reconnectMs, signal);
  }
  if (!created) return { httpStatus: lastStatus, response: null, failed: true, errorCode: signal.aborted ? null : lastError };
  const id = runIdOf(created.json, follow.idFields);
  if ((typeof id !== 'string' && typeof id !== 'number') || String(id).length === 0 || String(id).length > 200) {
    log.line('system', `create: the answer names no run (${follow.idFields.join(', ')})`);
    return { httpStatus: created.status, response: null, failed: true, errorCode: 'remote_protocol_error' };
  }
  const remoteId = encodeURIComponent(String(id));
  const at = (template: string) => new URL(template.replaceAll('{id}', remoteId));
  // A remote id is this run's only once claimed: a run server that names a run another Keel run
  // (of any company) follows is neither read nor stopped from here. Claimed before anything of
  // it is read, and stored so that whoever marks the execution lost can still ask for the stop.
  if (!(await claim(at(follow.statusUrl), at(follow.stopUrl)))) {
    log.line('system', `the run server named run ${JSON.stringify(String(id).slice(0, 200))}, which another Keel run follows: not followed`);
    return { httpStatus: created.status, response: null, failed: true, errorCode: 'remote_run_id_taken' };
  }
  log.line('system', `remote run ${String(id)}`);
  const immediate = ended(created.json, created.status);
  if (immediate) return immediate;

  let lastEventId = '';
  let unreachable = 0;
  // Set from the stream's callback as well as here.
  const state: { outcome: RemoteOutcome | null } = { outcome: null };
  while (!state.outcome && !signal.aborted) {
    let streamed = false;
    try {
      const headers = { ...spec.headers, accept: 'text/event-stream', ...(lastEventId ? { 'last-event-id': lastEventId } : {}) };
      const answer = await request(spec, at(follow.eventsUrl), 'GET', headers, null, signal, (event, data, eventId) => {
        if (eventId) lastEventId = eventId;
        log.sse(event, data);
        if (state.outcome) return;
        // An event without an `event:` line is named by its data (`data: {"event": "run.completed", ...}`).
        let parsed: unknown = event === 'message' ? parseJson(data) : undefined;
        const name = isObject(parsed) && typeof parsed.event === 'string' ? parsed.event : event;
        if (follow.terminalEvents.includes(name)) {
          if (parsed === undefined) parsed = parseJson(data);
          state.outcome = endedBy(name, parsed);
        }
      }, streamIdleMs(follow.reconnectMs));
      streamed = answer.streamed;
      if (!streamed && (answer.status === 401 || answer.status === 403)) return { httpStatus: answer.status, response: null, failed: true, errorCode: 'remote_auth_failed' };
      if (streamed) { unreachable = 0; if (!state.outcome) log.line('system', `event stream ended; reconnecting in ${follow.reconnectMs} ms`); }
      else log.line('system', `event stream unavailable (HTTP ${answer.status}); polling`);
    } catch (error) {
      if (signal.aborted) break;
      log.line('system', `event stream unavailable (${error instanceof Unreachable ? error.message : 'no connection'}); polling`);
    }
    if (state.outcome || signal.aborted) break;
    if (!streamed) {
      // Polling takes over for one round, then the stream is tried again.
      try {
        const answer = await request(spec, at(follow.statusUrl), 'GET', { ...spec.headers, accept: 'application/json' }, null, signal);
        if (answer.status >= 200 && answer.status < 300) {
          // An answer about another run (its id says so) is not this run's: nothing of it is kept.
          const named = runIdOf(answer.json, follow.idFields);
          if (named !== undefined && String(named) !== String(id)) {
            log.line('system', 'status: the answer names another run; not followed');
            return { httpStatus: answer.status, response: null, failed: true, errorCode: 'remote_protocol_error' };
          }
          unreachable = 0;
          log.sse('status', JSON.stringify(answer.json ?? null));
          state.outcome = ended(answer.json, answer.status);
          if (state.outcome) break;
        } else if (answer.status === 401 || answer.status === 403 || answer.status === 404) {
          return { httpStatus: answer.status, response: null, failed: true, errorCode: answer.status === 404 ? 'remote_protocol_error' : 'remote_auth_failed' };
        } else {
          unreachable += 1;
          lastError = refusal(answer.status, false);
        }
      } catch {
        if (signal.aborted) break;
        unreachable += 1;
        lastError = 'remote_connection_failed';
      }
      if (unreachable >= MAX_UNREACHABLE) {
        log.line('system', `run server unreachable ${unreachable} times in a row`);
        return { httpStatus: null, response: null, failed: true, errorCode: lastError };
      }
    }
    await sleep(follow.reconnectMs, signal);
  }
  if (state.outcome) return state.outcome;
  const stop = await askToStop(spec, at(follow.stopUrl));
  log.line('system', stop === null ? 'stop: no answer' : `stop: HTTP ${stop}`);
  return { httpStatus: null, response: null, failed: true, errorCode: null };
}

/**
 * Asks the run server to stop a run (best effort, bounded): the deadline passed, the execution
 * was cancelled, or the Keel process that followed it died (executor.ts, when it is marked lost).
 * Answers the HTTP status, or null without an answer.
 */
export async function askToStop(target: Pick<RemoteRunSpec, 'headers' | 'addresses'>, url: URL): Promise<number | null> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), STOP_WAIT_MS);
  try {
    const answer = await request(target, url, 'POST', { ...target.headers, 'content-type': 'application/json' }, Buffer.from('{}'), abort.signal);
    return answer.status;
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
  }
}
