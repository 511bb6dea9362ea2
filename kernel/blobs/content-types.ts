import { matchesSignature, mediaType } from '../tenancy/assets.ts';

/**
 * Which declared types an upload route accepts, and how a blob is served. A browser may run
 * HTML, SVG, XML or script it is handed inline; only the types below are served inline, and
 * everything else always as an attachment (with `nosniff`, so the browser does not guess).
 */
const INLINE_SAFE = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/avif', 'text/plain', 'text/csv', 'application/json', 'application/pdf']);
const INLINE_SAFE_PREFIXES = ['audio/', 'video/'];

export function servedInline(contentType: string): boolean {
  const type = mediaType(contentType);
  return INLINE_SAFE.has(type) || INLINE_SAFE_PREFIXES.some((prefix) => type.startsWith(prefix));
}

/** `image/png` matches `image/png` and `image/*`. */
export function allowedType(declared: string, allowList: readonly string[]): boolean {
  const type = mediaType(declared);
  if (!/^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/.test(type)) return false;
  return allowList.some((entry) => entry === type || (entry.endsWith('/*') && type.startsWith(entry.slice(0, -1))));
}

const SIGNED = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** Raster types with a known signature must start with it: a "PNG" that is HTML is refused. */
export function contradictsDeclaredType(declared: string, firstBytes: Buffer): boolean {
  const type = mediaType(declared);
  return SIGNED.has(type) && !matchesSignature(type, firstBytes);
}
