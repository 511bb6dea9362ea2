import { PluginError, type RouteRequest } from '@keel/sdk/plugin';
import { assertMayChangeSkills, assertPolicyAllows } from './authority.ts';
import { storedFiles } from './catalog/catalog-store.ts';
import type { SkillsContext } from './context.ts';
import { recordOf, type ImportCandidate } from './import-route.ts';
import { SKILL_FILE } from './skill-file/inventory.ts';
import { readSkillFolder, type SkillFolder, type SourceFile } from './skill-file/skill-folder.ts';
import { localKey } from './skill-file/skill-shape.ts';
import { fileInventories, findSkillByKey, saveSkill, skillJson } from './skill-store.ts';
import { readLocalSkills } from './sources/local-import.ts';

/**
 * Where a working copy keeps skills: `skills/` (its curated, experimental and system folders are
 * found by the walk below it), the skills folders of the coding tools agents use, and the root.
 */
export const SCANNED_FOLDERS = ['skills', '.agents/skills', '.claude/skills', '.codex/skills', '.cursor/skills', '.gemini/skills', '.github/skills', '.opencode/skills'];

interface Workspace { id: string; projectId: string; name: string; cwd: string | null }
interface Found { folder: SkillFolder; path: string; workspace: Workspace }
interface Conflict { key: string; slug: string; path: string; workspaceId: string; projectId: string; existingSkillId: string | null; reason: string }

const NOTHING_THERE = new Set(['skill_source_not_found', 'skill_source_empty', 'skill_source_invalid']);

/** The skills of one workspace; what cannot be read becomes a warning, a folder that is not there nothing. */
async function scanWorkspace(ctx: SkillsContext, workspace: Workspace, warnings: string[]): Promise<Found[]> {
  const cwd = workspace.cwd!.replace(/\/+$/, '') || '/';
  const found: Found[] = [];
  const root = await rootSkill(ctx, cwd, warnings);
  if (root) found.push({ folder: root, path: cwd, workspace });
  for (const folder of SCANNED_FOLDERS) {
    try {
      for (const skill of await readLocalSkills(ctx, `${cwd}/${folder}`, warnings)) found.push({ ...skill, workspace });
    } catch (error) {
      const failure = error as PluginError;
      if (NOTHING_THERE.has(failure.code)) continue;
      if (failure.status !== 422) throw error;
      warnings.push(`workspace ${workspace.name} (${workspace.id}): ${failure.message}`);
      // Outside the paths the operator allows: the other folders are too.
      if (failure.code === 'skill_source_not_allowed') return found;
    }
  }
  return found;
}

/** A SKILL.md at the working copy's root: that file alone (the rest of the root is the project, not the skill). */
async function rootSkill(ctx: SkillsContext, cwd: string, warnings: string[]): Promise<SkillFolder | null> {
  let tree;
  try {
    tree = await ctx.localImport.read(`${cwd === '/' ? '' : cwd}/${SKILL_FILE}`);
  } catch (error) {
    const status = (error as PluginError).status;
    if (status === 404 || status === 422) return null;
    // Outside the roots: said once per workspace, by the folder scan that follows.
    if (status === 403) return null;
    throw error;
  }
  if (tree.kind !== 'file') return null;
  const file = { ...tree.files[0]!, path: SKILL_FILE } as SourceFile;
  const folder = readSkillFolder([file], cwd.split('/').pop() || null, 'full', cwd);
  if ('error' in folder) { warnings.push(folder.error); return null; }
  warnings.push(...folder.warnings);
  return folder;
}

function candidateOf(companyId: string, found: Found): ImportCandidate {
  const { folder, path, workspace } = found;
  return {
    folder, key: folder.shape.keyOverride ?? localKey(companyId, folder.shape.slug), sourceType: 'local_path', sourceKind: 'project_scan',
    locator: path, ref: null, commit: null,
    sourceMetadata: { projectId: workspace.projectId, workspaceId: workspace.id, sources: [{ kind: 'project_scan', path, projectId: workspace.projectId, workspaceId: workspace.id }] },
  };
}

const fileListing = (files: ReadonlyArray<Record<string, unknown>>) =>
  JSON.stringify(files.map((file) => [file.path, file.encoding, file.content]).sort((a, b) => (String(a[0]) < String(b[0]) ? -1 : 1)));

/** Whether the stored skill already holds exactly what the scan found. */
async function unchanged(ctx: SkillsContext, existing: Record<string, unknown>, candidate: ImportCandidate): Promise<boolean> {
  const { folder } = candidate;
  if (existing.name !== folder.shape.name || (existing.description ?? null) !== folder.shape.description || existing.markdown !== folder.markdown) return false;
  return fileListing(await storedFiles(ctx.db, String(existing.id))) === fileListing(folder.files as unknown as Array<Record<string, unknown>>);
}

/** A skill this scan may refresh: one an earlier scan (or a local-path import) took from the same path. */
const sameSource = (existing: Record<string, unknown>, path: string) => {
  const kind = (existing.metadata as Record<string, unknown> | null)?.sourceKind;
  return existing.editable !== true && (kind === 'project_scan' || kind === 'local_path') && existing.source_locator === path;
};

/** POST /api/companies/{companyId}/skills/scan-projects {projectIds?, workspaceIds?}. */
export async function scanProjects(req: RouteRequest, ctx: SkillsContext): Promise<unknown> {
  const companyId = req.companyId!;
  const body = (req.body ?? {}) as { projectIds?: string[]; workspaceIds?: string[] };
  await assertMayChangeSkills(ctx);
  await assertPolicyAllows(ctx, 'skills.import', { sourceType: 'workspace' });
  const { workspaces } = await ctx.services.call<{ workspaces: Workspace[] }>('work', 'project-workspaces', {
    ...(body.projectIds ? { projectIds: body.projectIds } : {}), ...(body.workspaceIds ? { workspaceIds: body.workspaceIds } : {}),
  });
  const warnings: string[] = [];
  for (const id of body.projectIds ?? []) if (!workspaces.some((w) => w.projectId === id)) warnings.push(`project ${id}: no workspace of this company`);
  for (const id of body.workspaceIds ?? []) if (!workspaces.some((w) => w.id === id)) warnings.push(`workspace ${id}: not found in this company`);
  const found: Found[] = [];
  for (const workspace of workspaces) {
    if (!workspace.cwd) { warnings.push(`workspace ${workspace.name} (${workspace.id}): no working directory (cwd) to scan`); continue; }
    found.push(...await scanWorkspace(ctx, workspace, warnings));
  }

  const imported: Record<string, unknown>[] = [];
  const updated: Record<string, unknown>[] = [];
  const skipped: Array<{ key: string; path: string; skillId: string; reason: string }> = [];
  const conflicts: Conflict[] = [];
  const seen = new Map<string, string>();
  for (const item of found) {
    const candidate = candidateOf(companyId, item);
    const where = { key: candidate.key, slug: item.folder.shape.slug, path: item.path, workspaceId: item.workspace.id, projectId: item.workspace.projectId };
    const earlier = seen.get(candidate.key);
    if (earlier !== undefined) {
      if (earlier !== item.path) conflicts.push({ ...where, existingSkillId: null, reason: `found twice in this scan (also at ${earlier})` });
      continue;
    }
    seen.set(candidate.key, item.path);
    try {
      await assertPolicyAllows(ctx, 'skills.import', { sourceType: 'workspace', sourceLocator: item.path, skillKey: candidate.key });
    } catch (error) {
      if ((error as PluginError).code !== 'skill_policy_denied') throw error;
      warnings.push(`${candidate.key}: not imported, the skill policy denies it`);
      continue;
    }
    const existing = await findSkillByKey(ctx.db, companyId, candidate.key);
    if (existing && !sameSource(existing, item.path)) {
      conflicts.push({ ...where, existingSkillId: String(existing.id), reason: `a skill with this key already exists (${String(existing.source_type)}${existing.source_locator ? ` ${String(existing.source_locator)}` : ''}); it was left as it is` });
      continue;
    }
    if (existing && await unchanged(ctx, existing, candidate)) {
      skipped.push({ key: candidate.key, path: item.path, skillId: String(existing.id), reason: 'unchanged' });
      continue;
    }
    const { row } = await saveSkill(ctx.db, companyId, recordOf(candidate));
    const inventories = await fileInventories(ctx.db, companyId, [String(row.id)]);
    (existing ? updated : imported).push(skillJson(row, inventories.get(String(row.id)) ?? []));
  }
  if (imported.length + updated.length > 0) {
    await ctx.activity.record({
      action: 'company.skills_scanned', entityType: 'company', entityId: companyId,
      details: {
        workspaces: workspaces.length,
        imported: imported.map((skill) => ({ id: skill.id, key: skill.key })),
        updated: updated.map((skill) => ({ id: skill.id, key: skill.key })),
        skipped: skipped.length, conflicts: conflicts.length,
      },
    });
  }
  return { imported, updated, skipped, conflicts, warnings };
}
