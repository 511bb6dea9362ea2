import type { PluginContext } from '@keel/sdk/plugin';

/**
 * The capabilities of plugin.json this code calls through `ctx` (the host refuses to run it
 * if plugin.json stops declaring one): handlers then get `ctx.db`, `ctx.principals`, ... typed.
 */
export const SKILL_POLICY_CAPABILITIES = ['database.namespace.write', 'activity.write', 'principals.read'] as const;

export type SkillPolicyContext = PluginContext<(typeof SKILL_POLICY_CAPABILITIES)[number]>;
