import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import type { Actor } from '../auth/actor.ts';

/** An id a proxy or client sent is kept when it is short and plain; anything else is replaced. */
const ACCEPTED_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The outermost middleware. Every request gets an id: kept from a sane incoming
 * `X-Request-Id`, otherwise a new uuid. It is returned in the `X-Request-Id` header and in
 * every JSON error body, and it reaches plugins with the request. One structured line is
 * logged per request: method, route pattern (never the concrete path or query, which may
 * carry identifiers or tokens), status, duration, actor kind, company and request id. Bodies
 * and headers are never logged.
 */
export function requestLog(log: Logger): Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    const incoming = ctx.get('x-request-id');
    const requestId = ACCEPTED_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    ctx.request.header['x-request-id'] = requestId;
    ctx.set('X-Request-Id', requestId);
    try {
      await next();
    } finally {
      const body = ctx.body as Record<string, unknown> | null | undefined;
      if (ctx.status >= 400 && !ctx.headerSent && body && typeof body === 'object' && !Buffer.isBuffer(body) && typeof body.error === 'string' && typeof (body as { pipe?: unknown }).pipe !== 'function') {
        ctx.body = { ...body, requestId };
      }
      const actor = ctx.state.actor as Actor | undefined;
      log.info({
        requestId,
        method: ctx.method,
        route: ctx.state.routePattern ?? (ctx as { _matchedRoute?: string })._matchedRoute ?? null,
        status: ctx.status,
        durationMs: Math.round((performance.now() - started) * 100) / 100,
        actor: actor?.kind ?? null,
        companyId: companyOf(ctx.params as Record<string, string> | undefined, ctx.state, actor),
      }, 'request');
    }
  };
}

function companyOf(params: Record<string, string> | undefined, state: Record<string, unknown>, actor: Actor | undefined): string | null {
  const fromRoute = state.companyId ?? state.auditCompanyId ?? params?.companyId;
  if (typeof fromRoute === 'string' && /^[0-9a-f-]{36}$/i.test(fromRoute)) return fromRoute.toLowerCase();
  if (actor?.kind === 'agent') return actor.companyId;
  return null;
}
