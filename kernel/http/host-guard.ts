import type { Middleware } from 'koa';
import { KeelError } from './errors.ts';
import { ALLOW_SETTING, parseHostHeader, type ServedHosts } from './served-hosts.ts';

/** Methods a browser may send cross-origin without an `Origin` check: they change nothing. */
const SAFE_METHODS = new Set(['GET', 'HEAD']);

/**
 * Refuses, before anything else reads it, a request for a name this instance does not serve
 * (a DNS-rebound page's `Host`) and a browser's state-changing request from a page of another
 * origin (its `Origin`). Every route is behind it: the API, `/mcp`, plugin routes, the console
 * and the website's files. Clients that are programs send no `Origin`, and are judged by their
 * `Host` alone.
 */
export function hostGuard(served: ServedHosts): Middleware {
  return async (ctx, next) => {
    const host = ctx.req.headers.host;
    if (!served.servesHost(host)) {
      const name = host === undefined ? undefined : parseHostHeader(host)?.hostname;
      throw new KeelError(403, 'host_not_allowed', host === undefined
        ? 'A request must name this instance in its Host header'
        : `Host "${printable(host)}" is not a name this instance serves${name ? `; to serve it, add "${printable(name)}" to ${ALLOW_SETTING}` : ''}`,
      { details: { setting: ALLOW_SETTING } });
    }
    const origin = ctx.req.headers.origin;
    if (origin !== undefined && !SAFE_METHODS.has(ctx.method) && !served.servesOrigin(origin)) {
      const name = originHostname(origin);
      throw new KeelError(403, 'origin_not_allowed', `Origin "${printable(origin)}" may not send ${ctx.method} requests to this instance${name ? `; to allow it, add "${printable(name)}" to ${ALLOW_SETTING}` : ''}`,
        { details: { setting: ALLOW_SETTING } });
    }
    await next();
  };
}

function originHostname(origin: string): string | undefined {
  try {
    const url = new URL(origin);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.hostname : undefined;
  } catch {
    return undefined;
  }
}

/** A header echoed into a message: bounded, printable ASCII only. */
function printable(value: string): string {
  const cleaned = value.replace(/[^\x20-\x7e]/g, '?');
  return cleaned.length > 200 ? `${cleaned.slice(0, 200)}...` : cleaned;
}
