import type { Context } from 'koa';
import { idempotencyKeyOf } from '../../http/idempotency-key.ts';

/**
 * The request headers a plugin route sees: besides the basics, what a stream resumes from
 * (Last-Event-ID) and what MCP's Streamable HTTP transport sends on every request.
 */
const FORWARDED_HEADERS = ['content-type', 'user-agent', 'accept', 'idempotency-key', 'x-request-id', 'last-event-id', 'mcp-session-id', 'mcp-protocol-version'];

/**
 * The headers forwarded to a plugin route, checked before the call is queued: an
 * Idempotency-Key that is sent must be 1-255 visible ASCII characters. A plugin stores the key
 * in its own tables, so a value it cannot store would otherwise fail inside its transaction,
 * and inside a batched route's shared one.
 */
export function routeHeaders(ctx: Context): Record<string, string> {
  idempotencyKeyOf(ctx);
  const headers: Record<string, string> = {};
  for (const name of FORWARDED_HEADERS) {
    const value = ctx.get(name);
    if (value) headers[name] = value;
  }
  return headers;
}

