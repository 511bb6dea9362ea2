import type { RouteModule } from '../../http/app.ts';
import { receiveWebhook } from '../contributions/webhooks.ts';

/**
 * Inbound webhooks. No board or agent authentication: deliveries come from outside and are
 * authenticated by the endpoint's signature, when the manifest declares one.
 */
export const pluginWebhookRoutes: RouteModule = (router, kernel) => {
  router.post('/api/plugins/:pluginId/webhooks/:endpointKey', async (ctx) => {
    await receiveWebhook(ctx, kernel.extensionHost!, ctx.params.pluginId!, ctx.params.endpointKey!);
  });
};
