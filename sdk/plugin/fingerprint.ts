/** A stable text for a JSON value: object keys sorted, so that equal requests print equal. */
export function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const entries = Object.keys(value as object).sort().map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`);
  return `{${entries.join(',')}}`;
}

/**
 * A 64-bit FNV-1a hash of the canonical request: enough to tell a retry from a different
 * request sent under the same idempotency key (the sandbox has no crypto module). Store it
 * with the key; a request under a known key with another fingerprint is a different request.
 */
export function fingerprint(value: unknown): string {
  const text = canonical(value);
  let hash = 0xcbf29ce484222325n;
  for (let i = 0; i < text.length; i++) {
    hash ^= BigInt(text.charCodeAt(i));
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return hash.toString(16).padStart(16, '0');
}
