import type { PluginContext } from '@keel/sdk/plugin';

/** The capabilities of plugin.json this code calls through `ctx`. */
export const WIKI_CAPABILITIES = ['database.namespace.write', 'activity.write', 'local.folders', 'services.consume', 'agents.managed'] as const;

export type WikiContext = PluginContext<(typeof WIKI_CAPABILITIES)[number]>;

/** The one folder mount the wiki lives in. */
export const ROOT = 'wiki-root';
