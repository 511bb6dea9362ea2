import type { InvokeMessage, RouteEnvelope, WireError } from '../protocol/messages.ts';
import { jsonTooDeep, MAX_JSON_DEPTH } from './json-bounds.ts';

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
export function wiredAnswer(kind: InvokeMessage['kind'], value: unknown, valueText?: string): WiredAnswer {
  const parts = ENVELOPE_KINDS.has(kind) ? envelopeOf(value) : null;
  if (!parts) {
    // The value's own text, when the caller has it (readResult): it goes on without a second encoding.
    const text = valueText ?? JSON.stringify(value);
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

/** The isolate's answer, read: `text` is the value's own JSON text when it may go on as it is. */
export interface PluginResult { ok: boolean; v?: unknown; e?: unknown; text?: string }

/** How the SDK runtime writes a successful answer: `{"ok":true,"v":<value>}`. */
const OK_PREFIX = '{"ok":true,"v":';

const blank = (code: number) => code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;

/**
 * Reads the text the plugin handed to `__keel_host.done`, which hostile code may have written
 * itself. Bounded in depth first (text scan). An answer in the SDK's own shape has its value's
 * text parsed on its own: that checks it is one JSON value (so the whole is exactly the SDK's
 * shape: no second `v`, nothing after it), and the text itself is what goes to the kernel and
 * on to the client, without a second encoding. Anything else is parsed whole as before.
 */
export function readResult(resultJson: string): PluginResult {
  if (jsonTooDeep(resultJson)) return { ok: false, e: { status: 502, code: 'plugin_result_too_deep', message: `Plugin result nested deeper than ${MAX_JSON_DEPTH} levels` } satisfies WireError };
  const invalid: PluginResult = { ok: false, e: { status: 500, code: 'plugin_error', message: 'Plugin produced no valid result' } satisfies WireError };
  if (resultJson.startsWith(OK_PREFIX) && resultJson.endsWith('}')) {
    const text = resultJson.slice(OK_PREFIX.length, -1);
    // Blanks around the value would change what the kernel sees at the start of an answer (a raw string, an envelope).
    if (text.length > 0 && !blank(text.charCodeAt(0)) && !blank(text.charCodeAt(text.length - 1))) {
      try { return { ok: true, v: JSON.parse(text) as unknown, text }; } catch { return invalid; }
    }
  }
  let parsed: PluginResult | null;
  try { parsed = JSON.parse(resultJson) as PluginResult | null; } catch { return invalid; }
  // `v` is always present in an answer the SDK wrote: a result without it would silently be null.
  if (parsed?.ok === true && (typeof parsed !== 'object' || !Object.hasOwn(parsed, 'v'))) {
    return { ok: false, e: { status: 500, code: 'unserializable_result', message: 'Plugin result is not plain JSON: the answer carries no value' } satisfies WireError };
  }
  if (parsed === null || typeof parsed !== 'object') return { ok: false, e: undefined };
  // Only what the answer says: a `text` of the plugin's own is not taken.
  return { ok: parsed.ok === true, v: parsed.v, e: parsed.e };
}
