import type { PluginContext } from '@keel/sdk/plugin';

/** The capabilities of plugin.json this code calls through `ctx`. */
export const WEBSITE_CAPABILITIES = ['catalog.read', 'database.namespace.write'] as const;

export type WebsiteContext = PluginContext<(typeof WEBSITE_CAPABILITIES)[number]>;
