import { PluginError } from '@keel/sdk/plugin';
import type { SkillsContext } from '../context.ts';
import { SKILL_FILE } from '../skill-file/inventory.ts';
import { readSkillFolder, type SkillFolder, type SourceFile } from '../skill-file/skill-folder.ts';

const MAX_SKILLS = 200;

/**
 * Skills from a server path, read through the host's local.import capability (confined to the
 * operator's roots, links resolved inside them, agents refused unless allowed): a SKILL.md (its
 * folder is the skill), a folder with one, or a folder of many (every folder holding a SKILL.md
 * below it; a skill nested in another is its own, and its files are not the outer skill's).
 */
export async function readLocalSkills(ctx: SkillsContext, path: string, warnings: string[]): Promise<Array<{ folder: SkillFolder; path: string }>> {
  const trimmed = path.replace(/\/+$/, '') || '/';
  const target = trimmed.endsWith(`/${SKILL_FILE}`) ? trimmed.slice(0, -(SKILL_FILE.length + 1)) || '/' : trimmed;
  let tree;
  try {
    tree = await ctx.localImport.read(target);
  } catch (error) {
    const failure = error as PluginError;
    if (failure.status === 403) throw new PluginError(422, 'skill_source_not_allowed', failure.message);
    if (failure.status === 404) throw new PluginError(422, 'skill_source_not_found', failure.message);
    if (failure.status === 400 || failure.status === 422) throw new PluginError(422, 'invalid_skill_source', failure.message);
    throw error;
  }
  if (tree.kind === 'file') throw new PluginError(422, 'skill_source_invalid', `A local file must be a ${SKILL_FILE} (got ${path})`);
  for (const skipped of tree.skipped) warnings.push(`${skipped.path}: ${skipped.reason}`);
  const files = tree.files as SourceFile[];
  const dirs = files.filter((file) => file.path === SKILL_FILE || file.path.endsWith(`/${SKILL_FILE}`))
    .map((file) => (file.path === SKILL_FILE ? '' : file.path.slice(0, -(SKILL_FILE.length + 1))))
    .sort();
  if (dirs.length === 0) throw new PluginError(422, 'skill_source_empty', `No ${SKILL_FILE} found in ${path}`);
  if (dirs.length > MAX_SKILLS) throw new PluginError(422, 'skill_source_too_large', `${path} holds ${dirs.length} skills; at most ${MAX_SKILLS} per import`);
  const found: Array<{ folder: SkillFolder; path: string }> = [];
  for (const dir of dirs) {
    const prefix = dir === '' ? '' : `${dir}/`;
    const nested = dirs.filter((other) => other !== dir && (dir === '' || other.startsWith(prefix))).map((other) => `${other}/`);
    const own = files.filter((file) => file.path.startsWith(prefix) && !nested.some((inner) => file.path.startsWith(inner)))
      .map((file) => ({ ...file, path: file.path.slice(prefix.length) }));
    const folderName = (dir === '' ? tree.path : dir).split('/').pop() || null;
    const location = dir === '' ? tree.path : `${tree.path}/${dir}`;
    const folder = readSkillFolder(own, folderName, 'full', location);
    if ('error' in folder) { warnings.push(folder.error); continue; }
    warnings.push(...folder.warnings);
    found.push({ folder, path: location });
  }
  return found;
}
