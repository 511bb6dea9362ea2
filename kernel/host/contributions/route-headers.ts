import type { Context } from 'koa';
import { KeelError } from '../../http/errors.ts';
import type { ParameterDoc } from '../../http/route-spec.ts';

/**
 * The request headers a plugin route sees: besides the basics, what a stream resumes from
 * (Last-Event-ID) and what MCP's Streamable HTTP transport sends on every request.
 */
const FORWARDED_HEADERS = ['content-type', 'user-agent', 'accept', 'idempotency-key', 'x-request-id', 'last-event-id', 'mcp-session-id', 'mcp-protocol-version'];
/** Visible ASCII and spaces, as keys are generated (uuids, hashes, counters); what a plugin stores and compares byte for byte. */
const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/;

/**
 * The headers forwarded to a plugin route, checked before the call is queued: an
 * Idempotency-Key that is sent must be 1-255 visible ASCII characters. A plugin stores the key
 * in its own tables, so a value it cannot store would otherwise fail inside its transaction,
 * and inside a batched route's shared one.
 */
export function routeHeaders(ctx: Context): Record<string, string> {
  const key = ctx.headers['idempotency-key'];
  if (key !== undefined && !(typeof key === 'string' && IDEMPOTENCY_KEY.test(key))) {
    throw new KeelError(400, 'invalid_idempotency_key', 'Idempotency-Key must be 1-255 visible ASCII characters');
  }
  const headers: Record<string, string> = {};
  for (const name of FORWARDED_HEADERS) {
    const value = ctx.get(name);
    if (value) headers[name] = value;
  }
  return headers;
}

/** The header of a route declared `idempotencyKey`, as the OpenAPI documents it. */
export const IDEMPOTENCY_KEY_PARAMETER: ParameterDoc = {
  name: 'Idempotency-Key', in: 'header', schema: { type: 'string', minLength: 1, maxLength: 255 },
  description: 'Makes a retried create safe: the first request creates; a retry with the same key and request answers what it created (200, x-idempotent-replayed: true) and writes nothing, also when both arrive at once or at different Keel processes; another request under the key is 409 idempotency_key_reused. Keys are kept per company and kind of entity.',
};
