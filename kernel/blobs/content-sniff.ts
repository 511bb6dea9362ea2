/**
 * Whether a blob's first bytes look like content a browser would run if it were handed the
 * blob inline and guessed its type: HTML, SVG, XML, or a PDF carrying script. Such a blob is
 * served as an attachment whatever type it was declared with (a text/plain upload, or a part
 * with no type at all, which multipart parsers take for text/plain).
 *
 * Markup follows the WHATWG MIME sniffing signatures, widened: after optional whitespace (and a
 * byte order mark), a `<` followed by a letter, `!`, `?` or `/` counts, which covers
 * `<!DOCTYPE HTML`, `<HTML`, `<SCRIPT`, `<IFRAME`, `<A `, `<!--`, `<?xml`, `<svg` and every
 * other tag; a text that starts with a tag loses nothing by being downloaded.
 */
export const SNIFF_BYTES = 1445;

const MARKUP = /^[\t\n\f\r ]*<[a-z!?/]/i;
const PDF_SCRIPT = /\/(JavaScript|JS|AA|OpenAction|Launch|RichMedia|EmbeddedFile)\b/;

function leadingText(bytes: Buffer): string {
  const head = bytes.subarray(0, SNIFF_BYTES);
  if (head[0] === 0xfe && head[1] === 0xff) {
    const body = Buffer.from(head.subarray(2, 2 + ((head.length - 2) & ~1)));
    return body.swap16().toString('utf16le');
  }
  if (head[0] === 0xff && head[1] === 0xfe) return head.subarray(2).toString('utf16le');
  if (head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf) return head.subarray(3).toString('latin1');
  return head.toString('latin1');
}

/** Markup a browser could render (HTML, SVG, XML), judged from the first bytes. */
export function sniffsAsMarkup(firstBytes: Buffer): boolean {
  return MARKUP.test(leadingText(firstBytes));
}

/** A PDF whose bytes name script or automatic actions (searched in what the caller passes). */
export function sniffsAsScriptedPdf(bytes: Buffer): boolean {
  return bytes.subarray(0, 5).toString('latin1') === '%PDF-' && PDF_SCRIPT.test(bytes.toString('latin1'));
}

/** Longest PDF name searched for, so that a name split across two pieces is still found. */
const PDF_OVERLAP = 16;

/**
 * Sniffs a blob while it is written, piece by piece: markup from its first SNIFF_BYTES, a
 * scripted PDF anywhere in it. `verdict()` is stored with the blob (blobs.active_content).
 */
export class ActiveContentSniffer {
  private head = Buffer.alloc(0);
  private pdf: boolean | undefined;
  private tail = Buffer.alloc(0);
  private scriptedPdf = false;

  feed(piece: Buffer): void {
    if (this.head.length < SNIFF_BYTES) this.head = Buffer.concat([this.head, piece.subarray(0, SNIFF_BYTES - this.head.length)]);
    if (this.pdf === undefined && this.head.length >= 5) this.pdf = this.head.subarray(0, 5).toString('latin1') === '%PDF-';
    if (this.pdf === false || this.scriptedPdf) return;
    const window = Buffer.concat([this.tail, piece]);
    if (PDF_SCRIPT.test(window.toString('latin1'))) this.scriptedPdf = true;
    this.tail = window.subarray(Math.max(0, window.length - PDF_OVERLAP));
  }

  verdict(): boolean {
    return sniffsAsMarkup(this.head) || (this.pdf === true && this.scriptedPdf);
  }
}
