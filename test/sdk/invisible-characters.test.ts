import { describe, expect, it } from 'vitest';
import { findInvisibleCharacter } from '../../sdk/shared/invisible-characters.ts';

const at = (cp: number, text = `a${String.fromCodePoint(cp)}b`) => findInvisibleCharacter(text);

describe('findInvisibleCharacter', () => {
  it('finds every refused range, with its code point and Unicode name', () => {
    const cases: Array<[number, string]> = [
      [0xe0000, 'UNASSIGNED TAG CHARACTER'], [0xe0001, 'LANGUAGE TAG'], [0xe0020, 'TAG SPACE'], [0xe0041, 'TAG LATIN CAPITAL LETTER A'],
      [0xe0061, 'TAG LATIN SMALL LETTER A'], [0xe0030, 'TAG DIGIT ZERO'], [0xe007e, 'TAG TILDE'], [0xe007f, 'CANCEL TAG'],
      [0x202a, 'LEFT-TO-RIGHT EMBEDDING'], [0x202e, 'RIGHT-TO-LEFT OVERRIDE'], [0x2066, 'LEFT-TO-RIGHT ISOLATE'], [0x2069, 'POP DIRECTIONAL ISOLATE'],
      [0x200e, 'LEFT-TO-RIGHT MARK'], [0x200f, 'RIGHT-TO-LEFT MARK'], [0x061c, 'ARABIC LETTER MARK'],
      [0x200b, 'ZERO WIDTH SPACE'], [0x200d, 'ZERO WIDTH JOINER'], [0x2060, 'WORD JOINER'], [0x2064, 'INVISIBLE PLUS'],
      [0xfeff, 'ZERO WIDTH NO-BREAK SPACE'], [0x180e, 'MONGOLIAN VOWEL SEPARATOR'], [0x00ad, 'SOFT HYPHEN'],
      [0x0000, 'NULL'], [0x000d, 'CARRIAGE RETURN'], [0x001b, 'ESCAPE'], [0x007f, 'DELETE'], [0x0085, 'NEXT LINE'], [0x009b, 'CONTROL SEQUENCE INTRODUCER'],
      [0xe0100, 'VARIATION SELECTOR-17'],
    ];
    for (const [cp, name] of cases) {
      expect(at(cp), name).toEqual({ index: 1, codePoint: cp, hex: `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`, name });
    }
  });

  it('answers the first one, its index in UTF-16 units past astral characters', () => {
    expect(findInvisibleCharacter('👋\u202E\u200B')).toMatchObject({ index: 2, hex: 'U+202E' });
  });

  it('allows line feed and tab unless told otherwise, and leaves visible text of every script alone', () => {
    expect(findInvisibleCharacter('one\n\ttwo')).toBeNull();
    expect(findInvisibleCharacter('one\ntwo', { allowLineBreaks: false })).toMatchObject({ hex: 'U+000A', name: 'LINE FEED' });
    expect(findInvisibleCharacter('Ответ 回答 إجابة שלום 👋🏽 ❤️ café naïve')).toBeNull();
    expect(findInvisibleCharacter('')).toBeNull();
  });
});
