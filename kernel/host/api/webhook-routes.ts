import type { RouteModule } from '../../http/app.ts';
import { declareRoutes } from '../../http/route-spec.ts';
import { receiveWebhook } from '../contributions/webhooks.ts';
import type { ExtensionHost } from '../extension-host.ts';

/**
 * Inbound webhooks. No board or agent authentication: deliveries come from outside and are
 * authenticated by the endpoint's signature, when the manifest declares one.
 */
export const pluginWebhookRoutes = (host: ExtensionHost): RouteModule => (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Plugin webhooks');

  route({
    method: 'POST', path: '/api/plugins/:pluginId/webhooks/:endpointKey', auth: 'signature', success: 200, errors: [401, 409, 413, 502, 504],
    summary: "Deliver a webhook to a plugin's endpoint",
    description: 'With a signature declared in the manifest, the delivery is refused (401) unless signed with the secret of the plugin configuration; a replayed signature answers 409 `webhook_replayed`.',
    rawBody: { contentType: '*/*', description: 'The delivery as the sender sends it, handed to the plugin as text.' },
  }, async (ctx) => {
    await receiveWebhook(ctx, host, ctx.params.pluginId!, ctx.params.endpointKey!);
  });
};
