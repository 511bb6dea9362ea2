import { PluginError } from '@keel/sdk/plugin';
import type { SkillsContext } from '../context.ts';
import type { SkillFolder } from '../skill-file/skill-folder.ts';

/**
 * Local paths are read only through a host capability confined to operator-configured roots.
 * That capability does not exist yet, so local imports are refused plainly rather than
 * reading anything (see README, "Not yet").
 */
export async function readLocalSkills(_ctx: SkillsContext, path: string, _warnings: string[]): Promise<Array<{ folder: SkillFolder; path: string }>> {
  throw new PluginError(422, 'skill_source_unsupported', `Local path imports are not available on this server yet (${path.length > 200 ? `${path.slice(0, 200)}...` : path})`);
}
