import { PluginError, type RouteRequest } from '@keel/sdk/plugin';
import { authorise } from '../authority.ts';
import type { SkillsContext } from '../context.ts';
import { policySourceType } from '../skill-store.ts';
import { catalogEntryOf, type CatalogEntry } from './catalog-content.ts';
import { saveSkill } from '../skill-store.ts';
import { catalogRecord, skillsWithHash } from './catalog-store.ts';
import { assertCatalogAuditPasses, catalogPolicyResource, storedSkillJson } from './install-route.ts';
import { auditInstalled, originHashOf } from './installed-audit.ts';
import { upstreamStatus } from './upstream-status.ts';

type Row = Record<string, unknown>;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A skill of the path's company with its installed hash; another company's skill is not found, like an unknown id. */
async function skillOf(req: RouteRequest, ctx: SkillsContext, lock = false): Promise<Row> {
  const skillId = req.params.skillId!;
  const [row] = UUID.test(skillId) ? await skillsWithHash(ctx.db, 's.id = $1 and s.company_id = $2', [skillId, req.companyId], lock) : [];
  if (!row) throw new PluginError(404, 'skill_not_found', 'Skill not found');
  return row;
}

/** The catalog entry of a catalog-managed skill; 422 for any other skill, 409 when the catalog no longer ships it. */
function managedEntry(row: Row, what: string): CatalogEntry {
  if (row.source_type !== 'catalog') throw new PluginError(422, 'skill_not_catalog_managed', `Only catalog skills can be ${what}; this skill came from ${String(row.source_type)}`, { sourceType: row.source_type });
  const entry = catalogEntryOf(row);
  if (!entry) throw new PluginError(409, 'catalog_skill_missing', 'The catalog no longer ships this skill', { key: row.key });
  return entry;
}

function statusOf(row: Row, entry: CatalogEntry | null) {
  const installedHash = String(row.installed_hash);
  const originHash = originHashOf(row);
  const latestHash = entry?.skill.contentHash ?? null;
  const locallyModified = originHash !== null && installedHash !== originHash;
  const updateAvailable = latestHash !== null && latestHash !== originHash;
  return {
    skillId: row.id,
    key: row.key,
    sourceType: row.source_type,
    supported: true,
    catalogSkillId: entry?.skill.id ?? ((row.metadata ?? {}) as Row).catalogId ?? null,
    catalogKind: entry?.skill.kind ?? null,
    installedHash,
    originHash,
    latestHash,
    pinnedCommit: row.source_commit ?? null,
    latestCommit: entry?.skill.source?.commit ?? null,
    updateAvailable,
    locallyModified,
    status: !entry ? 'not_in_catalog' : updateAvailable ? 'update_available' : 'up_to_date',
    // Local modifications hold an update until it is forced (the audit may still block it).
    hold: locallyModified ? { reason: 'local_modifications', forceable: true } : null,
  };
}

/**
 * GET .../skills/{skillId}/update-status: a catalog skill against the shipped catalog version, a
 * repository import against the commit its tracking ref names upstream now.
 */
export async function skillUpdateStatus(req: RouteRequest, ctx: SkillsContext): Promise<unknown> {
  const row = await skillOf(req, ctx);
  if (row.source_type !== 'catalog') {
    return await upstreamStatus(ctx, row)
      ?? { skillId: row.id, key: row.key, sourceType: row.source_type, supported: false, reason: 'Update status is tracked for catalog skills and repository imports; this skill has no upstream to compare with' };
  }
  return statusOf(row, catalogEntryOf(row));
}

/**
 * POST .../skills/{skillId}/install-update {force}: replaces the installed copy with the
 * shipped catalog version. A failing audit (of the installed copy or of the new version)
 * blocks it whatever `force` says; local modifications hold it unless `force`.
 */
export async function installSkillUpdate(req: RouteRequest, ctx: SkillsContext): Promise<unknown> {
  const force = (req.body as { force?: boolean } | null)?.force === true;
  const row = await skillOf(req, ctx, true);
  const entry = managedEntry(row, 'updated here');
  await authorise(ctx, 'skills.update', catalogPolicyResource(entry, String(row.id)));
  const audit = await auditInstalled(ctx, row);
  if (audit.verdict === 'fail') throw new PluginError(422, 'skill_audit_failed', 'The installed skill fails the audit; the update is blocked (force does not override a failing audit)', { audit });
  assertCatalogAuditPasses(entry);
  const status = statusOf(row, entry);
  if (status.locallyModified && !force) {
    throw new PluginError(409, 'skill_update_held', 'The installed skill has local modifications; pass force to replace them with the catalog version', { installedHash: status.installedHash, originHash: status.originHash, latestHash: status.latestHash });
  }
  if (!status.updateAvailable && !status.locallyModified) {
    return { action: 'unchanged', skill: await storedSkillJson(ctx, req.companyId!, row), catalogSkill: entry.skill, warnings: [] };
  }
  const { row: saved } = await saveSkill(ctx.db, req.companyId!, catalogRecord(entry, String(row.slug)));
  await ctx.activity.record({
    action: 'company.skill_updated', entityType: 'company_skill', entityId: String(row.id),
    details: { key: row.key, catalogSkillId: entry.skill.id, previousOriginHash: status.originHash, originHash: entry.skill.contentHash, forced: force && status.locallyModified },
  });
  const warnings = status.locallyModified ? ['Local modifications were replaced by the catalog version'] : [];
  return { action: 'updated', skill: await storedSkillJson(ctx, req.companyId!, saved), catalogSkill: entry.skill, warnings };
}

/** POST .../skills/{skillId}/reset {force}: restores the shipped catalog files; discarding local modifications needs `force`. */
export async function resetSkill(req: RouteRequest, ctx: SkillsContext): Promise<unknown> {
  const force = (req.body as { force?: boolean } | null)?.force === true;
  const row = await skillOf(req, ctx, true);
  const entry = managedEntry(row, 'reset');
  await authorise(ctx, 'skills.reset', catalogPolicyResource(entry, String(row.id)));
  assertCatalogAuditPasses(entry);
  const status = statusOf(row, entry);
  if (status.locallyModified && !force) {
    throw new PluginError(409, 'skill_reset_held', 'The installed skill has local modifications; pass force to discard them', { installedHash: status.installedHash, originHash: status.originHash });
  }
  if (row.installed_hash === entry.skill.contentHash && status.originHash === entry.skill.contentHash) {
    return { action: 'unchanged', skill: await storedSkillJson(ctx, req.companyId!, row), catalogSkill: entry.skill, warnings: [] };
  }
  const { row: saved } = await saveSkill(ctx.db, req.companyId!, catalogRecord(entry, String(row.slug)));
  await ctx.activity.record({
    action: 'company.skill_reset', entityType: 'company_skill', entityId: String(row.id),
    details: { key: row.key, catalogSkillId: entry.skill.id, previousInstalledHash: status.installedHash, originHash: entry.skill.contentHash, discardedLocalModifications: status.locallyModified },
  });
  return { action: 'reset', skill: await storedSkillJson(ctx, req.companyId!, saved), catalogSkill: entry.skill, warnings: [] };
}

/** POST .../skills/{skillId}/audit: local-path and catalog skills only. */
export async function auditSkill(req: RouteRequest, ctx: SkillsContext): Promise<unknown> {
  const row = await skillOf(req, ctx);
  if (row.source_type !== 'catalog' && row.source_type !== 'local_path') {
    throw new PluginError(422, 'skill_audit_unsupported', `Only local-path and catalog skills can be audited; this skill came from ${String(row.source_type)}`, { sourceType: row.source_type });
  }
  const metadata = (row.metadata ?? {}) as Row;
  await authorise(ctx, 'skills.test', { skillId: String(row.id), skillKey: String(row.key), sourceType: policySourceType(metadata.sourceKind as string, String(row.source_type)) });
  const audit = await auditInstalled(ctx, row);
  await ctx.activity.record({ action: 'company.skill_audited', entityType: 'company_skill', entityId: String(row.id), details: { key: row.key, verdict: audit.verdict, codes: audit.codes, scanVersion: audit.scanVersion } });
  return { skillId: row.id, key: row.key, ...audit };
}
