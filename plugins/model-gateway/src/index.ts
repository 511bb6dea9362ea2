import { definePlugin } from './plugin.gen.ts';
import { kernelEvents } from '@keel/sdk/plugin';
import { gatewayRoute } from './gateway.ts';
import { getLimits, putLimits } from './limits.ts';
import { onProxyFinished } from './metering.ts';
import { createProvider, deleteProvider, getProvider, listProviders, onCompanyDeleted, updateProvider } from './providers.ts';
import { routeForService } from './route-for.ts';
import { testProvider } from './test-call.ts';

export default definePlugin({
  routes: {
    'list-providers': listProviders,
    'create-provider': createProvider,
    'get-provider': getProvider,
    'update-provider': updateProvider,
    'delete-provider': deleteProvider,
    'test-provider': testProvider,
    'get-limits': getLimits,
    'put-limits': putLimits,
    'anthropic-messages': gatewayRoute('anthropic-messages'),
    'anthropic-count-tokens': gatewayRoute('anthropic-count-tokens'),
    'openai-responses': gatewayRoute('openai-responses'),
    'openai-chat': gatewayRoute('openai-chat'),
    'gemini-models': gatewayRoute('gemini-models'),
  },
  // Durable subscriber: each finished call arrives at least once; metering is idempotent by callId.
  events: {
    [kernelEvents.proxyFinished.name]: onProxyFinished,
    [kernelEvents.companyDeleted.name]: onCompanyDeleted,
  },
  services: {
    'route-for': routeForService,
  },
});
