/** The `ctx` of this plugin's handlers, typed from plugin.json (plugin.gen.ts, written by `keel plugin build`). */
export type { Context as SummariesContext } from './plugin.gen.ts';

export type Row = Record<string, unknown>;

/** The only slot key there is today. */
export const SLOT_KEYS = ['header'] as const;
export const SCOPE_KINDS = ['project', 'project_workspace', 'workspaces_overview'] as const;
export type ScopeKind = (typeof SCOPE_KINDS)[number];
