import { PluginError } from '@keel/sdk/plugin';
import { storedFiles } from '../catalog/catalog-store.ts';
import type { SkillsContext } from '../context.ts';
import { currentDesired, storedPreference } from './preferences.ts';
import { buildSnapshot } from './snapshot.ts';

/** What one run may be handed in all (the service's answer crosses the sandbox as one message). */
export const MAX_RUN_SKILL_BYTES = 4 * 1024 * 1024;

interface RunSkillFile { path: string; encoding: 'utf8' | 'base64'; content: string }
interface RunSkills {
  mode: string;
  skills: Array<{ key: string; runtimeName: string; files: RunSkillFile[] }>;
  /** Desired skills not handed over, with why: not installed in the company, or over the size left. */
  omitted: Array<{ key: string; reason: string }>;
}

/**
 * Service `run-skills` {agentId}: the files of the agent's desired skills (the required ones
 * included) for the runtime to materialise into a run, each under its snapshot's runtime name.
 * A desired skill the company no longer has is named in `omitted`, never silently dropped.
 */
export async function runSkillsService(input: unknown, ctx: SkillsContext): Promise<RunSkills> {
  const companyId = ctx.invocation.companyId;
  if (!companyId) throw new PluginError(400, 'company_required', 'run-skills serves a call of a company');
  const { agentId } = input as { agentId: string };
  const agent = await ctx.agents.get(agentId);
  if (!agent) throw new PluginError(404, 'agent_not_found', 'Agent not found');
  const desired = currentDesired(agent, await storedPreference(ctx.db, companyId, agentId));
  const snapshot = await buildSnapshot(ctx.db, companyId, String(agent.adapterType), desired);
  const wanted = snapshot.entries.filter((entry) => entry.desired);
  const { rows } = await ctx.db.query('select id::text as id, key from company_skills where company_id = $1 and key in (select jsonb_array_elements_text($2::jsonb))',
    [companyId, JSON.stringify(wanted.map((entry) => entry.key))]);
  const idOf = new Map(rows.map((row) => [String(row.key), String(row.id)]));
  const answer: RunSkills = { mode: snapshot.mode, skills: [], omitted: [] };
  let bytes = 0;
  for (const entry of wanted) {
    const id = idOf.get(entry.key);
    if (!id) { answer.omitted.push({ key: entry.key, reason: 'not installed in the company' }); continue; }
    const files = (await storedFiles(ctx.db, id)).map((file) => ({ path: String(file.path), encoding: file.encoding === 'base64' ? 'base64' as const : 'utf8' as const, content: String(file.content) }));
    const size = files.reduce((sum, file) => sum + file.content.length, 0);
    if (bytes + size > MAX_RUN_SKILL_BYTES) { answer.omitted.push({ key: entry.key, reason: `over the ${MAX_RUN_SKILL_BYTES} bytes a run is handed` }); continue; }
    bytes += size;
    answer.skills.push({ key: entry.key, runtimeName: entry.runtimeName, files });
  }
  return answer;
}
