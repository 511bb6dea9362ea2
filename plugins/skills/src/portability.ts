import { PluginError } from '@keel/sdk/plugin';
import { assertMayChangeSkills, assertPolicyAllows } from './authority.ts';
import type { SkillsContext } from './context.ts';
import { localKey } from './skill-file/skill-shape.ts';
import { trustLevel, type TrustLevel } from './skill-file/inventory.ts';
import { saveSkill, type SourceType } from './skill-store.ts';
import type { SkillFile } from './skill-file/skill-folder.ts';

/**
 * The skills plugin's part of a company package (manifest `portability`): the company's skills
 * with their files. SKILL.md and text files travel as package files under `skills/<n>-<slug>/`;
 * binary files (base64) inline in the data. Bundled skills stay behind (every instance has its
 * own). A company-local skill (`company/<id>/<slug>`) is re-keyed to the target company.
 * Skills are matched by key: `replace` updates an existing one, `skip` and `rename` keep it (a
 * key cannot be renamed). Every skill imported passes the skill policy as `skills.import` of an
 * external package; one the policy denies is skipped with the reason, as is any import by a
 * caller who may not change skills. Only the kernel may call these services.
 */
interface FileData { path: string; kind: SkillFile['kind']; filePath?: string; encoding?: 'base64'; content?: string }
interface SkillData {
  key: string; local: boolean; slug: string; name: string; description: string | null; markdownPath: string;
  sourceType: SourceType; sourceLocator: string | null; sourceRef: string | null; sourceCommit: string | null;
  /** Informative: an import computes it from the files. */
  trustLevel: TrustLevel; editable: boolean; required: boolean; metadata: Record<string, unknown>; files: FileData[];
}
interface ImportInput { mode: 'preview' | 'apply'; strategy: 'rename' | 'skip' | 'replace'; data: { skills?: unknown }; files: Record<string, string> }
interface PlanItem { kind: 'skill'; key: string; name: string; action: 'create' | 'update' | 'skip'; targetName?: string; reason?: string }

const SLUG = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const FILE_KINDS: ReadonlyArray<SkillFile['kind']> = ['skill', 'reference', 'script', 'asset', 'markdown', 'other'];
const MAX_SKILLS = 1000;

function kernelOnly(ctx: SkillsContext): void {
  if (ctx.invocation.caller?.plugin !== 'kernel') throw new PluginError(403, 'kernel_only', 'Only the kernel imports and exports company packages');
}

export async function exportCompany(_input: unknown, ctx: SkillsContext) {
  kernelOnly(ctx);
  const companyId = ctx.invocation.companyId!;
  const skills = (await ctx.db.query(
    "select * from company_skills where company_id = $1 and coalesce(metadata->>'sourceKind', '') <> 'service_bundled' order by key", [companyId])).rows;
  const fileRows = (await ctx.db.query('select skill_id, path, kind, encoding, content from skill_files where company_id = $1 order by skill_id, path', [companyId])).rows;
  const filesOf = new Map<string, Array<Record<string, unknown>>>();
  for (const row of fileRows) filesOf.set(String(row.skill_id), [...(filesOf.get(String(row.skill_id)) ?? []), row]);
  const files: Record<string, string> = {};
  const data: SkillData[] = skills.map((skill, index) => {
    const slug = String(skill.slug);
    const dir = `skills/${index + 1}-${slug}`;
    const markdownPath = `${dir}/SKILL.md`;
    files[markdownPath] = String(skill.markdown);
    return {
      key: String(skill.key), local: skill.key === localKey(companyId, slug), slug, name: String(skill.name), description: skill.description as string | null,
      markdownPath, sourceType: skill.source_type as SourceType, sourceLocator: skill.source_locator as string | null, sourceRef: skill.source_ref as string | null,
      sourceCommit: skill.source_commit as string | null, trustLevel: skill.trust_level as TrustLevel, editable: skill.editable === true,
      required: skill.required === true, metadata: (skill.metadata ?? {}) as Record<string, unknown>,
      files: (filesOf.get(String(skill.id)) ?? []).map((file): FileData => {
        const kind = file.kind as SkillFile['kind'];
        if (file.encoding === 'base64') return { path: String(file.path), kind, encoding: 'base64', content: String(file.content) };
        // SKILL.md is usually one of the files: carried once.
        if (file.content === skill.markdown) return { path: String(file.path), kind, filePath: markdownPath };
        const filePath = `${dir}/files/${String(file.path)}`;
        files[filePath] = String(file.content);
        return { path: String(file.path), kind, filePath };
      }),
    };
  });
  return { data: { skills: data }, files };
}

/** The package's skills, checked: a malformed one refuses the part (422 invalid_package), naming it. */
function skillsOf(data: { skills?: unknown }, files: Record<string, string>): SkillData[] {
  if (data.skills === undefined) return [];
  if (!Array.isArray(data.skills) || data.skills.length > MAX_SKILLS) throw new PluginError(422, 'invalid_package', `The skills part's skills must be a list of at most ${MAX_SKILLS}`);
  const text = (value: unknown, max: number) => typeof value === 'string' && value.length > 0 && value.length <= max;
  return data.skills.map((raw, index) => {
    const skill = raw as SkillData;
    const bad = (why: string) => new PluginError(422, 'invalid_package', `The skills part's skill ${index + 1}: ${why}`);
    if (!skill || typeof skill !== 'object') throw bad('not an object');
    if (!text(skill.key, 512) || !text(skill.name, 512) || typeof skill.slug !== 'string' || !SLUG.test(skill.slug) || skill.slug.length > 128) throw bad('key, name and slug are required (slug: lower-case words joined by dashes)');
    if (!text(skill.sourceType, 64)) throw bad('sourceType is required');
    if (typeof files[skill.markdownPath] !== 'string') throw bad(`its SKILL.md (${String(skill.markdownPath)}) is not in the package`);
    if (!Array.isArray(skill.files)) throw bad('files must be a list');
    for (const file of skill.files) {
      if (!file || !text(file.path, 1024) || !FILE_KINDS.includes(file.kind)) throw bad(`every file needs a path and a kind (${FILE_KINDS.join(', ')})`);
      if (file.encoding === 'base64' && !BASE64.test(String(file.content))) throw bad(`the file ${file.path} is not valid base64`);
      if (file.encoding === 'base64' ? typeof file.content !== 'string' : typeof files[file.filePath ?? ''] !== 'string') throw bad(`the file ${file.path} is not in the package`);
    }
    return skill;
  });
}

export async function importCompany(input: unknown, ctx: SkillsContext) {
  kernelOnly(ctx);
  const { mode, strategy, data, files } = input as ImportInput;
  const companyId = ctx.invocation.companyId ?? null;
  const skills = skillsOf(data, files);
  if (skills.length === 0) return { plan: [], ids: { skills: {} } };
  // A company-local skill belongs to the target company (a preview into a new one has no id yet).
  const targetKey = (skill: SkillData) => (skill.local ? localKey(companyId ?? '00000000-0000-0000-0000-000000000000', skill.slug) : skill.key);
  const existing = new Set<string>(companyId
    ? (await ctx.db.query('select key from company_skills where company_id = $1 and key in (select jsonb_array_elements_text($2::jsonb))',
      [companyId, JSON.stringify(skills.map(targetKey))])).rows.map((row) => String(row.key))
    : []);
  // A preview into a new company has no company to ask about yet (its policy will be the
  // default one); the apply, which runs in the new company, asks.
  const asks = companyId !== null;
  let refusal: string | null = null;
  try {
    if (asks) await assertMayChangeSkills(ctx);
  } catch (error) {
    refusal = (error as PluginError).message;
  }
  const plan: PlanItem[] = [];
  const ids: Record<string, string | null> = {};
  const toWrite: SkillData[] = [];
  for (const skill of skills) {
    const key = targetKey(skill);
    const base = { kind: 'skill' as const, key: skill.key, name: skill.name, ...(key !== skill.key && companyId ? { targetName: key } : {}) };
    ids[skill.key] = companyId ? key : null;
    let reason = refusal;
    if (!reason && asks) {
      try {
        await assertPolicyAllows(ctx, 'skills.import', { skillKey: key, sourceType: 'external_package', sourceLocator: 'company-package' });
      } catch (error) {
        reason = (error as PluginError).message;
      }
    }
    if (reason) plan.push({ ...base, action: 'skip', reason });
    else if (!existing.has(key)) { plan.push({ ...base, action: 'create' }); toWrite.push(skill); }
    else if (strategy === 'replace') { plan.push({ ...base, action: 'update' }); toWrite.push(skill); }
    else plan.push({ ...base, action: 'skip', reason: `a skill with the key ${key} exists${strategy === 'rename' ? ' (skills are matched by key and cannot be renamed)' : ''}` });
  }
  if (mode === 'preview') return { plan, ids: { skills: ids } };
  for (const skill of toWrite) {
    const skillFiles: SkillFile[] = skill.files.map((file) => (file.encoding === 'base64'
      ? { path: file.path, kind: file.kind, encoding: 'base64' as const, content: file.content! }
      : { path: file.path, kind: file.kind, encoding: 'utf8' as const, content: files[file.filePath!]! }));
    await saveSkill(ctx.db, companyId!, {
      key: targetKey(skill), slug: skill.slug, name: skill.name, description: skill.description ?? null, markdown: files[skill.markdownPath]!,
      sourceType: skill.sourceType, sourceLocator: skill.sourceLocator ?? null, sourceRef: skill.sourceRef ?? null, sourceCommit: skill.sourceCommit ?? null,
      // What the files are, never what the package says they are.
      trustLevel: trustLevel(skillFiles), editable: skill.editable === true, required: skill.required === true,
      metadata: { ...(skill.metadata && typeof skill.metadata === 'object' ? skill.metadata : {}), importedFrom: 'company-package' },
      files: skillFiles,
    });
  }
  const count = (action: string) => plan.filter((item) => item.action === action).length;
  if (toWrite.length) await ctx.activity.record({ action: 'skills.imported', entityType: 'company', entityId: companyId!, details: { created: count('create'), updated: count('update'), skipped: count('skip') } });
  return { plan, ids: { skills: ids } };
}
