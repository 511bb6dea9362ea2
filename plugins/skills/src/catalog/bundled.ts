import type { SkillsContext } from '../context.ts';
import { CATALOG } from './catalog-content.ts';
import { saveSkill } from '../skill-store.ts';
import { catalogRecord, skillsWithHash } from './catalog-store.ts';

/**
 * Bundled skills are re-imported on the writes that point agents at them, never on a read:
 * when an agent of the company is created or changed (an awaited subscriber, so the answer of
 * the agent's create comes after) and when an agent's skills are synced.
 * The required ones (the base skill) are installed if missing, and every bundled skill the
 * company has is brought to the shipped bytes (bundled copies are read-only, so nothing local
 * is lost). Each skill is written by one atomic statement, and only when it is missing or
 * differs, so a re-import of a company already in step writes nothing.
 */
export async function reimportBundledSkills(ctx: SkillsContext, companyId: string): Promise<void> {
  const bundled = CATALOG.filter(({ skill }) => skill.kind === 'bundled');
  const installed = await skillsWithHash(ctx.db, `s.company_id = $1 and s.key in (select jsonb_array_elements_text($2::jsonb))`, [companyId, JSON.stringify(bundled.map(({ skill }) => skill.key))]);
  const byKey = new Map(installed.map((row) => [String(row.key), row]));
  for (const entry of bundled) {
    const row = byKey.get(entry.skill.key);
    if (!row && !entry.skill.required) continue;
    // Someone else's skill under a catalog key (an import) is not taken over here.
    if (row && row.source_type !== 'catalog') continue;
    const origin = ((row?.metadata ?? {}) as Record<string, unknown>).originHash;
    if (row && row.installed_hash === entry.skill.contentHash && origin === entry.skill.contentHash) continue;
    const { row: saved, created } = await saveSkill(ctx.db, companyId, catalogRecord(entry, row ? String(row.slug) : entry.skill.slug));
    await ctx.activity.record({
      action: 'company.skills_imported', entityType: 'company', entityId: companyId,
      details: { source: entry.skill.id, sourceType: 'catalog', action: created ? 'created' : 'updated', reason: 'bundled_reimport', count: 1, skills: [{ id: saved.id, key: saved.key, name: saved.name }], contentHash: entry.skill.contentHash },
    });
  }
}

