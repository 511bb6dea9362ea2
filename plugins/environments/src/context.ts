import type { PluginContext } from '@keel/sdk/plugin';

/** The capabilities of plugin.json this code calls through `ctx`. */
export const ENVIRONMENTS_CAPABILITIES = [
  'database.namespace.write', 'activity.write', 'principals.read', 'local.workspaces', 'services.consume', 'executions.workspace',
] as const;

export type EnvironmentsContext = PluginContext<(typeof ENVIRONMENTS_CAPABILITIES)[number]>;
