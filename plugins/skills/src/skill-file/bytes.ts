/**
 * Base64 and UTF-8 without platform APIs (the sandbox has neither Buffer nor TextDecoder): a
 * skill file is text when its bytes are valid UTF-8 without NUL characters (pure).
 */
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const LOOKUP = new Map<string, number>([...ALPHABET].map((char, index) => [char, index]));

export function decodeBase64(text: string): Uint8Array {
  const clean = text.replace(/[\s=]/g, '');
  const out = new Uint8Array(Math.floor((clean.length * 3) / 4));
  let buffer = 0;
  let bits = 0;
  let length = 0;
  for (const char of clean) {
    const value = LOOKUP.get(char);
    if (value === undefined) throw new Error('invalid base64');
    buffer = (buffer << 6) | value;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[length++] = (buffer >> bits) & 0xff;
    }
  }
  return out.subarray(0, length);
}

export function encodeBase64(bytes: Uint8Array): string {
  let out = '';
  for (let index = 0; index < bytes.length; index += 3) {
    const a = bytes[index]!, b = bytes[index + 1], c = bytes[index + 2];
    const triple = (a << 16) | ((b ?? 0) << 8) | (c ?? 0);
    out += ALPHABET[(triple >> 18) & 63]! + ALPHABET[(triple >> 12) & 63]!;
    out += b === undefined ? '=' : ALPHABET[(triple >> 6) & 63]!;
    out += c === undefined ? '=' : ALPHABET[triple & 63]!;
  }
  return out;
}

/** The text of UTF-8 bytes, or null when they are not valid UTF-8 or contain NUL. */
export function utf8Text(bytes: Uint8Array): string | null {
  let out = '';
  let index = 0;
  while (index < bytes.length) {
    const first = bytes[index]!;
    let code: number;
    let extra: number;
    if (first === 0) return null;
    if (first < 0x80) { code = first; extra = 0; }
    else if (first >= 0xc2 && first < 0xe0) { code = first & 0x1f; extra = 1; }
    else if (first >= 0xe0 && first < 0xf0) { code = first & 0x0f; extra = 2; }
    else if (first >= 0xf0 && first < 0xf5) { code = first & 0x07; extra = 3; }
    else return null;
    for (let step = 1; step <= extra; step += 1) {
      const next = bytes[index + step];
      if (next === undefined || (next & 0xc0) !== 0x80) return null;
      code = (code << 6) | (next & 0x3f);
    }
    if ((extra === 2 && (code < 0x800 || (code >= 0xd800 && code <= 0xdfff))) || (extra === 3 && (code < 0x10000 || code > 0x10ffff))) return null;
    out += String.fromCodePoint(code);
    index += extra + 1;
  }
  return out;
}

/** UTF-8 byte length of a string. */
export function utf8Length(text: string): number {
  let length = 0;
  for (const char of text) {
    const code = char.codePointAt(0)!;
    length += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
  }
  return length;
}

/** A decoded string that came through a text channel: refused when it holds NUL or replacement characters. */
export function looksBinary(text: string): boolean {
  return text.includes('\u0000') || text.includes('\uFFFD');
}
