import type { PluginContext } from '@keel/sdk/plugin';

/**
 * The capabilities of plugin.json this code calls through `ctx` (the host refuses to run it
 * if plugin.json stops declaring one): handlers then get `ctx.db`, `ctx.companies`, ... typed.
 */
export const WORK_CAPABILITIES = ['database.namespace.write', 'activity.write', 'agents.read', 'issues.number', 'events.publish', 'blobs.write'] as const;

export type WorkContext = PluginContext<(typeof WORK_CAPABILITIES)[number]>;
