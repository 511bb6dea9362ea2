import type { RouteModule } from './app.ts';
import { declareRoutes } from './route-spec.ts';

/**
 * `GET /api/health`: 200 with each component's state when all are up, 503 with the error
 * body naming the failing components otherwise. Per-plugin detail is shown to the board;
 * an anonymous caller of an authenticated instance sees each group's state only.
 */
const UNHEALTHY = { status: 503, code: 'unhealthy', message: 'Unhealthy' } as const;

export const healthRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Health');

  route({
    method: 'GET', path: '/api/health', auth: 'none', success: 200,
    summary: 'Health of the instance and each of its components',
    description: 'Answers 503 with the error body (code `unhealthy`, plus `status` and `components`) when a component is down. Per-plugin detail is shown to board callers only.',
  }, async (ctx) => {
    const report = await kernel.health.report();
    const detailed = kernel.config.deploymentMode === 'local_trusted' || ctx.state.actor?.kind === 'board';
    const components = detailed ? report.components : summarise(report.components);
    const base = { deploymentMode: kernel.config.deploymentMode, exposure: kernel.config.server.exposure, components };
    ctx.set('Cache-Control', 'no-store');
    if (report.healthy) {
      ctx.body = { status: 'ok', ...base };
      return;
    }
    ctx.status = UNHEALTHY.status;
    ctx.set('Retry-After', '5');
    const named = detailed ? report.failing : [...new Set(report.failing.map((name) => name.split('.')[0]))];
    ctx.body = { error: `${UNHEALTHY.message}: ${named.join(', ')} down`, code: UNHEALTHY.code, status: 'unavailable', ...base };
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
