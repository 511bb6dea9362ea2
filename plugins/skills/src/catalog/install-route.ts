import { PluginError, respond, type RouteRequest } from '@keel/sdk/plugin';
import { authorise } from '../authority.ts';
import type { SkillsContext } from '../context.ts';
import { fileInventories, skillJson } from '../skill-store.ts';
import { auditFiles } from './audit.ts';
import { catalogEntry } from './browse-routes.ts';
import { type CatalogEntry } from './catalog-content.ts';
import { saveSkill } from '../skill-store.ts';
import { catalogRecord, skillsWithHash } from './catalog-store.ts';
import { auditInstalled, originHashOf } from './installed-audit.ts';

type Row = Record<string, unknown>;

/** The policy resource of a catalog skill: external ones are named by their repository too. */
export function catalogPolicyResource(entry: CatalogEntry, skillId?: string) {
  const source = entry.skill.source;
  return {
    ...(skillId ? { skillId } : {}),
    skillKey: entry.skill.key,
    sourceType: 'catalog' as const,
    ...(source ? { sourceLocator: `https://${source.hostname}/${source.owner}/${source.repo}` } : {}),
  };
}

/** Refuses catalog content whose audit fails (force never overrides this). */
export function assertCatalogAuditPasses(entry: CatalogEntry): void {
  const audit = auditFiles(entry.contents.map((file) => ({ ...file, sizeBytes: entry.skill.files.find((f) => f.path === file.path)!.sizeBytes })), { installedHash: null, originHash: null });
  if (audit.verdict === 'fail') throw new PluginError(422, 'skill_audit_failed', `The catalog version of ${entry.skill.key} fails the audit`, { verdict: audit.verdict, codes: audit.codes, findings: audit.findings });
}

/** The JSON of a stored skill with its file inventory. */
export async function storedSkillJson(ctx: SkillsContext, companyId: string, row: Row): Promise<Record<string, unknown>> {
  const inventories = await fileInventories(ctx.db, companyId, [String(row.id)]);
  return skillJson(row, inventories.get(String(row.id)) ?? []);
}

/**
 * POST /api/companies/{companyId}/skills/install-catalog {catalogSkillId, slug?, force?}:
 * installs a catalog skill into the company's library (201, `created`), or refreshes the
 * installed copy (200, `updated` or `unchanged`). Local modifications of the installed copy
 * hold a refresh unless `force`. Agents are never attached here.
 */
export async function installCatalogSkill(req: RouteRequest, ctx: SkillsContext): Promise<unknown> {
  const companyId = req.companyId!;
  const body = req.body as { catalogSkillId: string; slug?: string | null; force?: boolean };
  const entry = catalogEntry(body.catalogSkillId);
  const slug = body.slug ?? entry.skill.slug;
  await authorise(ctx, 'skills.install', catalogPolicyResource(entry));
  assertCatalogAuditPasses(entry);
  const [existing] = await skillsWithHash(ctx.db, 's.company_id = $1 and s.key = $2', [companyId, entry.skill.key], true);
  const warnings: string[] = [];
  if (existing) {
    if (existing.source_type !== 'catalog' && body.force !== true) {
      throw new PluginError(409, 'skill_key_conflict', `A skill that did not come from the catalog already has key ${entry.skill.key}; pass force to replace it with the catalog version`, { skillId: existing.id, key: existing.key, sourceType: existing.source_type });
    }
    const originHash = originHashOf(existing);
    const modified = existing.source_type === 'catalog' && originHash !== null && existing.installed_hash !== originHash;
    if (existing.source_type === 'catalog') {
      // As for install-update: a copy whose audit fails is not refreshed, whatever force says (reset restores it).
      const audit = await auditInstalled(ctx, existing);
      if (audit.verdict === 'fail') throw new PluginError(422, 'skill_audit_failed', 'The installed skill fails the audit; the refresh is blocked (force does not override a failing audit; reset restores the catalog version)', { audit });
    }
    if (modified && body.force !== true) {
      throw new PluginError(409, 'skill_locally_modified', `The installed copy of ${entry.skill.key} has local modifications; pass force to replace them with the catalog version`, { skillId: existing.id, installedHash: existing.installed_hash, originHash });
    }
    if (existing.installed_hash === entry.skill.contentHash && originHash === entry.skill.contentHash && existing.slug === slug && existing.source_type === 'catalog') {
      return { action: 'unchanged', skill: await storedSkillJson(ctx, companyId, existing), catalogSkill: entry.skill, warnings };
    }
  }
  warnings.push(...await slugWarnings(ctx, companyId, entry.skill.key, slug));
  const { row, created } = await saveSkill(ctx.db, companyId, catalogRecord(entry, slug));
  const action = created ? 'created' : 'updated';
  await ctx.activity.record({
    action: 'company.skills_imported', entityType: 'company', entityId: companyId,
    details: { source: entry.skill.id, sourceType: 'catalog', action, count: 1, skills: [{ id: row.id, key: row.key, name: row.name }], contentHash: entry.skill.contentHash },
  });
  const answer = { action, skill: await storedSkillJson(ctx, companyId, row), catalogSkill: entry.skill, warnings };
  return created ? respond(201, answer) : answer;
}

/** A slug another skill of the company also uses cannot name either of them in desiredSkills. */
async function slugWarnings(ctx: SkillsContext, companyId: string, key: string, slug: string): Promise<string[]> {
  const { rows } = await ctx.db.query('select key from company_skills where company_id = $1 and slug = $2 and key <> $3 order by key', [companyId, slug, key]);
  return rows.length === 0 ? [] : [`The slug ${slug} is also used by ${rows.map((other) => String(other.key)).join(', ')}; refer to this skill by its key (${key}) or id`];
}
