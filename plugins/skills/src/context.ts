import type { PluginContext } from '@keel/sdk/plugin';

/**
 * The capabilities of plugin.json this code calls through `ctx` (the host refuses to run it
 * if plugin.json stops declaring one): handlers then get `ctx.db`, `ctx.agents`, ... typed.
 */
export const SKILLS_CAPABILITIES = ['database.namespace.write', 'activity.write', 'agents.read', 'services.consume', 'http.fetch', 'principals.read', 'agents.skills.write', 'local.import', 'secrets.config'] as const;

export type SkillsContext = PluginContext<(typeof SKILLS_CAPABILITIES)[number]>;
