import type { RouteModule } from './app.ts';
import { LIVE_BODY, LIVENESS_PATH } from './liveness.ts';
import { declareRoutes } from './route-spec.ts';

/**
 * Three health routes, one per audience:
 * - `GET /api/health/live` (a process supervisor): the process serves; touches nothing else.
 * - `GET /api/health/ready` (a load balancer): the database and the job engine answer, so this
 *   process can take traffic; 503 `not_ready` otherwise. A plugin's state never takes part:
 *   one plugin's crash loop must not take the whole instance out of rotation.
 * - `GET /api/health` (people): every component's state; 200 `degraded` naming the plugins
 *   that are down, 503 `unhealthy` only when readiness fails. Per-plugin detail is shown to
 *   the board; an anonymous caller of an authenticated instance sees each group's state only.
 */
const UNHEALTHY = { status: 503, code: 'unhealthy', message: 'Unhealthy' } as const;
const NOT_READY = { status: 503, code: 'not_ready', message: 'Not ready' } as const;

export const healthRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Health');

  route({
    method: 'GET', path: LIVENESS_PATH, auth: 'none', success: 200,
    summary: 'Liveness: the process serves HTTP (for a process supervisor)',
    description: 'Answers 200 `{status: "ok"}` as long as the process serves HTTP, from the moment its port is bound (while it still starts) on; it reads no database and no plugin. Restart the process only when this stops answering; to decide whether to send traffic, probe `/api/health/ready`.',
    response: { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['ok'] } } },
  }, (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = LIVE_BODY;
  });

  route({
    method: 'GET', path: '/api/health/ready', auth: 'none', success: 200,
    summary: 'Readiness: this process can take traffic (for a load balancer)',
    description: 'Answers 200 `{status: "ready", components: {database, jobs}}` when the database answers a cheap query within 2 s and the job engine runs; otherwise 503 with the error body (code `not_ready`, or `starting` before the kernel is up), `components` and `Retry-After`. Plugin workers never affect it: a plugin that crashes makes its own routes answer 503, not the instance. This is the route a load balancer should probe.',
  }, async (ctx) => {
    const readiness = await kernel.health.readiness();
    ctx.set('Cache-Control', 'no-store');
    if (readiness.ready) {
      ctx.body = { status: 'ready', components: readiness.components };
      return;
    }
    ctx.status = NOT_READY.status;
    ctx.set('Retry-After', '5');
    ctx.body = { error: `${NOT_READY.message}: ${readiness.notReady.join(', ')} down`, code: NOT_READY.code, status: 'unavailable', components: readiness.components };
  });

  route({
    method: 'GET', path: '/api/health', auth: 'none', success: 200,
    summary: 'Health of the instance and each of its components (for people)',
    description: 'Answers 200 with `status` `ok`, or `degraded` with `down` naming the components that are down when only plugins are (a plugin worker restarting, failed or not running here) or a component reports `degraded`; 503 with the error body (code `unhealthy`, plus `status` and `components`) only when readiness fails (the database or the job engine). Per-plugin detail is shown to board callers only. A load balancer should probe `/api/health/ready` instead.',
  }, async (ctx) => {
    const report = await kernel.health.report();
    const detailed = kernel.config.deploymentMode === 'local_trusted' || ctx.state.actor?.kind === 'board';
    const components = detailed ? report.components : summarise(report.components);
    const base = { deploymentMode: kernel.config.deploymentMode, exposure: kernel.config.server.exposure, components };
    ctx.set('Cache-Control', 'no-store');
    const named = (names: string[]) => detailed ? names : [...new Set(names.map((name) => name.split('.')[0]!))];
    if (report.ready) {
      const degraded = !report.healthy || Object.values(components).some((value) => (value as { status?: string }).status === 'degraded');
      ctx.body = degraded ? { status: 'degraded', down: named(report.failing), ...base } : { status: 'ok', ...base };
      return;
    }
    ctx.status = UNHEALTHY.status;
    ctx.set('Retry-After', '5');
    ctx.body = { error: `${UNHEALTHY.message}: ${named(report.failing).join(', ')} down`, code: UNHEALTHY.code, status: 'unavailable', ...base };
  });
};

function summarise(components: Record<string, unknown>): Record<string, unknown> {
  const summary: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(components)) {
    const health = value as { status?: string };
    if (typeof health.status === 'string') { summary[name] = { status: health.status }; continue; }
    const members = Object.values(value as Record<string, { status: string }>);
    summary[name] = { status: members.some((m) => m.status === 'down') ? 'down' : members.some((m) => m.status === 'degraded') ? 'degraded' : 'up' };
  }
  return summary;
}
