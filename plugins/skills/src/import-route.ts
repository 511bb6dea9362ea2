import { PluginError, respond, type RouteRequest } from '@keel/sdk/plugin';
import { assertMayChangeSkills, assertPolicyAllows, type PolicySourceType } from './authority.ts';
import type { SkillsContext } from './context.ts';
import type { SkillFolder } from './skill-file/skill-folder.ts';
import { importedKey, localKey } from './skill-file/skill-shape.ts';
import { fileInventories, findSkillByKey, saveSkill, skillJson, type SkillRecord, type SourceKind, type SourceType } from './skill-store.ts';
import { fetchRepositorySkills, resolveRepository } from './sources/github-import.ts';
import { readLocalSkills } from './sources/local-import.ts';
import { fetchRawSkill, rawGithubParts } from './sources/raw-url-import.ts';
import { parseUrl } from './sources/url-parts.ts';
import { parseSource, SourceError, type SourceLocator } from './sources/source-locator.ts';

/** A skill ready to store, and where it came from. */
export interface ImportCandidate { folder: SkillFolder; key: string; sourceType: SourceType; sourceKind: SourceKind; locator: string | null; ref: string | null; commit: string | null; sourceMetadata: Record<string, unknown> }

interface Resolved { candidates: ImportCandidate[]; source: Record<string, unknown>; warnings: string[] }

export function policySource(locator: SourceLocator): { sourceType: PolicySourceType; sourceLocator: string } {
  if (locator.form === 'local') return { sourceType: 'workspace', sourceLocator: locator.path };
  if (locator.form === 'url') return { sourceType: 'git', sourceLocator: locator.url };
  if (locator.sourceKind === 'skills_sh') return { sourceType: 'external_package', sourceLocator: locator.original.trim() };
  return { sourceType: 'git', sourceLocator: `https://github.com/${locator.owner}/${locator.repo}` };
}

async function resolve(ctx: SkillsContext, companyId: string, locator: SourceLocator): Promise<Resolved> {
  const warnings: string[] = [];
  if (locator.form === 'local') {
    const found = await readLocalSkills(ctx, locator.path, warnings);
    return {
      source: { type: 'local_path', locator: locator.path, path: locator.path },
      warnings,
      candidates: found.map(({ folder, path }) => ({
        folder, key: folder.shape.keyOverride ?? localKey(companyId, folder.shape.slug), sourceType: 'local_path', sourceKind: 'local_path',
        locator: path, ref: null, commit: null, sourceMetadata: { sources: [{ kind: 'local_path', path }] },
      })),
    };
  }
  if (locator.form === 'url') {
    const folder = await fetchRawSkill(ctx, locator.url);
    const github = rawGithubParts(locator.url);
    const key = folder.shape.keyOverride ?? (github ? importedKey(github.owner, github.repo, folder.shape.slug) : localKey(companyId, folder.shape.slug));
    const hostname = parseUrl(locator.url)?.hostname ?? null;
    return {
      source: { type: 'url', locator: locator.url, url: locator.url, hostname, ...(github ? { owner: github.owner, repo: github.repo, ref: github.ref, path: github.path } : {}) },
      warnings: folder.warnings,
      candidates: [{
        folder, key, sourceType: 'url', sourceKind: 'url', locator: locator.url, ref: github?.ref ?? null, commit: null,
        sourceMetadata: { sources: [{ kind: 'url', url: locator.url, rawUrl: locator.url, hostname }], ...(github ? { owner: github.owner, repo: github.repo, ref: github.ref } : {}) },
      }],
    };
  }
  const resolved = await resolveRepository(ctx, locator);
  const skills = await fetchRepositorySkills(ctx, locator, resolved, warnings);
  const repository = `https://${resolved.hostname}/${resolved.owner}/${resolved.repo}`;
  const recorded = locator.sourceKind === 'skills_sh' ? locator.original.trim() : repository;
  return {
    source: {
      type: locator.sourceKind, locator: recorded, hostname: resolved.hostname, owner: resolved.owner, repo: resolved.repo, ref: resolved.ref,
      trackingRef: resolved.ref, commit: resolved.commit, path: resolved.path, url: repository, defaultBranch: resolved.defaultBranch,
    },
    warnings,
    candidates: skills.map(({ folder, path }) => ({
      folder,
      key: folder.shape.keyOverride ?? importedKey(resolved.owner, resolved.repo, folder.shape.slug),
      sourceType: locator.sourceKind, sourceKind: locator.sourceKind, locator: recorded, ref: resolved.ref, commit: resolved.commit,
      sourceMetadata: {
        owner: resolved.owner, repo: resolved.repo, ref: resolved.ref, trackingRef: resolved.ref, commit: resolved.commit,
        sources: [{ kind: 'github-dir', repo: `${resolved.owner}/${resolved.repo}`, path, commit: resolved.commit, trackingRef: resolved.ref, hostname: resolved.hostname, url: repository }],
      },
    })),
  };
}

export function recordOf(candidate: ImportCandidate): SkillRecord {
  const { folder } = candidate;
  return {
    key: candidate.key, slug: folder.shape.slug, name: folder.shape.name, description: folder.shape.description, markdown: folder.markdown,
    sourceType: candidate.sourceType, sourceLocator: candidate.locator, sourceRef: candidate.ref, sourceCommit: candidate.commit,
    trustLevel: folder.trustLevel, editable: false, required: false,
    metadata: { ...folder.shape.metadata, ...candidate.sourceMetadata, sourceKind: candidate.sourceKind },
    files: folder.files,
  };
}

/** Why an existing skill must not be replaced by this import, or null. */
export function replaceRefusal(existing: Record<string, unknown>): string | null {
  const kind = (existing.metadata as Record<string, unknown> | null)?.sourceKind;
  if (existing.editable === true) return 'a skill created in this company has that key';
  if (kind === 'service_bundled' || existing.source_type === 'catalog') return 'a catalog skill has that key';
  return null;
}

/** POST /api/companies/{companyId}/skills/import {source}. */
export async function importSkills(req: RouteRequest, ctx: SkillsContext): Promise<unknown> {
  const companyId = req.companyId!;
  const { source } = req.body as { source: string };
  let locator: SourceLocator;
  try {
    locator = parseSource(source);
  } catch (error) {
    if (error instanceof SourceError) throw new PluginError(422, 'invalid_skill_source', error.message);
    throw error;
  }
  await assertMayChangeSkills(ctx);
  const policy = policySource(locator);
  await assertPolicyAllows(ctx, 'skills.import', policy);
  const resolved = await resolve(ctx, companyId, locator);
  const imported: Record<string, unknown>[] = [];
  const warnings = [...resolved.warnings];
  for (const candidate of resolved.candidates) {
    // Asked again per skill, now that its key is known (rules naming skillKeys).
    await assertPolicyAllows(ctx, 'skills.import', { ...policy, skillKey: candidate.key });
    const existing = await findSkillByKey(ctx.db, companyId, candidate.key);
    const refusal = existing ? replaceRefusal(existing) : null;
    if (refusal) { warnings.push(`${candidate.key}: not imported, ${refusal}`); continue; }
    const { row } = await saveSkill(ctx.db, companyId, recordOf(candidate));
    const inventories = await fileInventories(ctx.db, companyId, [String(row.id)]);
    imported.push(skillJson(row, inventories.get(String(row.id)) ?? []));
  }
  if (imported.length === 0) throw new PluginError(422, 'skill_import_empty', 'No skill was imported', { warnings });
  await ctx.activity.record({
    action: 'company.skills_imported', entityType: 'company', entityId: companyId,
    details: { source: resolved.source.locator ?? null, sourceType: resolved.source.type, count: imported.length, skills: imported.map((skill) => ({ id: skill.id, key: skill.key, name: skill.name })) },
  });
  return respond(201, { imported, warnings, source: resolved.source });
}
