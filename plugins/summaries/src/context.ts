import type { PluginContext } from '@keel/sdk/plugin';

/** The capabilities of plugin.json this code calls through `ctx`. */
export const SUMMARIES_CAPABILITIES = [
  'database.namespace.write', 'activity.write', 'agents.managed', 'principals.read', 'instance.settings.read', 'services.consume',
] as const;

export type SummariesContext = PluginContext<(typeof SUMMARIES_CAPABILITIES)[number]>;
export type Row = Record<string, unknown>;

/** The only slot key there is today. */
export const SLOT_KEYS = ['header'] as const;
export const SCOPE_KINDS = ['project', 'project_workspace', 'workspaces_overview'] as const;
export type ScopeKind = (typeof SCOPE_KINDS)[number];
