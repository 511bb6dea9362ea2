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

/** Lower-cases a declared media type and drops parameters (`image/png; charset=x` -> `image/png`). */
export function mediaType(declared: string | undefined): string {
  return (declared ?? '').split(';', 1)[0]!.trim().toLowerCase();
}

const startsWith = (bytes: Buffer, signature: number[], offset = 0) =>
  bytes.length >= offset + signature.length && signature.every((byte, i) => bytes[offset + i] === byte);
const ascii = (text: string) => [...text].map((c) => c.charCodeAt(0));

/**
 * Whether the bytes really are the raster format they claim to be, judged by the format's
 * signature, so that a file labelled image/png cannot smuggle HTML or a script past the
 * type check. SVG is text and is judged by the sanitiser instead.
 */
export function matchesSignature(type: string, bytes: Buffer): boolean {
  switch (type) {
    case 'image/png': return startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    case 'image/jpeg': return startsWith(bytes, [0xff, 0xd8, 0xff]);
    case 'image/gif': return startsWith(bytes, ascii('GIF87a')) || startsWith(bytes, ascii('GIF89a'));
    case 'image/webp': return startsWith(bytes, ascii('RIFF')) && startsWith(bytes, ascii('WEBP'), 8);
    default: return false;
  }
}
