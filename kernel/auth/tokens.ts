import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Opaque bearer tokens. They carry 256 bits of randomness, so a single SHA-256 is a sound
 * at-rest hash (a slow KDF protects low-entropy passwords, not random keys) and keeps the
 * lookup an indexed equality match.
 */
export const BOARD_KEY_PREFIX = 'svc_board_';
export const AGENT_KEY_PREFIX = 'svc_agent_';
export const SESSION_PREFIX = 'svc_session_';
export const CHALLENGE_SECRET_PREFIX = 'svc_cli_';

export function mintToken(prefix: string): string {
  return prefix + randomBytes(32).toString('base64url');
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** `svc_<kind>_`: the kind is lowercase letters only, so the match ends before the random part. */
const KIND_PREFIX = /^svc_[a-z]+_/;

/**
 * The type prefix and the first six random characters, stored to help people recognise a
 * key. The random part is base64url and may itself contain `_`, so the prefix is found by
 * its shape, never by the last underscore (which could reveal most of the key).
 */
export function displayPrefix(token: string): string {
  const kind = KIND_PREFIX.exec(token)?.[0] ?? '';
  return token.slice(0, kind.length + 6);
}

export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
