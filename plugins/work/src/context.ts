import type { PluginContext } from '@keel/sdk/plugin';

/**
 * The capabilities of plugin.json this code calls through `ctx` (the host refuses to run it
 * if plugin.json stops declaring one): handlers then get `ctx.db`, `ctx.companies`, ... typed.
 */
export const WORK_CAPABILITIES = [
  'database.namespace.write', 'activity.write', 'activity.read', 'agents.read', 'issues.number', 'events.publish', 'runs.read', 'blobs.write', 'instance.settings.read',
  'companies.read', 'http.fetch', 'approvals.read', 'principals.read', 'services.consume',
] as const;

export type WorkContext = PluginContext<(typeof WORK_CAPABILITIES)[number]>;
