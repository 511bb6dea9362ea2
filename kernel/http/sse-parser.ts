/** The longest line of an event stream that is read; a longer one is dropped whole (its field says so). */
export const MAX_SSE_LINE_CHARS = 1024 * 1024;

/**
 * Server-Sent Events framing (text/event-stream): `event:`, `data:` and `id:` fields, dispatched
 * at a blank line with the last event id seen so far (what a reconnect sends as Last-Event-ID).
 * A line never grows past MAX_SSE_LINE_CHARS in memory: a longer one is skipped to its end and
 * replaced by its field name with "[line cut: N bytes omitted]" (nothing of it is kept, so no
 * part of a credential in it can be).
 */
export class SseParser {
  private buffer = '';
  /** Bytes of the current line skipped so far (it is too long), or 0. */
  private skipped = 0;
  private skippedField = '';
  private event = '';
  private data: string[] = [];
  private lastId = '';
  private readonly dispatch: (event: string, data: string, lastEventId: string) => void;

  constructor(dispatch: (event: string, data: string, lastEventId: string) => void) {
    this.dispatch = dispatch;
  }

  push(chunk: string): void {
    if (this.skipped > 0) {
      const newline = chunk.search(/\r\n|\n|\r/);
      if (newline === -1) { this.skipped += Buffer.byteLength(chunk); return; }
      this.skipped += Buffer.byteLength(chunk.slice(0, newline));
      this.field(`${this.skippedField}: [line cut: ${this.skipped} bytes omitted]`);
      this.skipped = 0;
      chunk = chunk.slice(newline + (chunk.startsWith('\r\n', newline) ? 2 : 1));
    }
    this.buffer += chunk;
    for (;;) {
      const newline = this.buffer.search(/\r\n|\n|\r/);
      if (newline === -1) {
        if (this.buffer.length > MAX_SSE_LINE_CHARS) {
          const colon = this.buffer.indexOf(':');
          this.skippedField = colon === -1 || colon > 100 ? 'data' : this.buffer.slice(0, colon);
          this.skipped = Buffer.byteLength(this.buffer);
          this.buffer = '';
        }
        break;
      }
      const line = this.buffer.slice(0, newline);
      this.buffer = this.buffer.slice(newline + (this.buffer.startsWith('\r\n', newline) ? 2 : 1));
      this.field(line);
    }
  }

  end(): void {
    if (this.skipped > 0) this.field(`${this.skippedField}: [line cut: ${this.skipped} bytes omitted]`);
    this.skipped = 0;
    if (this.buffer.length > 0) this.field(this.buffer);
    this.buffer = '';
    this.field('');
  }

  private field(line: string): void {
    if (line === '') {
      if (this.data.length > 0) this.dispatch(this.event || 'message', this.data.join('\n'), this.lastId);
      this.event = '';
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (name === 'event') this.event = value;
    else if (name === 'data') this.data.push(value);
    else if (name === 'id' && !value.includes('\0')) this.lastId = value;
  }
}
