import { errorCode, type RuntimeContext } from './context.ts';

/** Where a process run finds its skills, relative to its working directory: one folder per skill, by runtime name. */
export const SKILLS_DIR = '.keel/skills';

export interface RunFile { path: string; content: string; encoding?: 'utf8' | 'base64' }
interface RunSkillsAnswer { mode: string; skills: Array<{ key: string; runtimeName: string; files: Array<{ path: string; encoding: 'utf8' | 'base64'; content: string }> }>; omitted: Array<{ key: string; reason: string }> }

/**
 * The agent's desired skills, materialised into the run (the skills plugin's `run-skills`):
 * each skill's files under `.keel/skills/<runtimeName>/`, `SERVICE_SKILLS_DIR` naming the folder.
 * Without the skills plugin there are no skills to hand over; any other failure refuses the start
 * (a run without the skills its agent was given would not be the run that was asked for).
 */
export async function skillsForRun(ctx: RuntimeContext, agentId: string): Promise<{ files: RunFile[]; env: Record<string, string>; materialised: string[]; runtimeNames: string[]; omitted: RunSkillsAnswer['omitted'] }> {
  let answer: RunSkillsAnswer;
  try {
    answer = await ctx.services.call<RunSkillsAnswer>('skills', 'run-skills', { agentId });
  } catch (error) {
    if (errorCode(error) === 'service_unavailable') return { files: [], env: {}, materialised: [], runtimeNames: [], omitted: [] };
    throw error;
  }
  const files = answer.skills.flatMap((skill) => skill.files.map((file) => ({
    path: `${SKILLS_DIR}/${skill.runtimeName}/${file.path}`, content: file.content, ...(file.encoding === 'base64' ? { encoding: 'base64' as const } : {}),
  })));
  return { files, env: answer.skills.length > 0 ? { SERVICE_SKILLS_DIR: SKILLS_DIR } : {}, materialised: answer.skills.map((skill) => skill.key), runtimeNames: answer.skills.map((skill) => skill.runtimeName), omitted: answer.omitted };
}
