import type { Context } from 'koa';
import { KeelError } from './errors.ts';
import type { ParameterDoc } from './route-spec.ts';

/** Visible ASCII and spaces, as keys are generated (uuids, hashes, counters); stored and compared byte for byte. */
const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/;

/**
 * The request's Idempotency-Key, or null when none is sent: 1-255 visible ASCII characters,
 * else 400 `invalid_idempotency_key` (before anything is written). Checked alike for the
 * kernel's own creates and for the plugin routes it forwards the header to.
 */
export function idempotencyKeyOf(ctx: Context): string | null {
  const key = ctx.headers['idempotency-key'];
  if (key === undefined) return null;
  if (!(typeof key === 'string' && IDEMPOTENCY_KEY.test(key))) {
    throw new KeelError(400, 'invalid_idempotency_key', 'Idempotency-Key must be 1-255 visible ASCII characters');
  }
  return key;
}

/** The header of a create that takes a key, as the OpenAPI documents it (kernel routes and plugin routes declared `idempotencyKey`). */
export const IDEMPOTENCY_KEY_PARAMETER: ParameterDoc = {
  name: 'Idempotency-Key', in: 'header', schema: { type: 'string', minLength: 1, maxLength: 255 },
  description: 'Makes a retried create safe: the first request creates; a retry with the same key and request answers what it created (200, x-idempotent-replayed: true) and writes nothing, also when both arrive at once or at different Keel processes; another request under the key is 409 idempotency_key_reused.',
};
