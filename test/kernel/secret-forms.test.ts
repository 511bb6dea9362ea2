import { describe, expect, it } from 'vitest';
import { REDACTED, SecretMatcher } from '../../sdk/shared/secret-forms.ts';
import { sanitizeDetails } from '../../sdk/shared/sanitize.ts';

/** kernel/activity/secret-forms.ts: known secret values in the forms they take on the way out. */
const SECRET = 'sig"n\\ing/key+val=ue 77aa99';
const matcher = new SecretMatcher([SECRET, 'vault-value-7f3a9c2e51d84b06']);
const bytes = Buffer.from(SECRET, 'utf8');

describe('SecretMatcher', () => {
  it('finds a value raw, JSON-escaped, base64 (any alignment, either alphabet), hex and percent-encoded', () => {
    const forms = [
      SECRET, JSON.stringify(SECRET).slice(1, -1), bytes.toString('base64'), bytes.toString('base64url'),
      Buffer.from(`a${SECRET}`).toString('base64'), Buffer.from(`ab${SECRET}`).toString('base64url'), Buffer.from(`user:${SECRET}:x`).toString('base64'),
      bytes.toString('hex'), bytes.toString('hex').toUpperCase(), `0${bytes.toString('hex')}`, encodeURIComponent(SECRET),
      encodeURIComponent(SECRET).toLowerCase(), encodeURIComponent(SECRET).replaceAll('%20', '+'),
      [...SECRET].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join(''),
      // Mixed forms no single replacement catches: half escaped, half not.
      `${encodeURIComponent(SECRET.slice(0, 6))}${SECRET.slice(6)}`,
    ];
    for (const form of forms) {
      const out = matcher.redact(`before ${form} after`);
      expect(out, form).toContain(REDACTED);
      for (const leaked of [SECRET, bytes.toString('base64').slice(0, 12), bytes.toString('hex').slice(0, 16)]) expect(out, form).not.toContain(leaked);
    }
  });

  it('leaves text that holds no secret as it is', () => {
    for (const text of ['hello world', 'b00cd587-26a8-4d1f-a63d-049d20e3bce2', 'deadbeefcafebabe0123', 'SGVsbG8gd29ybGQ=', 'a%20b+c', '{"a":"\\n"}', 'vault-value']) {
      expect(matcher.redact(text)).toBe(text);
    }
    expect(new SecretMatcher([]).redact(SECRET)).toBe(SECRET);
  });

  it('redacts keys and values of JSON, and the sanitizer uses it for known secrets', () => {
    expect(matcher.redactValue({ [bytes.toString('hex')]: [SECRET, 1, null], plain: 'x' })).toEqual({ [REDACTED]: [REDACTED, 1, null], plain: 'x' });
    expect(sanitizeDetails({ note: `token ${bytes.toString('base64')}` }, [SECRET])).toEqual({ note: `token ${REDACTED}` });
  });
});
