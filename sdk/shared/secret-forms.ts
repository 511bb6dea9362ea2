/**
 * Finds known secret values in text in the forms they commonly take on the way out: raw,
 * JSON-escaped, base64 and base64url (also inside a longer encoded value, at any of the three
 * byte alignments), hexadecimal in either case, and percent-encoded (URL or form encoding,
 * either case of escape). Where a form is found it is replaced; a text that, once decoded
 * (percent escapes, JSON escapes, base64 or hex runs), still holds a secret, in a mix of forms
 * no replacement caught, is replaced whole. Reversible ciphers of the plugin's own making are
 * not a "common encoding" and are not looked for.
 */
export const REDACTED = '[REDACTED]';

/** Values shorter than this are not looked for: they would match ordinary text. */
export const MIN_SECRET_LENGTH = 4;

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Base64 of `bytes` as it appears inside a longer value, starting `offset` bytes into a 3-byte group. */
function base64Core(bytes: Buffer, offset: number): string {
  const padded = Buffer.concat([Buffer.alloc(offset), bytes]);
  const text = padded.toString('base64');
  // Characters touching the unknown bytes before (offset > 0) and after (an incomplete group) vary.
  const start = offset === 0 ? 0 : offset === 1 ? 2 : 3;
  const end = Math.floor(padded.length / 3) * 4;
  return text.slice(start, end);
}

function percentEncodedForms(value: string): string[] {
  const component = encodeURIComponent(value);
  const every = [...Buffer.from(value, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0').toUpperCase()}`).join('');
  const lower = (text: string) => text.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase());
  return [component, lower(component), component.replaceAll('%20', '+'), every, lower(every), encodeURI(value), escape(value)];
}

/** Every form of one value that is searched for literally; hexadecimal is matched in any case. */
function formsOf(value: string): { literal: string[]; hex: string } {
  const bytes = Buffer.from(value, 'utf8');
  const base64 = [0, 1, 2].map((offset) => base64Core(bytes, offset)).filter((core) => core.length >= MIN_SECRET_LENGTH);
  const urlSafe = base64.map((core) => core.replaceAll('+', '-').replaceAll('/', '_'));
  const json = JSON.stringify(value).slice(1, -1);
  const unicode = [...value].map((char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
  const literal = [...new Set([value, json, unicode, ...base64, ...urlSafe, ...percentEncodedForms(value)])].filter((form) => form.length >= MIN_SECRET_LENGTH);
  return { literal, hex: bytes.toString('hex') };
}

export class SecretMatcher {
  private readonly secrets: Buffer[];
  private readonly values: string[];
  private readonly pattern: RegExp | null;

  constructor(values: Iterable<string>) {
    this.values = [...new Set(values)].filter((value) => value.length >= MIN_SECRET_LENGTH);
    this.secrets = this.values.map((value) => Buffer.from(value, 'utf8'));
    const alternatives: string[] = [];
    for (const value of this.values) {
      const { literal, hex } = formsOf(value);
      alternatives.push(...literal.map(escapeRegExp), `(?:${hex.split('').map((c) => (/[a-f]/.test(c) ? `[${c}${c.toUpperCase()}]` : c)).join('')})`);
    }
    // Longest first, so that a form is replaced whole rather than a shorter form inside it.
    alternatives.sort((a, b) => b.length - a.length);
    this.pattern = alternatives.length ? new RegExp(alternatives.join('|'), 'g') : null;
  }

  get empty(): boolean {
    return this.values.length === 0;
  }

  /** The text with every secret form replaced; replaced whole when a decoded form still holds one. */
  redact(text: string): string {
    if (!this.pattern || text.length < MIN_SECRET_LENGTH) return text;
    const replaced = text.replace(this.pattern, REDACTED);
    return this.decodedHoldsSecret(replaced) ? REDACTED : replaced;
  }

  /** A JSON value with every string and object key redacted. */
  redactValue(value: unknown): unknown {
    if (this.empty) return value;
    if (typeof value === 'string') return this.redact(value);
    if (Array.isArray(value)) return value.map((item) => this.redactValue(item));
    if (value !== null && typeof value === 'object') {
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(value)) out[this.redact(key)] = this.redactValue(item);
      return out;
    }
    return value;
  }

  private holds(bytes: Buffer): boolean {
    return this.secrets.some((secret) => bytes.includes(secret));
  }

  /** Decodings of the text that a mix of forms could hide a secret in. */
  private decodedHoldsSecret(text: string): boolean {
    if (text.includes('%') || text.includes('+')) {
      const percent = text.replace(/%([0-9a-fA-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
      if (this.holds(Buffer.from(percent, 'latin1')) || this.holds(Buffer.from(percent.replaceAll('+', ' '), 'latin1'))) return true;
    }
    if (text.includes('\\')) {
      const unescaped = text.replace(/\\u([0-9a-fA-F]{4})|\\(["\\/bfnrt])/g, (_, code: string | undefined, char: string | undefined) =>
        code ? String.fromCharCode(parseInt(code, 16)) : ({ b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' } as Record<string, string>)[char!] ?? char!);
      if (this.values.some((value) => unescaped.includes(value))) return true;
    }
    for (const run of text.match(/[A-Za-z0-9+/_-]{8,}/g) ?? []) {
      for (let skip = 0; skip < 4; skip++) if (this.holds(Buffer.from(run.slice(skip), 'base64'))) return true;
    }
    for (const run of text.match(/[0-9a-fA-F]{8,}/g) ?? []) {
      if (this.holds(Buffer.from(run, 'hex')) || this.holds(Buffer.from(run.slice(1), 'hex'))) return true;
    }
    return false;
  }
}
