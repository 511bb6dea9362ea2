/**
 * The text a remote run streams, and the result it ends with (docs/api/runtime.md, "Result").
 * Text arrives as deltas: Keel's `run.text` and the reference run servers' `message.delta`,
 * each `{delta: "..."}` (or `{text: "..."}`). The deltas are kept per run in the plugin's table
 * (reports.ts), up to MAX_RESULT_TEXT_BYTES, and become the result `{text}` of a run that
 * completes without an explicit one.
 */

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** Event names whose data is a delta of the run's text. */
export const TEXT_EVENTS = ['run.text', 'message.delta'];
/** At most this much streamed text (UTF-8 bytes) is kept as a run's result; the rest is left out and the result says `truncated`. */
export const MAX_RESULT_TEXT_BYTES = 64 * 1024;

/** The delta of the run's text an event carries, or null. */
export function textDeltaOf(event: string, data: unknown): string | null {
  if (!TEXT_EVENTS.includes(event) || !isObject(data)) return null;
  if (typeof data.delta === 'string') return data.delta;
  if (typeof data.text === 'string') return data.text;
  return null;
}

const utf8Length = (codePoint: number) => (codePoint < 0x80 ? 1 : codePoint < 0x800 ? 2 : codePoint < 0x10000 ? 3 : 4);

/** `kept` with `delta` appended, within MAX_RESULT_TEXT_BYTES (cut at a character, never inside one). */
export function appendText(kept: { text: string; truncated: boolean }, delta: string): { text: string; truncated: boolean } {
  if (kept.truncated || delta.length === 0) return kept;
  let bytes = 0;
  for (const char of kept.text) bytes += utf8Length(char.codePointAt(0)!);
  let text = kept.text;
  for (const char of delta) {
    bytes += utf8Length(char.codePointAt(0)!);
    if (bytes > MAX_RESULT_TEXT_BYTES) return { text, truncated: true };
    text += char;
  }
  return { text, truncated: false };
}

/**
 * The result a run server gave explicitly in an end's data (a terminal event or a status
 * answer): Keel's `result` as it is, or the reference servers' final text `output` as
 * `{text}`; undefined when it gave none.
 */
export function explicitResultOf(data: Record<string, unknown>): unknown {
  if (data.result !== undefined) return data.result;
  if (typeof data.output === 'string' && data.output.length > 0) return { text: data.output };
  return undefined;
}

/** The result of streamed text: `{text}`, with `truncated: true` when text was left out. */
export const streamedResult = (kept: { text: string; truncated: boolean }) => ({ text: kept.text, ...(kept.truncated ? { truncated: true } : {}) });
