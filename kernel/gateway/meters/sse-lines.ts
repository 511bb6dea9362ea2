/** One server-sent event as the meters read it (`event` null when the event names none). */
export interface SseEvent { event: string | null; data: string }

const LF = 0x0a;
const CR = 0x0d;

/**
 * The end of the last complete event in `bytes` (just after its blank line), or 0: what may be
 * forwarded and metered now, the rest waiting for more bytes. Every spelling of a blank line
 * counts (LF LF, CRLF CRLF, CR CR).
 */
export function eventBoundary(bytes: Buffer): number {
  for (let index = bytes.length - 1; index > 0; index--) {
    const byte = bytes[index];
    if (byte !== LF && byte !== CR) continue;
    const previous = bytes[index - 1];
    if (byte === LF && previous === LF) return index + 1;
    if (byte === CR && previous === CR) return index + 1;
    if (byte === LF && previous === CR && index >= 3 && bytes[index - 2] === LF && bytes[index - 3] === CR) return index + 1;
  }
  return 0;
}

/** A JSON value of an event, or null when it is not JSON (`[DONE]`, a keep-alive). */
export function jsonOf(data: string): Record<string, unknown> | null {
  if (!data.startsWith('{')) return null;
  try {
    const value = JSON.parse(data) as unknown;
    return value && typeof value === 'object' && !Array.isArray(value) ? value as Record<string, unknown> : null;
  } catch {
    return null;
  }
}
