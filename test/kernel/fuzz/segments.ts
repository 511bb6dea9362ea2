import type { Random } from './random.ts';
import { BAD_IDS, UNKNOWN_UUID } from '../bad-input-cases.ts';

/**
 * Path segments that name nothing on any route, written as they go on the wire: unknown and
 * malformed ids, SQL, traversal (raw and encoded), malformed percent-encoding, overlong UTF-8,
 * encoded lone surrogates, NUL, control characters, markup. A route with a path parameter
 * must refuse every one of them, whatever else the request holds. None is an alias a route
 * resolves (`me`, a shortname of a fixture agent, a plugin key).
 */
const SEGMENTS: readonly string[] = [
  ...BAD_IDS.map(([, value]) => value),
  '00000000-0000-0000-0000-000000000000', UNKNOWN_UUID.toUpperCase(), `${UNKNOWN_UUID}0`, `{${UNKNOWN_UUID}}`, UNKNOWN_UUID.replaceAll('-', ''),
  '%ZZ', '%', '%4', '%C0%80', '%E0%80%AF', '%ED%BF%BF', '%ED%A0%BD%ED%B8%80', '%F4%90%80%80', '%FF%FE', '%80',
  '%00', '%00a', 'a%00', '%2500',
  '..', '.', '...', '%2e%2e', '%2E%2E%2F%2E%2E', '..%5C..%5Cwindows', '%252e%252e%252f', '....%2F%2F', '..%00',
  'null', 'undefined', 'NaN', '0', '-1', '1e309', 'true', '%7B%7D', '%5B%5D', '%22%22', '%27', '%22',
  '%20', '%09', '%0A', '%0D%0A', '%C2%A0', '%E2%80%AE', '%EF%BB%BF',
  '%C3%A9t%C3%A9', '%F0%9F%98%80', '%E2%80%A8', '%3Cscript%3Ealert(1)%3C%2Fscript%3E', '%24%7Bjndi%3Aldap%3A%2F%2Fx%7D', '%24(id)', '*', '~', ';', ',',
  'a'.repeat(300), `${'%41'.repeat(1000)}`, 'x%27%3B%20drop%20table%20companies%3B--',
];

/** A segment that names nothing: from the list, or generated (an unknown uuid, random bytes percent-encoded). */
export function nothingNamingSegment(rng: Random): string {
  const roll = rng.next();
  if (roll < 0.75) return rng.pick(SEGMENTS);
  if (roll < 0.85) return rng.uuid();
  const bytes = Array.from({ length: rng.int(1, 40) }, () => rng.int(0, 255));
  // Mostly bytes that need escaping; unreserved ASCII goes as it is.
  return bytes.map((b) => (/[A-Za-z0-9_~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, '0').toUpperCase()}`)).join('');
}

/** Query strings that no route takes as valid filters (never a companyId, which resolves shortnames). */
const QUERIES: readonly string[] = [
  '?x=%00', '?q=a%00b', '?includeArchived=maybe', '?from=not-a-date', '?to=%ZZ', '?limit=-1', '?limit=1e309', '?a[b]=c', '?a=1&a=2&a=3',
  '?%ZZ=1', '?=', '?&&', '?q=%ED%A0%80', '?q=%C0%AF', `?q=${'x'.repeat(4000)}`, '?__proto__[admin]=1', '?constructor=1', '?agentId=nope',
];

export function junkQuery(rng: Random): string {
  return rng.chance(0.7) ? '' : rng.pick(QUERIES);
}
