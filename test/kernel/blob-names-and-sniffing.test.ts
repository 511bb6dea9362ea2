import { describe, expect, it } from 'vitest';
import { ActiveContentSniffer, sniffsAsMarkup } from '../../kernel/blobs/content-sniff.ts';
import { contentDisposition } from '../../kernel/blobs/content-disposition.ts';
import { findInvisibleCharacter, stripInvisibleCharacters } from '../../sdk/shared/invisible-characters.ts';

/** The pure parts of the blob defences; the attacks through the server are in test/host/attacks/blob-abuse.test.ts. */
describe('invisible characters in names', () => {
  it('are found with line breaks refused too, and stripped in every class: controls, separators, bidi, zero-width, tags', () => {
    expect(findInvisibleCharacter('invoice_\u202Efdp.exe', { allowLineBreaks: false })).toMatchObject({ index: 8, hex: 'U+202E', name: 'RIGHT-TO-LEFT OVERRIDE' });
    expect(findInvisibleCharacter('a\u2028b', { allowLineBreaks: false })).toMatchObject({ index: 1, hex: 'U+2028', name: 'LINE SEPARATOR' });
    expect(findInvisibleCharacter('a\u2028b')).toBeNull();
    expect(findInvisibleCharacter('café (1).txt', { allowLineBreaks: false })).toBeNull();
    const every = '\n\t\u2028\u2029\u0007\u0085\u00AD\u061C\u200B\u200C\u200D\u200E\u200F\u202A\u202B\u202C\u202D\u202E\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\uFEFF\u{E0001}\u{E0041}\u{E007F}\u{E0100}';
    expect(stripInvisibleCharacters(`a${every}b`)).toBe('ab');
    expect(stripInvisibleCharacters('lone \uD800 surrogate')).toBe('lone \uFFFD surrogate');
  });

  it('leave Content-Disposition without them, with filename* in RFC 5987 attr-chars', () => {
    expect(contentDisposition('attachment', 'x\u202Egpj.exe')).toBe(`attachment; filename="xgpj.exe"; filename*=UTF-8''xgpj.exe`);
    expect(contentDisposition('inline', "naïve (copy)*'s.txt")).toBe(`inline; filename="na_ve (copy)*'s.txt"; filename*=UTF-8''na%C3%AFve%20%28copy%29%2A%27s.txt`);
    expect(contentDisposition('attachment', '\u200B\u2066')).toBe(`attachment; filename="download"; filename*=UTF-8''download`);
  });
});

describe('active content sniffing', () => {
  const bytes = (text: string) => Buffer.from(text, 'latin1');

  it('takes the WHATWG HTML signatures, any case, after whitespace and a byte order mark, as markup', () => {
    for (const head of ['<!DOCTYPE HTML>', '<html>', ' \t\r\n<HeAd>', '<script>', '<IFRAME ', '<h1>', '<div>', '<font>', '<table>', '<a href=x>', '<style>', '<title>', '<b>', '<body>', '<br>', '<p>', '<!-- x -->', '<?xml version="1.0"?>', '<svg onload=x>', '\xEF\xBB\xBF<html>']) {
      expect({ head, markup: sniffsAsMarkup(bytes(head)) }).toEqual({ head, markup: true });
    }
    expect(sniffsAsMarkup(Buffer.from('\uFEFF<html>', 'utf16le'))).toBe(true);
    expect(sniffsAsMarkup(Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from('<svg>', 'utf16le').swap16()]))).toBe(true);
    for (const head of ['a < b', '<3 love', '1 <html>', '{"a": "<html>"}', '']) expect({ head, markup: sniffsAsMarkup(bytes(head)) }).toEqual({ head, markup: false });
  });

  it('finds script in a PDF across the pieces it arrives in, and nothing in a plain one', () => {
    const scripted = new ActiveContentSniffer();
    for (const piece of ['%PD', 'F-1.7\n', 'x'.repeat(5000), '<< /Java', 'Script >>']) scripted.feed(bytes(piece));
    expect(scripted.verdict()).toBe(true);
    const plain = new ActiveContentSniffer();
    for (const piece of ['%PDF-1.7\n', 'x'.repeat(5000), '<< /Type /Catalog >>']) plain.feed(bytes(piece));
    expect(plain.verdict()).toBe(false);
    const text = new ActiveContentSniffer();
    text.feed(bytes('notes: /JavaScript is a PDF name'));
    expect(text.verdict()).toBe(false);
  });
});
