import type { ServerResponse } from 'node:http';
import type { CallEnd } from './proxied-calls.ts';

/** How much of a provider's answer a summary reads for its error message. */
const KEPT_BYTES = 64 * 1024;
const MESSAGE_CHARS = 500;

/**
 * What the client of a `answer: 'summary'` proxy gets instead of the provider's answer: a board
 * testing a provider wants to know whether the call worked, how long it took and why not, never
 * the provider's bytes. `latencyMs`: from sending the request to the end of the provider's answer.
 */
export interface ProxySummary { ok: boolean; status: number | null; latencyMs: number; error: string | null }

/** Collects the start of an answer (for the provider's error message) without forwarding it. */
export class SummaryBody {
  private readonly chunks: Buffer[] = [];
  private kept = 0;

  add(chunk: Buffer): void {
    if (this.kept >= KEPT_BYTES) return;
    const part = chunk.subarray(0, KEPT_BYTES - this.kept);
    this.chunks.push(part);
    this.kept += part.length;
  }

  text(): string { return Buffer.concat(this.chunks).toString('utf8'); }
}

/**
 * The provider's own words for a refused call: `error.message` of the Anthropic, OpenAI and
 * Gemini error shapes (or a plain string `error`), else the start of the body; credentials
 * masked (a provider may echo part of a key back).
 */
export function providerMessage(body: string, mask: (text: string) => string): string | null {
  let message: unknown = null;
  try {
    const parsed = JSON.parse(body) as { error?: unknown; message?: unknown };
    const error = parsed?.error;
    message = error && typeof error === 'object' ? (error as { message?: unknown }).message : error ?? parsed?.message;
  } catch { /* not JSON: the text itself */ }
  const text = typeof message === 'string' && message ? message : body.trim();
  return text ? mask(text).slice(0, MESSAGE_CHARS) : null;
}

export function summaryOf(end: CallEnd, latencyMs: number, body: string, mask: (text: string) => string): ProxySummary {
  const ok = end.status === 'completed' && end.httpStatus !== null && end.httpStatus < 400;
  if (ok) return { ok, status: end.httpStatus, latencyMs, error: null };
  const said = end.httpStatus !== null && end.httpStatus >= 400 ? providerMessage(body, mask) : null;
  const error = end.httpStatus !== null && end.httpStatus >= 400
    ? `The provider answered ${end.httpStatus}${said ? `: ${said}` : ''}`
    : `No complete answer from the provider (${end.status.replace('_', ' ')})`;
  return { ok, status: end.httpStatus, latencyMs, error };
}

/** Writes a summary as the route's JSON answer (when the client is still there). */
export function sendSummary(res: ServerResponse, summary: ProxySummary): void {
  if (res.destroyed || res.writableEnded) return;
  const text = JSON.stringify(summary);
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
  res.end(text);
}
