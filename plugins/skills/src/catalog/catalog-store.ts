import type { DatabaseCapability } from '@keel/sdk/plugin';
import type { SkillRecord } from '../skill-store.ts';
import type { CatalogEntry } from './catalog-content.ts';

type Row = Record<string, unknown>;

/**
 * The hash of an installed copy, computed in SQL exactly as `contentHashOf` computes the
 * catalog's: SHA-256 over the `sha256sum` listing of its files, by path in byte order.
 */
export const INSTALLED_HASH_SQL = `(select encode(sha256(convert_to(coalesce(string_agg(f.sha256 || '  ' || f.path || E'\\n', '' order by f.path collate "C"), ''), 'UTF8')), 'hex')
   from skill_files f where f.skill_id = s.id)`;

/** Company skills with their installed hash (`installed_hash`); `where` is a condition on `s`. */
export async function skillsWithHash(db: DatabaseCapability, where: string, params: unknown[], lock = false): Promise<Row[]> {
  const { rows } = await db.query(`select s.*, ${INSTALLED_HASH_SQL} as installed_hash from company_skills s where ${where}${lock ? ' for update of s' : ''}`, params);
  return rows;
}

/** The stored files of a skill with content, by path. */
export async function storedFiles(db: DatabaseCapability, skillId: string): Promise<Row[]> {
  const { rows } = await db.query('select path, kind, encoding, content, size_bytes, sha256 from skill_files where skill_id = $1 order by path collate "C"', [skillId]);
  return rows;
}

/** What an install of a catalog skill stores: read-only when bundled, editable (locally modifiable) when optional. */
export function catalogRecord(entry: CatalogEntry, slug: string): SkillRecord {
  const { skill } = entry;
  return {
    key: skill.key,
    slug,
    name: skill.name,
    description: skill.description,
    markdown: entry.markdown,
    sourceType: 'catalog',
    sourceLocator: skill.source?.url ?? skill.id,
    sourceRef: skill.source?.ref ?? null,
    sourceCommit: skill.source?.commit ?? null,
    trustLevel: skill.trustLevel,
    editable: skill.kind === 'optional',
    required: skill.required,
    metadata: {
      sourceKind: skill.kind === 'bundled' ? 'service_bundled' : 'catalog',
      catalogId: skill.id,
      catalogKey: skill.key,
      catalogKind: skill.kind,
      category: skill.category,
      originHash: skill.contentHash,
      ...(skill.source ? {
        owner: skill.source.owner, repo: skill.source.repo, ref: skill.source.ref, trackingRef: skill.source.ref, commit: skill.source.commit,
        sources: [{ kind: 'github-dir', repo: `${skill.source.owner}/${skill.source.repo}`, path: skill.source.path, commit: skill.source.commit, trackingRef: skill.source.ref, hostname: skill.source.hostname, url: skill.source.url }],
      } : {}),
    },
    files: entry.contents,
  };
}

