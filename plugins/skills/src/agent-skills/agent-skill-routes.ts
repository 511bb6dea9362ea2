import { PluginError, type RouteRequest } from '@keel/sdk/plugin';
import { reimportBundledSkills } from '../catalog/bundled.ts';
import { assertMayChangeSkills } from '../authority.ts';
import type { SkillsContext } from '../context.ts';
import { currentDesired, savePreference, storedPreference } from './preferences.ts';
import { resolveSelection } from './references.ts';
import { buildSnapshot, type SkillSnapshot } from './snapshot.ts';

async function agentOf(req: RouteRequest, ctx: SkillsContext): Promise<Record<string, unknown>> {
  // The host resolved the agent and checked the caller's access to its company.
  const agent = await ctx.agents.get(req.params.agentId!);
  if (!agent) throw new PluginError(404, 'agent_not_found', 'Agent not found');
  return agent;
}

/** GET /api/agents/{agentId}/skills: board users, the agent itself, and agents that may change skills. */
export async function getAgentSkills(req: RouteRequest, ctx: SkillsContext): Promise<SkillSnapshot> {
  const agent = await agentOf(req, ctx);
  if (ctx.invocation.actor.agentId !== agent.id) await assertMayChangeSkills(ctx);
  const companyId = req.companyId!;
  const desired = currentDesired(agent, await storedPreference(ctx.db, companyId, String(agent.id)));
  return buildSnapshot(ctx.db, companyId, String(agent.adapterType), desired);
}

/**
 * POST /api/agents/{agentId}/skills/sync {desiredSkills}: the desired list becomes exactly the
 * resolved references plus the required skills (unknown or ambiguous references refuse it all),
 * in this plugin's record and in the kernel's slot of the agent's configuration.
 */
export async function syncAgentSkills(req: RouteRequest, ctx: SkillsContext): Promise<SkillSnapshot> {
  const agent = await agentOf(req, ctx);
  await assertMayChangeSkills(ctx);
  const companyId = req.companyId!;
  // The required bundled skills are installed before the agent is pointed at them.
  await reimportBundledSkills(ctx, companyId);
  const body = req.body as { desiredSkills: string[] };
  const before = currentDesired(agent, await storedPreference(ctx.db, companyId, String(agent.id)));
  const desiredSkills = await resolveSelection(ctx.db, companyId, body.desiredSkills);
  await savePreference(ctx.db, companyId, String(agent.id), desiredSkills);
  await ctx.agents.setDesiredSkills(String(agent.id), desiredSkills);
  await ctx.activity.record({
    action: 'agent.skills_synced', entityType: 'agent', entityId: String(agent.id),
    details: { desiredSkills, added: desiredSkills.filter((key) => !before.includes(key)), removed: before.filter((key) => !desiredSkills.includes(key)) },
  });
  return buildSnapshot(ctx.db, companyId, String(agent.adapterType), desiredSkills);
}
