import type { CodingAgentsContext } from './context.ts';
import type { GatewayRouting, GatewayTarget, LocalConfig, ProviderKind, ToolDriver } from './tools/driver.ts';

/** What the model-gateway plugin's `route-for` service answers: the provider that serves the agent's calls of a kind, or null. */
interface RouteFor { providerId: string; kind: ProviderKind; path: string }

/** A run (or probe) the gateway serves: the target the driver builds its arguments for, and what the kernel's tool launch is told. */
export interface GatewayRoute { target: GatewayTarget; routing: GatewayRouting }

const UNAVAILABLE = new Set(['service_unavailable', 'service_not_found', 'plugin_not_enabled']);

/**
 * Whether Keel's model gateway serves this run, and how the tool reaches it. By default a run of
 * a tool that can be routed (its driver's `gateway`) goes to the company's default provider of
 * the kind the tool speaks; `adapterConfig.modelProvider` names another provider of the company,
 * or "none" for the tool's own credentials. The decision is the model-gateway plugin's
 * (`route-for`): without that plugin, or when it answers null (no such provider), the run keeps
 * the tool's own configuration. The tool then calls `${llmUrl}/<providerId>` with its run token.
 */
export async function gatewayRoute(ctx: CodingAgentsContext, agentId: string, driver: ToolDriver, config: LocalConfig): Promise<GatewayRoute | null> {
  if (!driver.gateway || config.modelProvider === 'none') return null;
  const kind = driver.gateway.kind(config);
  if (!kind) return null;
  let route: RouteFor | null;
  try {
    route = await ctx.services.call<RouteFor | null>('model-gateway', 'route-for', { agentId, kind, ...(config.modelProvider ? { providerName: config.modelProvider } : {}) });
  } catch (error) {
    if (UNAVAILABLE.has((error as { code?: string }).code ?? '')) return null;
    throw error;
  }
  if (!route || typeof route.providerId !== 'string') return null;
  const { llmUrl } = await ctx.executions.callbackUrl();
  const target: GatewayTarget = { providerId: route.providerId, kind: route.kind ?? kind, baseUrl: `${llmUrl}/${route.providerId}` };
  return { target, routing: driver.gateway.routing(target, config) };
}
