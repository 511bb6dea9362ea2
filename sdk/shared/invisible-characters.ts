/**
 * Characters a reader does not see but a model (or a terminal, or a browser's bidi algorithm)
 * acts on: Unicode tag characters that spell hidden ASCII, bidi controls that reorder what is
 * shown, zero-width and other invisible characters, and control characters. Text that is shown
 * to agents or people as written (a tool's description, a file name) must not carry them: a
 * tool description with `U+E0049 U+E0047 ...` reads as a harmless sentence and carries a hidden
 * instruction, and `invoice\u202Efdp.exe` shows as `invoiceexe.pdf`.
 *
 * One list, used wherever such text is accepted: the manifest's tool texts
 * (sdk/manifest/tool-text.ts), blob file names (kernel/tenancy/assets.ts cleanFilename, which
 * strips them), and any other name or text that is shown as written.
 */

/** The first refused character of a text: where it is, its code point as `U+XXXX`, and its Unicode name. */
export interface InvisibleCharacter {
  /** Index in the string (UTF-16 code units), for pointing at it. */
  index: number;
  codePoint: number;
  /** `U+202E`, `U+E0041`. */
  hex: string;
  /** `RIGHT-TO-LEFT OVERRIDE`, `TAG LATIN CAPITAL LETTER A`. */
  name: string;
}

export interface InvisibleCharacterOptions {
  /**
   * Whether LINE FEED (U+000A) and CHARACTER TABULATION (U+0009) are allowed, as in a
   * description of several lines (the default). A name (a file name, a key) passes false,
   * which refuses LINE SEPARATOR and PARAGRAPH SEPARATOR (U+2028, U+2029) as well.
   */
  allowLineBreaks?: boolean;
}

const NAMED: Readonly<Record<number, string>> = {
  0x00ad: 'SOFT HYPHEN',
  0x061c: 'ARABIC LETTER MARK',
  0x180e: 'MONGOLIAN VOWEL SEPARATOR',
  0x200b: 'ZERO WIDTH SPACE',
  0x200c: 'ZERO WIDTH NON-JOINER',
  0x200d: 'ZERO WIDTH JOINER',
  0x200e: 'LEFT-TO-RIGHT MARK',
  0x200f: 'RIGHT-TO-LEFT MARK',
  0x202a: 'LEFT-TO-RIGHT EMBEDDING',
  0x202b: 'RIGHT-TO-LEFT EMBEDDING',
  0x202c: 'POP DIRECTIONAL FORMATTING',
  0x202d: 'LEFT-TO-RIGHT OVERRIDE',
  0x202e: 'RIGHT-TO-LEFT OVERRIDE',
  0x2060: 'WORD JOINER',
  0x2061: 'FUNCTION APPLICATION',
  0x2062: 'INVISIBLE TIMES',
  0x2063: 'INVISIBLE SEPARATOR',
  0x2064: 'INVISIBLE PLUS',
  0x2066: 'LEFT-TO-RIGHT ISOLATE',
  0x2067: 'RIGHT-TO-LEFT ISOLATE',
  0x2068: 'FIRST STRONG ISOLATE',
  0x2069: 'POP DIRECTIONAL ISOLATE',
  0xfeff: 'ZERO WIDTH NO-BREAK SPACE',
  0xe0001: 'LANGUAGE TAG',
  0xe007f: 'CANCEL TAG',
};

/** Names (Unicode aliases) of the C0 controls U+0000..U+001F. */
const C0 = [
  'NULL', 'START OF HEADING', 'START OF TEXT', 'END OF TEXT', 'END OF TRANSMISSION', 'ENQUIRY', 'ACKNOWLEDGE', 'BELL',
  'BACKSPACE', 'CHARACTER TABULATION', 'LINE FEED', 'LINE TABULATION', 'FORM FEED', 'CARRIAGE RETURN', 'SHIFT OUT', 'SHIFT IN',
  'DATA LINK ESCAPE', 'DEVICE CONTROL ONE', 'DEVICE CONTROL TWO', 'DEVICE CONTROL THREE', 'DEVICE CONTROL FOUR', 'NEGATIVE ACKNOWLEDGE', 'SYNCHRONOUS IDLE', 'END OF TRANSMISSION BLOCK',
  'CANCEL', 'END OF MEDIUM', 'SUBSTITUTE', 'ESCAPE', 'INFORMATION SEPARATOR FOUR', 'INFORMATION SEPARATOR THREE', 'INFORMATION SEPARATOR TWO', 'INFORMATION SEPARATOR ONE',
];

/** Names (Unicode aliases) of the C1 controls U+0080..U+009F. */
const C1 = [
  'PADDING CHARACTER', 'HIGH OCTET PRESET', 'BREAK PERMITTED HERE', 'NO BREAK HERE', 'INDEX', 'NEXT LINE', 'START OF SELECTED AREA', 'END OF SELECTED AREA',
  'CHARACTER TABULATION SET', 'CHARACTER TABULATION WITH JUSTIFICATION', 'LINE TABULATION SET', 'PARTIAL LINE FORWARD', 'PARTIAL LINE BACKWARD', 'REVERSE LINE FEED', 'SINGLE SHIFT TWO', 'SINGLE SHIFT THREE',
  'DEVICE CONTROL STRING', 'PRIVATE USE ONE', 'PRIVATE USE TWO', 'SET TRANSMIT STATE', 'CANCEL CHARACTER', 'MESSAGE WAITING', 'START OF GUARDED AREA', 'END OF GUARDED AREA',
  'START OF STRING', 'SINGLE GRAPHIC CHARACTER INTRODUCER', 'SINGLE CHARACTER INTRODUCER', 'CONTROL SEQUENCE INTRODUCER', 'STRING TERMINATOR', 'OPERATING SYSTEM COMMAND', 'PRIVACY MESSAGE', 'APPLICATION PROGRAM COMMAND',
];

/** Names of the printable ASCII punctuation U+0020..U+007E that are not letters or digits (a tag character is "TAG" + one of them). */
const ASCII_PUNCTUATION: Readonly<Record<string, string>> = {
  ' ': 'SPACE', '!': 'EXCLAMATION MARK', '"': 'QUOTATION MARK', '#': 'NUMBER SIGN', '$': 'DOLLAR SIGN', '%': 'PERCENT SIGN', '&': 'AMPERSAND',
  "'": 'APOSTROPHE', '(': 'LEFT PARENTHESIS', ')': 'RIGHT PARENTHESIS', '*': 'ASTERISK', '+': 'PLUS SIGN', ',': 'COMMA', '-': 'HYPHEN-MINUS',
  '.': 'FULL STOP', '/': 'SOLIDUS', ':': 'COLON', ';': 'SEMICOLON', '<': 'LESS-THAN SIGN', '=': 'EQUALS SIGN', '>': 'GREATER-THAN SIGN',
  '?': 'QUESTION MARK', '@': 'COMMERCIAL AT', '[': 'LEFT SQUARE BRACKET', '\\': 'REVERSE SOLIDUS', ']': 'RIGHT SQUARE BRACKET', '^': 'CIRCUMFLEX ACCENT',
  _: 'LOW LINE', '`': 'GRAVE ACCENT', '{': 'LEFT CURLY BRACKET', '|': 'VERTICAL LINE', '}': 'RIGHT CURLY BRACKET', '~': 'TILDE',
};
const DIGITS = ['ZERO', 'ONE', 'TWO', 'THREE', 'FOUR', 'FIVE', 'SIX', 'SEVEN', 'EIGHT', 'NINE'];

function asciiName(char: string): string {
  if (/[A-Z]/.test(char)) return `LATIN CAPITAL LETTER ${char}`;
  if (/[a-z]/.test(char)) return `LATIN SMALL LETTER ${char.toUpperCase()}`;
  if (/[0-9]/.test(char)) return `DIGIT ${DIGITS[Number(char)]}`;
  return ASCII_PUNCTUATION[char]!;
}

/** The Unicode name of a refused code point, or null when the code point is allowed. */
function refusedName(cp: number, allowLineBreaks: boolean): string | null {
  if (cp < 0x20) return (cp === 0x0a || cp === 0x09) && allowLineBreaks ? null : C0[cp]!;
  if (cp === 0x2028 || cp === 0x2029) return allowLineBreaks ? null : cp === 0x2028 ? 'LINE SEPARATOR' : 'PARAGRAPH SEPARATOR';
  if (cp === 0x7f) return 'DELETE';
  if (cp >= 0x80 && cp <= 0x9f) return C1[cp - 0x80]!;
  const named = NAMED[cp];
  if (named) return named;
  // The tag block: U+E0020..U+E007E mirror printable ASCII invisibly; the rest is reserved.
  if (cp >= 0xe0020 && cp <= 0xe007e) return `TAG ${asciiName(String.fromCharCode(cp - 0xe0000))}`;
  if (cp >= 0xe0000 && cp <= 0xe007f) return 'UNASSIGNED TAG CHARACTER';
  // Variation selectors 17-256 carry no glyph and smuggle bytes the same way tag characters do.
  if (cp >= 0xe0100 && cp <= 0xe01ef) return `VARIATION SELECTOR-${cp - 0xe0100 + 17}`;
  return null;
}

/** `U+202E`: at least four hex digits, upper case. */
export function codePointHex(cp: number): string {
  return `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
}

/**
 * The first invisible, bidi or control character of `text` (the Unicode tag block
 * U+E0000-U+E007F, bidi controls U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C,
 * zero-width and invisible characters U+200B-U+200D, U+2060-U+2064, U+FEFF, U+180E, U+00AD,
 * variation selectors U+E0100-U+E01EF, and C0/C1 controls other than line feed and tab), or
 * null when it has none.
 */
export function findInvisibleCharacter(text: string, options: InvisibleCharacterOptions = {}): InvisibleCharacter | null {
  const allowLineBreaks = options.allowLineBreaks ?? true;
  for (let index = 0; index < text.length; index++) {
    const cp = text.codePointAt(index)!;
    const name = refusedName(cp, allowLineBreaks);
    if (name) return { index, codePoint: cp, hex: codePointHex(cp), name };
    if (cp > 0xffff) index++;
  }
  return null;
}

/** `contains U+202E (RIGHT-TO-LEFT OVERRIDE)`: the words every refusal uses. */
export function describeInvisibleCharacter(found: InvisibleCharacter): string {
  return `contains ${found.hex} (${found.name})`;
}

/**
 * `text` without any of the characters findInvisibleCharacter refuses in a name (line breaks
 * included), and with lone surrogates replaced by U+FFFD so that it encodes: for names taken
 * from outside, where dropping them is friendlier than refusing the upload (a file name).
 */
export function stripInvisibleCharacters(text: string): string {
  let kept = '';
  const wellFormed = text.toWellFormed();
  for (let index = 0; index < wellFormed.length; index++) {
    const cp = wellFormed.codePointAt(index)!;
    const wide = cp > 0xffff;
    if (!refusedName(cp, false)) kept += wide ? wellFormed.slice(index, index + 2) : wellFormed[index];
    if (wide) index++;
  }
  return kept;
}
