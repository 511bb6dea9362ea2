import { PluginError } from '@keel/sdk/plugin';
import { reimportBundledSkills } from '../catalog/bundled.ts';
import type { SkillsContext } from '../context.ts';
import { savePreference } from './preferences.ts';
import { resolveSelection } from './references.ts';

/**
 * The answer to the kernel point `agent.desired-skills` (service `resolve-desired-skills`): the
 * kernel asks it, read-only, before it creates, hires or updates an agent with desiredSkills,
 * and stores the answer in the agent's configuration; a refusal (422 invalid_skill_selection)
 * reaches the API caller as written here, and nothing is created.
 */
export async function resolveDesiredSkillsService(input: unknown, ctx: SkillsContext): Promise<{ desiredSkills: string[] }> {
  const companyId = ctx.invocation.companyId;
  if (!companyId) throw new PluginError(400, 'company_required', 'resolve-desired-skills serves a call of a company');
  const { desiredSkills } = input as { desiredSkills: string[] };
  return { desiredSkills: await resolveSelection(ctx.db, companyId, desiredSkills) };
}

/**
 * agent.created / agent.updated (after commit): this plugin's record follows the list the kernel
 * stored. The agent is read again at delivery, so a late or repeated delivery writes the current
 * list, never an old one.
 */
export async function followAgentSkills(payload: Record<string, unknown>, ctx: SkillsContext): Promise<void> {
  const companyId = ctx.invocation.companyId;
  const agentId = typeof payload.agentId === 'string' ? payload.agentId : null;
  if (!companyId || !agentId) return;
  const agent = await ctx.agents.get(agentId);
  if (!agent) return;
  // The agent is pointed at the required bundled skills: the company has them at their shipped bytes.
  await reimportBundledSkills(ctx, companyId);
  const desired = Array.isArray(agent.desiredSkills) ? agent.desiredSkills.filter((key): key is string => typeof key === 'string') : [];
  const { rows } = await ctx.db.query('select 1 from agent_skill_preferences where agent_id = $1', [agentId]);
  if (rows.length === 0 && desired.length === 0) return;
  await savePreference(ctx.db, companyId, agentId, desired);
}
