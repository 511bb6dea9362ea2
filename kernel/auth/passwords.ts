import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Password hashing with scrypt. The stored form carries its own parameters
 * (`scrypt$N$r$p$salt$hash`, base64url) so that they can be raised later without
 * invalidating existing hashes: verification always uses the parameters stored with the hash.
 */
const N = 16384;
const R = 8;
const P = 1;
const KEY_BYTES = 64;
const SALT_BYTES = 16;
/** Bounds on stored parameters, so that a corrupt row cannot make verification run away. */
const MAX_N = 1 << 20;

function scrypt(password: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scryptCallback(password.normalize('NFKC'), salt, keylen, options, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

function options(n: number, r: number, p: number): ScryptOptions {
  // scrypt needs about 128 * N * r bytes; leave headroom above node's 32 MiB default.
  return { N: n, r, p, maxmem: 256 * n * r + 1024 * 1024 };
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await scrypt(password, salt, KEY_BYTES, options(N, R, P));
  return ['scrypt', N, R, P, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string | null | undefined): Promise<boolean> {
  const parsed = parse(stored);
  if (!parsed) {
    // Spend the same work as a real check, so that response time does not reveal whether an account exists.
    await scrypt(password, DUMMY_SALT, KEY_BYTES, options(N, R, P));
    return false;
  }
  const key = await scrypt(password, parsed.salt, parsed.hash.length, options(parsed.n, parsed.r, parsed.p));
  return key.length === parsed.hash.length && timingSafeEqual(key, parsed.hash);
}

const DUMMY_SALT = randomBytes(SALT_BYTES);

function parse(stored: string | null | undefined): { n: number; r: number; p: number; salt: Buffer; hash: Buffer } | undefined {
  if (!stored) return undefined;
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return undefined;
  const [n, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![n, r, p].every(Number.isInteger) || n < 2 || n > MAX_N || (n & (n - 1)) !== 0 || r < 1 || r > 32 || p < 1 || p > 16) return undefined;
  const salt = Buffer.from(parts[4]!, 'base64url');
  const hash = Buffer.from(parts[5]!, 'base64url');
  if (salt.length < 8 || hash.length < 16) return undefined;
  return { n, r, p, salt, hash };
}
