import type { InvokeMessage, RouteEnvelope } from '../protocol/messages.ts';

/** A successful answer as it goes to the kernel, and the length of its whole JSON text in bytes (for the response size limit). */
export type WiredAnswer = ({ value: string; envelope?: undefined } | { envelope: RouteEnvelope; value?: undefined }) & { bytes: number };

/** Calls whose answer only route-answer.ts's respond() reads: an envelope of theirs may go taken apart. */
const ENVELOPE_KINDS: ReadonlySet<InvokeMessage['kind']> = new Set(['route', 'webhook']);

/** `{"$response": {...}}` with no other key: what the SDK's respond() and sse() produce. */
function envelopeOf(value: unknown): Record<string, unknown> | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const keys = Object.keys(value);
  if (keys.length !== 1 || keys[0] !== '$response') return null;
  const parts = (value as { $response: unknown }).$response;
  return parts !== null && typeof parts === 'object' && !Array.isArray(parts) ? parts as Record<string, unknown> : null;
}

/**
 * A plugin's answer (already parsed from the isolate's JSON and rid of delivered secrets) as
 * it leaves the worker. Plain answers go as JSON text. A route's `respond()` envelope is taken
 * apart here, where it is parsed anyway: its body goes as its own JSON text, which the kernel
 * writes without parsing it again, and its status, headers and events as values, which the
 * kernel checks as before. Anything else that merely starts like an envelope (another key
 * beside `$response`) goes as text and the kernel reads it as it always has.
 */
export function wiredAnswer(kind: InvokeMessage['kind'], value: unknown): WiredAnswer {
  const parts = ENVELOPE_KINDS.has(kind) ? envelopeOf(value) : null;
  if (!parts) {
    const text = JSON.stringify(value);
    return { value: text, bytes: Buffer.byteLength(text) };
  }
  const envelope: RouteEnvelope = {};
  // No prototype: a key named __proto__ in the plugin's envelope is counted like any other.
  const rest: Record<string, unknown> = Object.create(null);
  for (const key of Object.keys(parts)) {
    if (key === 'body') continue;
    rest[key] = parts[key];
    if (key === 'status' || key === 'headers' || key === 'events' || key === 'stream' || key === 'proxy') envelope[key] = parts[key];
  }
  // The size the whole answer's text would have: {"$response":{...rest,"body":<body>}}
  const restText = JSON.stringify(rest);
  let bytes = '{"$response":}'.length + Buffer.byteLength(restText);
  if (Object.hasOwn(parts, 'body')) {
    envelope.body = JSON.stringify(parts.body);
    bytes += '"body":'.length + Buffer.byteLength(envelope.body) + (restText === '{}' ? 0 : 1);
  }
  return { envelope, bytes };
}
