import type { ParsedLine } from './driver.ts';

/** How much of a tool's output a transcript entry keeps (the run's log keeps all of it). */
export const OUTPUT_LIMIT_BYTES = 8 * 1024;

/** The text cut to its first 8 KiB of UTF-8, never inside a character (no Buffer or TextEncoder: drivers run in an isolate). */
export function cutOutput(text: string): string {
  let bytes = 0;
  let end = 0;
  for (const char of text) {
    const code = char.codePointAt(0)!;
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
    if (bytes > OUTPUT_LIMIT_BYTES) return `${text.slice(0, end)}\n[cut at 8 KiB]`;
    end += char.length;
  }
  return text;
}

/** A structured line the driver does not know: kept as a `log` entry, never dropped. */
export function keptLine(data: Record<string, unknown>): ParsedLine {
  return { transcript: [{ kind: 'log', line: JSON.stringify(data).slice(0, 4_000) }] };
}
