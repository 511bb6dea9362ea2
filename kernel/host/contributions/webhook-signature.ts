import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { WebhookManifest } from '../../../sdk/plugin/manifest.ts';
import { KeelError } from '../../http/errors.ts';

export const DEFAULT_TOLERANCE_SECONDS = 300;
const HEX_SIGNATURE = /^(?:sha256=)?([0-9a-fA-F]{64})$/;
const UNIX_SECONDS = /^\d{1,12}$/;

export type SignatureSpec = NonNullable<WebhookManifest['signature']>;

export interface Verified { replayKey: string; expiresAt: Date }

/**
 * Verifies an HMAC-SHA256 webhook signature over the raw body bytes (or over
 * `${timestamp}.${body}` when the endpoint declares a timestamp header), before anything
 * parses the body. The comparison is constant-time over two 32-byte digests. The answer
 * carries the key a replay is recognised by and how long that key must be remembered:
 * until the timestamp turns stale, or for the tolerance window when there is no timestamp.
 * Every refusal throws a KeelError (401, or 503 when the endpoint cannot verify at all).
 *
 * An endpoint that declares a signature but has no secret configured refuses every
 * delivery (fail closed).
 */
export function verifySignature(spec: SignatureSpec, secret: unknown, header: (name: string) => string, raw: Buffer, nowMs: number): Verified {
  if (typeof secret !== 'string' || secret.length === 0) {
    throw new KeelError(503, 'webhook_secret_missing', 'This webhook endpoint has no signing secret configured; deliveries are refused until one is set', { expose: true });
  }
  const provided = header(spec.header).trim();
  if (!provided) throw new KeelError(401, 'webhook_signature_missing', `Missing webhook signature header ${spec.header}`);
  const tolerance = spec.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  let timestamp: number | null = null;
  let signed: Buffer = raw;
  if (spec.timestampHeader) {
    const text = header(spec.timestampHeader).trim();
    if (!UNIX_SECONDS.test(text)) throw new KeelError(401, 'webhook_timestamp_invalid', `Missing or malformed webhook timestamp header ${spec.timestampHeader}`);
    timestamp = Number(text);
    signed = Buffer.concat([Buffer.from(`${text}.`, 'utf8'), raw]);
  }
  const expected = createHmac('sha256', secret).update(signed).digest();
  const match = HEX_SIGNATURE.exec(provided);
  // A malformed value is compared against a digest of itself, so every refusal costs the same work.
  const given = match ? Buffer.from(match[1]!, 'hex') : createHash('sha256').update(provided).digest();
  const valid = timingSafeEqual(expected, given) && match !== null;
  if (!valid) throw new KeelError(401, 'webhook_signature_invalid', 'Invalid webhook signature');
  if (timestamp !== null && Math.abs(nowMs / 1000 - timestamp) > tolerance) {
    throw new KeelError(401, 'webhook_timestamp_stale', `Webhook timestamp is outside the accepted window of ${tolerance} seconds`);
  }
  const expiresAt = new Date(((timestamp ?? nowMs / 1000) + tolerance) * 1000);
  return { replayKey: createHash('sha256').update(expected).digest('hex'), expiresAt };
}
