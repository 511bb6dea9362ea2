import type { Random } from './random.ts';

/**
 * Authorization header values that authenticate nobody: always a bearer token (without one,
 * local_trusted mode serves the implicit local board), but an unknown key with the right
 * prefix, a valid key changed by a character, JWT-shaped garbage, a forged or unsigned JWT,
 * an oversized or odd-byte value.
 */
export function malformedAuthorization(rng: Random, validTokens: readonly string[]): string {
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const claims = { sub: rng.uuid(), company_id: rng.uuid(), adapter_type: 'alpha_local', run_id: rng.uuid(), exp: 4102444800 };
  const valid = validTokens.length ? rng.pick(validTokens) : 'svc_board_x';
  return rng.pick([
    'Bearer x', `Bearer svc_board_${rng.hex(40)}`, `Bearer svc_agent_${rng.hex(40)}`, `Bearer svc_${rng.hex(12)}`, 'Bearer a.b.c', 'Bearer ...',
    `Bearer ${b64({ alg: 'none' })}.${b64(claims)}.`, `Bearer ${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims)}.${rng.hex(43)}`,
    `Bearer ${b64({ alg: 'RS256' })}.${b64({ ...claims, exp: 1 })}.${rng.hex(43)}`, `Bearer ${'x'.repeat(rng.int(2000, 7000))}`,
    'Bearer \u00e9\u00ff', 'Bearer\tsvc_board_x', 'bearer svc_board_x', `Bearer ${valid}x`, `Bearer ${valid.slice(0, -1)}`, `Bearer ${valid.toUpperCase()}`,
    `Bearer ${valid} ${valid}`, `Bearer "${valid}"`, `Bearer ${valid}%00`,
  ]);
}

/** Authorization values of other schemes or without a token: ignored, so the request is the local board's in local_trusted mode. */
export function otherAuthorization(rng: Random): string {
  return rng.pick(['Bearer', 'Basic dXNlcjpwYXNzd29yZA==', 'Token abc', 'Digest username="x"', 'svc_board_x', '']);
}

/** Headers besides credentials and the body's type: run ids, idempotency keys, request ids and others, valid or not. */
export function junkHeaders(rng: Random): Record<string, string> {
  const headers: Record<string, string> = {};
  if (rng.chance(0.2)) headers['x-service-run-id'] = rng.pick(['not-a-uuid', '', rng.uuid(), "'; drop table runs; --", 'x'.repeat(3000), '00000000-0000-0000-0000-00000000000g']);
  if (rng.chance(0.2)) headers['idempotency-key'] = rng.pick(['', 'k'.repeat(256), 'k'.repeat(4000), '\u00e9t\u00e9', `key-${rng.hex(8)}`, ' ', 'a\tb']);
  if (rng.chance(0.1)) headers['x-request-id'] = rng.pick(['', 'x'.repeat(5000), '\u00ff', rng.uuid()]);
  if (rng.chance(0.1)) headers.accept = rng.pick(['text/html', '*/*', 'application/xml', '\u00e9']);
  if (rng.chance(0.1)) headers.cookie = rng.pick([`keel_session=${rng.hex(64)}`, 'keel_session=', 'keel_session=%ZZ; a=b', `keel_session=${'x'.repeat(3000)}`]);
  if (rng.chance(0.05)) headers['x-forwarded-for'] = '127.0.0.1, 10.0.0.1';
  if (rng.chance(0.05)) headers.origin = 'https://evil.example';
  return headers;
}
