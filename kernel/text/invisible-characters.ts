/**
 * Characters a reader cannot see but that change what text shows or means: C0 and C1 controls,
 * bidirectional controls (an RIGHT-TO-LEFT OVERRIDE turns `invoice_fdp.exe` into what reads as
 * `invoice_exe.pdf`), zero-width and other invisible characters, and the tag block (invisible
 * letters that can carry a hidden text). Names follow the Unicode character names.
 *
 * The SDK side keeps the same list for MCP tool descriptions (sdk/shared/invisible-characters.ts);
 * the two are meant to become one module.
 */
const RANGES: ReadonlyArray<readonly [number, number, string]> = [
  [0x0000, 0x001f, 'C0 CONTROL'],
  [0x007f, 0x007f, 'DELETE'],
  [0x0080, 0x009f, 'C1 CONTROL'],
  [0x00ad, 0x00ad, 'SOFT HYPHEN'],
  [0x061c, 0x061c, 'ARABIC LETTER MARK'],
  [0x180e, 0x180e, 'MONGOLIAN VOWEL SEPARATOR'],
  [0x200b, 0x200b, 'ZERO WIDTH SPACE'],
  [0x200c, 0x200c, 'ZERO WIDTH NON-JOINER'],
  [0x200d, 0x200d, 'ZERO WIDTH JOINER'],
  [0x200e, 0x200e, 'LEFT-TO-RIGHT MARK'],
  [0x200f, 0x200f, 'RIGHT-TO-LEFT MARK'],
  [0x2028, 0x2028, 'LINE SEPARATOR'],
  [0x2029, 0x2029, 'PARAGRAPH SEPARATOR'],
  [0x202a, 0x202a, 'LEFT-TO-RIGHT EMBEDDING'],
  [0x202b, 0x202b, 'RIGHT-TO-LEFT EMBEDDING'],
  [0x202c, 0x202c, 'POP DIRECTIONAL FORMATTING'],
  [0x202d, 0x202d, 'LEFT-TO-RIGHT OVERRIDE'],
  [0x202e, 0x202e, 'RIGHT-TO-LEFT OVERRIDE'],
  [0x2060, 0x2060, 'WORD JOINER'],
  [0x2061, 0x2061, 'FUNCTION APPLICATION'],
  [0x2062, 0x2062, 'INVISIBLE TIMES'],
  [0x2063, 0x2063, 'INVISIBLE SEPARATOR'],
  [0x2064, 0x2064, 'INVISIBLE PLUS'],
  [0x2066, 0x2066, 'LEFT-TO-RIGHT ISOLATE'],
  [0x2067, 0x2067, 'RIGHT-TO-LEFT ISOLATE'],
  [0x2068, 0x2068, 'FIRST STRONG ISOLATE'],
  [0x2069, 0x2069, 'POP DIRECTIONAL ISOLATE'],
  [0xfeff, 0xfeff, 'ZERO WIDTH NO-BREAK SPACE'],
  [0xfff9, 0xfffb, 'INTERLINEAR ANNOTATION CHARACTER'],
  [0xe0000, 0xe007f, 'TAG CHARACTER'],
];

const PATTERN = new RegExp(`[${RANGES.map(([from, to]) => (from === to ? codeEscape(from) : `${codeEscape(from)}-${codeEscape(to)}`)).join('')}]`, 'gu');

function codeEscape(codePoint: number): string {
  return `\\u{${codePoint.toString(16)}}`;
}

export interface InvisibleCharacter { index: number; codePoint: string; name: string }

/** The first invisible character of `text`, named (`U+202E RIGHT-TO-LEFT OVERRIDE`), or undefined. */
export function findInvisibleCharacter(text: string): InvisibleCharacter | undefined {
  PATTERN.lastIndex = 0;
  const match = PATTERN.exec(text);
  if (!match) return undefined;
  const point = match[0].codePointAt(0)!;
  const name = RANGES.find(([from, to]) => point >= from && point <= to)![2];
  return { index: match.index, codePoint: `U+${point.toString(16).toUpperCase().padStart(4, '0')}`, name };
}

/** `text` without its invisible characters, and with lone surrogates replaced (U+FFFD), so that it encodes. */
export function stripInvisibleCharacters(text: string): string {
  return text.toWellFormed().replace(PATTERN, '');
}
