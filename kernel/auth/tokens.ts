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

/** The first characters after the prefix, stored to help people recognise a key. */
export function displayPrefix(token: string): string {
  return token.slice(0, token.lastIndexOf('_') + 1 + 6);
}

export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
