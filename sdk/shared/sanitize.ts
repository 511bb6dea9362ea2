import { REDACTED, SecretMatcher } from './secret-forms.ts';

export { REDACTED };

/**
 * Activity details are kept forever, so nothing secret may reach them. Values under
 * sensitive keys are replaced, token-shaped strings anywhere are replaced, known secret values
 * (`extraSecrets`) are replaced in any common encoding, in values and keys alike, and the
 * structure is bounded in depth, width and length.
 */
// Anchored at the end so that counters such as `inputTokens` or lists such as `secrets` stay readable.
const SENSITIVE_KEY = /(secret|password|passwd|passphrase|token|api[-_]?key|authorization|cookie|private[-_]?key|credentials?|session[-_]?key|plaintext|^value)$/i;
const TOKEN_SHAPED = [
  /\bsvc_[a-z]+_[A-Za-z0-9_-]{16,}/g,
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
  /\bBearer\s+[A-Za-z0-9._~+/-]{12,}=*/gi,
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g,
];
const MAX_DEPTH = 8;
const MAX_KEYS = 200;
const MAX_STRING = 4000;

/** Keys whose values are references, not secrets (a secret_ref names a secret by id). */
const SAFE_KEYS = new Set(['secretId', 'secretName', 'keyId', 'tokenId', 'keyPrefix', 'tokenType', 'secretsRead']);

export function sanitizeDetails(value: unknown, extraSecrets: readonly string[] | SecretMatcher = []): unknown {
  const matcher = extraSecrets instanceof SecretMatcher ? extraSecrets : new SecretMatcher(extraSecrets);
  return clean(value, 0, matcher.empty ? null : matcher);
}

function clean(value: unknown, depth: number, secrets: SecretMatcher | null): unknown {
  if (value === null || value === undefined) return value ?? null;
  if (typeof value === 'string') return scrubString(value, secrets);
  if (typeof value === 'number' || typeof value === 'boolean') return Number.isFinite(value as number) || typeof value === 'boolean' ? value : null;
  if (typeof value === 'bigint') return value.toString();
  if (depth >= MAX_DEPTH) return '[TRUNCATED]';
  if (Array.isArray(value)) return value.slice(0, MAX_KEYS).map((item) => clean(item, depth + 1, secrets));
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {};
    let count = 0;
    for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
      if (count++ >= MAX_KEYS) break;
      const name = storable(secrets ? secrets.redact(key) : key);
      if (SENSITIVE_KEY.test(key) && !SAFE_KEYS.has(key) && !isSecretRef(item)) {
        out[name] = item === null || item === undefined ? item ?? null : REDACTED;
      } else {
        out[name] = clean(item, depth + 1, secrets);
      }
    }
    return out;
  }
  return null;
}

function isSecretRef(value: unknown): boolean {
  return !!value && typeof value === 'object' && (value as { type?: unknown }).type === 'secret_ref';
}

function scrubString(value: string, secrets: SecretMatcher | null): string {
  // Known secrets first, on the whole value: truncation could cut one in two.
  let out = storable(truncated(secrets ? secrets.redact(value) : value));
  for (const pattern of TOKEN_SHAPED) out = out.replace(pattern, REDACTED);
  return out;
}

/** At most MAX_STRING code units, never ending between the two halves of a surrogate pair. */
function truncated(value: string): string {
  if (value.length <= MAX_STRING) return value;
  const last = value.charCodeAt(MAX_STRING - 1);
  const end = last >= 0xd800 && last <= 0xdbff ? MAX_STRING - 1 : MAX_STRING;
  return `${value.slice(0, end)}…`;
}

/**
 * jsonb holds neither NUL characters nor lone surrogates: one in an entry would fail the
 * transaction that writes it (and a plugin's code may build any string). U+FFFD stands in.
 */
function storable(text: string): string {
  return text.toWellFormed().replaceAll('\u0000', '\ufffd');
}
