import { StringDecoder } from 'node:string_decoder';
import type { CredentialMask } from './credential-mask.ts';

/**
 * Splits a process's output into lines (at \n, \r\n or a lone \r, as readline does) without
 * ever holding more than `holdChars` of one line: the rest of a longer line is only counted
 * (`omittedBytes`), so a single endless line costs the kernel `holdChars` and no more. The
 * decoded text is also handed on whole (`raw`), for the copy of the output kept on disk.
 */
export class LineReader {
  private readonly decoder = new StringDecoder('utf8');
  private readonly holdChars: number;
  private readonly onLine: (text: string, omittedBytes: number) => void;
  private head = '';
  private omitted = 0;
  private afterCr = false;
  private open = false;

  constructor(holdChars: number, onLine: (text: string, omittedBytes: number) => void) {
    this.holdChars = holdChars;
    this.onLine = onLine;
  }

  /** Answers the chunk's decoded text (whole characters only; a split one waits for the next chunk). */
  push(chunk: Buffer): string {
    const text = this.decoder.write(chunk);
    this.take(text);
    return text;
  }

  end(): string {
    const text = this.decoder.end();
    this.take(text);
    if (this.open) this.emit();
    return text;
  }

  private take(text: string): void {
    let from = 0;
    // A \n right after a \r that ended the previous chunk's line ends nothing more.
    if (this.afterCr && text.startsWith('\n')) from = 1;
    this.afterCr = false;
    while (from < text.length) {
      const lf = text.indexOf('\n', from);
      const cr = text.indexOf('\r', from);
      const at = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      if (at === -1) { this.hold(text.slice(from)); break; }
      this.hold(text.slice(from, at));
      this.emit();
      if (text[at] === '\r') {
        if (at + 1 === text.length) this.afterCr = true;
        else if (text[at + 1] === '\n') { from = at + 2; continue; }
      }
      from = at + 1;
    }
  }

  private hold(piece: string): void {
    if (piece.length === 0) return;
    this.open = true;
    const room = this.holdChars - this.head.length;
    if (piece.length <= room) { this.head += piece; return; }
    this.head += piece.slice(0, Math.max(0, room));
    this.omitted += Buffer.byteLength(piece.slice(Math.max(0, room)));
  }

  private emit(): void {
    const { head, omitted } = this;
    this.head = '';
    this.omitted = 0;
    this.open = false;
    this.onLine(head, omitted);
  }
}

/** The character index at which `text` reaches `maxBytes` of UTF-8 (never inside a character). */
export function charIndexAtBytes(text: string, maxBytes: number): number {
  if (text.length * 3 <= maxBytes || Buffer.byteLength(text) <= maxBytes) return text.length;
  const bytes = Buffer.from(text);
  let end = maxBytes;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8').length;
}

/**
 * A line as it is stored: credentials masked, at most `maxBytes` kept, and what was cut said in
 * the line itself ("[line cut: N bytes omitted]", N counting the bytes the reader never held).
 */
export function storedLine(text: string, omittedBytes: number, maxBytes: number, mask: CredentialMask): { line: string; omittedBytes: number } {
  const { masked, end } = mask.prefix(text, charIndexAtBytes(text, maxBytes));
  const omitted = omittedBytes + (end < text.length ? Buffer.byteLength(text.slice(end)) : 0);
  return omitted === 0 ? { line: masked, omittedBytes: 0 } : { line: `${masked} [line cut: ${omitted} bytes omitted]`, omittedBytes: omitted };
}
