import type { RouteModule } from './app.ts';

export const healthRoutes: RouteModule = (router, kernel) => {
  router.get('/api/health', async (ctx) => {
    await kernel.db.query('select 1');
    ctx.body = { status: 'ok', deploymentMode: kernel.config.deploymentMode, exposure: kernel.config.server.exposure };
  });
};
