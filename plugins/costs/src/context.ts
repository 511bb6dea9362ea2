import type { BatchCall as SdkBatchCall, PluginContext } from '@keel/sdk/plugin';

/**
 * The capabilities of plugin.json this code calls through `ctx` (the host refuses to run it
 * if plugin.json stops declaring one): handlers then get `ctx.db`, `ctx.agents`, ... typed.
 */
export const COSTS_CAPABILITIES = ['database.namespace.write', 'activity.write', 'agents.read', 'companies.read', 'approvals.read', 'agents.pause', 'companies.pause', 'budgets.write', 'services.consume', 'events.publish'] as const;

export type CostsContext = PluginContext<(typeof COSTS_CAPABILITIES)[number]>;
export type BatchCall = SdkBatchCall<(typeof COSTS_CAPABILITIES)[number]>;
