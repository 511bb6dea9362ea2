import { mapStrings } from '../activity/censor.ts';

/** What a credential becomes wherever run output is stored or streamed. */
export const CREDENTIAL_MASK = '***';
/**
 * Values shorter than this are not masked: a three-character "secret" would turn every
 * occurrence of an ordinary word into the mask, and is no credential worth the name.
 */
export const MIN_MASKED_CHARS = 4;

interface Span { start: number; end: number }

/**
 * The live credentials Keel handed to one execution (the run token, the secrets resolved into
 * its environment, the secret header values sent to its run server), masked in everything the
 * execution's output becomes: log lines, structured outputs and their events, the answer that
 * becomes resultJson. Each value is looked for as it is and in the forms output commonly
 * carries it in: JSON-escaped (a value inside a JSON line) and URL-encoded.
 */
export class CredentialMask {
  private needles: string[] = [];

  constructor(values: Iterable<string> = []) {
    for (const value of values) this.add(value);
  }

  /** The longest form looked for: a stream that keeps this many characters back never cuts one in two. */
  get longest(): number {
    return this.needles[0]?.length ?? 0;
  }

  add(value: string): void {
    if (value.length < MIN_MASKED_CHARS) return;
    const forms = new Set([value, JSON.stringify(value).slice(1, -1), encodeURIComponent(value)]);
    for (const form of forms) if (!this.needles.includes(form)) this.needles.push(form);
    // Longest first: a value that contains another is masked whole.
    this.needles.sort((a, b) => b.length - a.length);
  }

  /** `text` with every credential masked. */
  text(text: string): string {
    return this.prefix(text, text.length).masked;
  }

  /** A JSON value with every credential masked, in keys as in values. */
  value<T>(value: T): T {
    return this.needles.length === 0 ? value : mapStrings(value, (text) => this.text(text), true) as T;
  }

  /**
   * The masked text up to `cut` (a character index), where a credential that starts before
   * `cut` and ends after it is masked whole: `end` is where the original text was consumed to
   * (at least `cut`). A cut never leaves a credential's first part in what is kept.
   */
  prefix(text: string, cut: number): { masked: string; end: number } {
    const spans = this.spans(text);
    let end = cut;
    let masked = '';
    let at = 0;
    for (const span of spans) {
      if (span.start >= end) break;
      masked += text.slice(at, span.start) + CREDENTIAL_MASK;
      at = span.end;
      if (span.end > end) end = span.end;
    }
    masked += text.slice(at, Math.max(at, end));
    return { masked, end };
  }

  /** Non-overlapping occurrences, leftmost first, the longest at a position. */
  private spans(text: string): Span[] {
    if (this.needles.length === 0) return [];
    const found: Span[] = [];
    for (const needle of this.needles) {
      for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1)) found.push({ start: at, end: at + needle.length });
    }
    found.sort((a, b) => a.start - b.start || b.end - a.end);
    const spans: Span[] = [];
    for (const span of found) if (spans.length === 0 || span.start >= spans.at(-1)!.end) spans.push(span);
    return spans;
  }
}

/** Header names that carry a credential whatever sets them (`idempotency-key` names a request, not a secret). */
const CREDENTIAL_HEADER = /^(authorization|proxy-authorization|cookie)$|(^|-)(api-?key|key|token|secret|password|passwd|auth|session)($|-)/;
const NOT_A_CREDENTIAL = new Set(['idempotency-key']);

/**
 * The credentials among headers a run's request carries besides the kernel's own (the plugin's
 * and the agent's configured headers): values of headers named like credentials, and the part
 * after a scheme ("Bearer <value>").
 */
export function credentialHeaderValues(headers: Record<string, string>): string[] {
  const values: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (NOT_A_CREDENTIAL.has(lower) || !CREDENTIAL_HEADER.test(lower)) continue;
    values.push(value);
    const scheme = /^[A-Za-z][A-Za-z0-9-]*\s+(.+)$/.exec(value);
    if (scheme) values.push(scheme[1]!);
  }
  return values;
}

/**
 * Masks a text that arrives in chunks (a process's raw output on its way to disk): the last
 * `longest - 1` characters are held back until the next chunk shows whether a credential
 * continues there, so that a credential split across chunks is still masked.
 */
export class MaskingStream {
  private carry = '';
  private readonly mask: CredentialMask;

  constructor(mask: CredentialMask) {
    this.mask = mask;
  }

  push(chunk: string): string {
    const text = this.carry + chunk;
    const hold = Math.max(0, this.mask.longest - 1);
    const { masked, end } = this.mask.prefix(text, Math.max(0, text.length - hold));
    this.carry = text.slice(end);
    return masked;
  }

  end(): string {
    const rest = this.mask.text(this.carry);
    this.carry = '';
    return rest;
  }
}
