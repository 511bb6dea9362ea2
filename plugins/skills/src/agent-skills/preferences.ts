import type { DatabaseCapability } from '@keel/sdk/plugin';

/**
 * The plugin's record of an agent's desired skills (agent_skill_preferences). The kernel keeps
 * the same list in the agent's adapterConfig.serviceSkillSync, where no adapterConfig edit can
 * reach it; this record follows it (event subscribers below, and the sync route, which writes
 * both). Whichever was written last is the agent's desired list.
 */
export async function storedPreference(db: DatabaseCapability, companyId: string, agentId: string): Promise<{ desiredSkills: string[]; updatedAt: string } | null> {
  const { rows } = await db.query('select desired_skills, updated_at from agent_skill_preferences where agent_id = $1 and company_id = $2', [agentId, companyId]);
  const row = rows[0];
  if (!row) return null;
  const list = Array.isArray(row.desired_skills) ? row.desired_skills.filter((key): key is string => typeof key === 'string') : [];
  return { desiredSkills: list, updatedAt: String(row.updated_at) };
}

/** Writes the record; an unchanged list writes nothing. */
export async function savePreference(db: DatabaseCapability, companyId: string, agentId: string, desiredSkills: string[]): Promise<void> {
  await db.query(
    `insert into agent_skill_preferences (agent_id, company_id, desired_skills) values ($1, $2, $3::jsonb)
     on conflict (agent_id) do update set desired_skills = excluded.desired_skills, updated_at = now()
      where agent_skill_preferences.company_id = excluded.company_id and agent_skill_preferences.desired_skills is distinct from excluded.desired_skills`,
    [agentId, companyId, JSON.stringify(desiredSkills)]);
}

/** The agent's desired list: the record unless the kernel's list was written after it. */
export function currentDesired(agent: Record<string, unknown>, stored: { desiredSkills: string[]; updatedAt: string } | null): string[] {
  const kernelList = Array.isArray(agent.desiredSkills) ? agent.desiredSkills.filter((key): key is string => typeof key === 'string') : [];
  if (!stored) return kernelList;
  const agentUpdated = Date.parse(String(agent.updatedAt ?? ''));
  const storedUpdated = Date.parse(stored.updatedAt);
  return Number.isFinite(agentUpdated) && Number.isFinite(storedUpdated) && agentUpdated > storedUpdated ? kernelList : stored.desiredSkills;
}
