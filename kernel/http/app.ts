import Koa from 'koa';
import { Router } from '@koa/router';
import type { Context, Next } from 'koa';
import type { KernelServices } from '../services.ts';
import { errorBody, KeelError } from './errors.ts';
import { activityActor, type Actor } from '../auth/actor.ts';
import { requestLog } from './request-log.ts';
import { isDatabaseUnavailable, isTransactionConflict } from '../db/connection-errors.ts';
import { pathGuard } from './path-guard.ts';
import { assertEveryRouteDeclared } from './route-spec.ts';
import { discardUnreadBody } from './unread-body.ts';
import { hostGuard } from './host-guard.ts';
import type { ServedHosts } from './served-hosts.ts';
import { KernelPaths } from './kernel-paths.ts';

export type ApiRouter = Router;
export type RouteModule = (router: ApiRouter, kernel: KernelServices) => void;

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const INPUT_PG_CODES = new Set(['22P02', '22003', '22007', '22008', '22001', '22021', '22P05']);

const kernelRouters = new WeakMap<KernelServices, Router>();

/** The kernel's own routes, in registration order; each declared through kernel/http/route-spec.ts. */
export function buildKernelRouter(kernel: KernelServices, modules: RouteModule[]): Router {
  const router = new Router();
  for (const register of modules) register(router, kernel);
  assertEveryRouteDeclared(router);
  return router;
}

/** The kernel router a running kernel's app serves: what it mounts, for tests that enumerate it. */
export function kernelRouterOf(kernel: KernelServices): Router | undefined {
  return kernelRouters.get(kernel);
}

/**
 * The Koa application: error model, actor resolution, the audit safety net and the routers.
 * Route modules are registered in order; the first matching route answers.
 */
export function createApp(kernel: KernelServices, router: Router, extra: { served: ServedHosts; after?: Koa.Middleware[]; answersOwnRefusals?: (method: string, path: string) => boolean }): Koa {
  kernelRouters.set(kernel, router);
  const app = new Koa({ proxy: false });
  app.silent = true;
  app.use(requestLog(kernel.log));
  app.use(errorHandler(kernel));
  app.use(hostGuard(extra.served));
  app.use(pathGuard);
  app.use(async (ctx, next) => {
    try {
      ctx.state.actor = await kernel.resolver.resolve(ctx);
    } catch (error) {
      // A proxy route answers a refused credential in its provider's shape (kernel/gateway/):
      // it gets the request as anonymous instead of the kernel's 401/403.
      const status = (error as { status?: number }).status;
      if (!((status === 401 || status === 403) && extra.answersOwnRefusals?.(ctx.method, ctx.path))) throw error;
      ctx.state.actor = { kind: 'anonymous' };
    }
    await next();
  });
  app.use(auditSafetyNet(kernel));
  // A path no kernel route could serve skips the router's pattern scan (kernel-paths.ts).
  const kernelRoutes = router.routes() as Koa.Middleware;
  const kernelPaths = new KernelPaths(router);
  app.use((ctx, next) => kernelPaths.mayServe(ctx.path) ? kernelRoutes(ctx, next) : next());
  // Plugin routes are matched only when no kernel route answered.
  for (const middleware of extra.after ?? []) app.use(middleware);
  app.use(async (ctx) => {
    const allowed = router.stack.filter((layer) => layer.match(ctx.path)).flatMap((layer) => layer.methods);
    if (allowed.length > 0 && !allowed.includes(ctx.method)) {
      ctx.set('Allow', [...new Set(allowed)].join(', '));
      throw new KeelError(405, 'method_not_allowed', `Method ${ctx.method} is not allowed on ${ctx.path}`);
    }
    throw new KeelError(404, 'route_not_found', `No route for ${ctx.method} ${ctx.path}`);
  });
  return app;
}

function errorHandler(kernel: KernelServices): Koa.Middleware {
  return async (ctx: Context, next: Next) => {
    try {
      await next();
    } catch (thrown) {
      const error = normalise(thrown);
      if (!error.expose) kernel.log.error({ err: thrown, requestId: ctx.state.requestId, method: ctx.method }, 'request failed');
      ctx.status = error.status;
      ctx.body = error.expose ? errorBody(error) : { error: 'Internal server error', code: 'internal_error' };
      if (error.code === 'database_unavailable' || error.code === 'transaction_conflict') {
        ctx.set('Retry-After', '1');
        kernel.log.warn({ err: thrown, requestId: ctx.state.requestId }, `request failed: ${error.message}`);
      }
      // A refusal sent while the client is still sending would reach it as a broken pipe:
      // read and discard the rest first (bounded), then answer and close the connection.
      if (!ctx.req.complete && !ctx.req.readableEnded) {
        await discardUnreadBody(ctx.req);
        ctx.set('Connection', 'close');
      }
    }
  };
}

/** Turns anything thrown into a KeelError without leaking internals. */
function normalise(thrown: unknown): KeelError {
  if (thrown instanceof KeelError) return thrown;
  const candidate = thrown as { status?: number; statusCode?: number; expose?: boolean; message?: string; code?: string };
  const status = candidate?.status ?? candidate?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new KeelError(status, candidate.code && /^[a-z_]+$/.test(candidate.code) ? candidate.code : 'bad_request', candidate.message || 'Bad request');
  }
  // Database errors caused by input that slipped past validation are still the caller's fault:
  // invalid text, numbers out of range, bad datetimes, strings too long for their column, and
  // characters the database cannot store (a \u0000 escape in jsonb, say).
  const pgCode = (thrown as { code?: string })?.code;
  if (pgCode !== undefined && INPUT_PG_CODES.has(pgCode)) {
    return new KeelError(400, 'bad_request', 'Invalid value in request');
  }
  if (isDatabaseUnavailable(thrown)) {
    return new KeelError(503, 'database_unavailable', 'The database is unavailable; retry shortly', { expose: true, cause: thrown });
  }
  if (isTransactionConflict(thrown)) {
    return new KeelError(503, 'transaction_conflict', 'The request met a conflicting change and was not applied; retry it', { expose: true, cause: thrown });
  }
  return new KeelError(500, 'internal_error', 'Internal server error', { expose: false, cause: thrown });
}

/**
 * Every mutating route must leave an activity entry. Routes write their own, inside their
 * transaction; this records a generic one for any successful mutation that did not, so
 * that nothing acknowledged goes unaudited.
 */
function auditSafetyNet(kernel: KernelServices): Koa.Middleware {
  return async (ctx, next) => {
    await next();
    if (!MUTATING.has(ctx.method) || ctx.status >= 400 || ctx.state.activityWritten || ctx.state.skipAudit) return;
    const actor = ctx.state.actor as Actor;
    if (actor.kind === 'anonymous') return;
    const who = activityActor(actor);
    const companyId = ctx.state.auditCompanyId ?? (actor.kind === 'agent' ? actor.companyId : null);
    const entityType = ctx.state.auditEntityType ?? 'api_request';
    try {
      await kernel.activity.record(kernel.db, {
        companyId, ...who, action: `api.${ctx.method.toLowerCase()}`, entityType,
        entityId: ctx.state.auditEntityId ?? ctx.path, details: { path: ctx.path, status: ctx.status },
      });
    } catch (error) {
      kernel.log.error({ err: error, path: ctx.path }, 'could not write activity entry');
    }
  };
}
