import { describe, expect, it } from 'vitest';
import { sanitizeDetails } from '../../sdk/shared/sanitize.ts';

/**
 * Activity details come from kernel routes and from plugins (whose own code may build any
 * string): whatever they hold, the sanitised details are text PostgreSQL's jsonb accepts.
 */
describe('sanitizeDetails keeps details storable', () => {
  it('replaces NUL characters and lone surrogates, in values and keys, with U+FFFD', () => {
    expect(sanitizeDetails({ note: 'a\u0000b', half: 'x\ud800', ['k\u0000']: 1, ['\udc00']: [' \ud83d'] }))
      .toEqual({ note: 'a\ufffdb', half: 'x\ufffd', ['k\ufffd']: 1, ['\ufffd']: [' \ufffd'] });
  });

  it('keeps surrogate pairs whole when it shortens a long string', () => {
    const cut = sanitizeDetails({ note: `a${'😀'.repeat(2500)}` }) as { note: string };
    expect(cut.note).toBe(`a${'😀'.repeat(1999)}…`);
    expect(JSON.stringify(sanitizeDetails({ s: '😀'.repeat(3000) }))).not.toMatch(/\\ud83d"/);
  });
});
