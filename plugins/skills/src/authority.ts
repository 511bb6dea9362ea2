import { PluginError } from '@keel/sdk/plugin';
import type { SkillsContext } from './context.ts';

/** The actions the skill policy decides (the skill-policy plugin's `decide` service). */
export type SkillAction = 'skills.create' | 'skills.import' | 'skills.install' | 'skills.edit' | 'skills.update' | 'skills.test' | 'skills.reset' | 'skills.remove';
export type PolicySourceType = 'workspace' | 'catalog' | 'git' | 'external_package' | 'generated' | 'unknown';
export interface PolicyResource { skillId?: string; skillKey?: string; sourceType?: PolicySourceType; sourceLocator?: string }
export interface PolicyDecision { allowed: boolean; action: string; reason: string; policyRevision: number; matchedRuleId: string | null; remediation: unknown }

/** Who may change a company's skills: board users, and agents holding agents:create or permissions.canCreateAgents. */
export async function assertMayChangeSkills(ctx: SkillsContext): Promise<void> {
  const actor = ctx.invocation.actor;
  if (actor.type === 'user' || actor.type === 'system') return;
  const facts = await ctx.principals.actor(['agents:create']);
  if (facts.type !== 'agent' || facts.grants.some((grant) => grant.permissionKey === 'agents:create')) return;
  const agent = actor.agentId ? await ctx.agents.get(actor.agentId) : null;
  const permissions = (agent?.permissions ?? {}) as Record<string, unknown>;
  if (permissions.canCreateAgents === true) return;
  throw new PluginError(403, 'permission_denied', 'Missing permission: agents:create (or permissions.canCreateAgents) is needed to change company skills', { permission: 'agents:create' });
}

/** Asks the skill policy; a denial answers 403 skill_policy_denied with the decision and writes nothing. */
export async function assertPolicyAllows(ctx: SkillsContext, action: SkillAction, resource: PolicyResource): Promise<PolicyDecision> {
  const clean: PolicyResource = {};
  if (resource.skillId) clean.skillId = resource.skillId;
  if (resource.skillKey) clean.skillKey = resource.skillKey.slice(0, 512);
  if (resource.sourceType) clean.sourceType = resource.sourceType;
  if (resource.sourceLocator) clean.sourceLocator = resource.sourceLocator.slice(0, 2048);
  let decision: PolicyDecision;
  try {
    decision = await ctx.services.call<PolicyDecision>('skill-policy', 'decide', { action, resource: clean });
  } catch (error) {
    // Fail closed: without a policy answer no skill changes.
    const code = (error as PluginError).code;
    throw new PluginError(503, 'skill_policy_unavailable', `The skill policy could not be asked (${code ?? 'error'}); skill changes are refused until it answers`);
  }
  if (!decision.allowed) throw new PluginError(403, 'skill_policy_denied', `Skill policy denies ${action}`, { decision });
  return decision;
}

/** The two checks every mutating route makes, in order. */
export async function authorise(ctx: SkillsContext, action: SkillAction, resource: PolicyResource): Promise<PolicyDecision> {
  await assertMayChangeSkills(ctx);
  return assertPolicyAllows(ctx, action, resource);
}
