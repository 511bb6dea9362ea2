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

/**
 * Writes a skill and its files in one statement: the row (inserted, or replaced on its key),
 * files no longer shipped removed, the others upserted with size and sha256 computed by
 * PostgreSQL. One statement is atomic on its own, so the bundled re-import of the skill list
 * (which runs without a transaction) never leaves a skill with half of its files.
 */
export async function saveCatalogSkill(db: DatabaseCapability, companyId: string, record: SkillRecord): Promise<{ row: Row; created: boolean }> {
  const { rows } = await db.query(
    `with skill as (
       insert into company_skills (company_id, key, slug, name, description, markdown, source_type, source_locator, source_ref, source_commit,
                                   trust_level, editable, required, metadata)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::jsonb)
       on conflict (company_id, key) do update set slug = excluded.slug, name = excluded.name, description = excluded.description,
         markdown = excluded.markdown, source_type = excluded.source_type, source_locator = excluded.source_locator,
         source_ref = excluded.source_ref, source_commit = excluded.source_commit, trust_level = excluded.trust_level,
         editable = excluded.editable, required = excluded.required, metadata = excluded.metadata, updated_at = now()
       returning *, (xmax = 0) as created),
     incoming as (
       select f.path, f.kind, f.encoding, f.content, case when f.encoding = 'base64' then decode(f.content, 'base64') else convert_to(f.content, 'UTF8') end as bytes
         from jsonb_to_recordset($15::jsonb) as f(path text, kind text, encoding text, content text)),
     stale as (
       delete from skill_files where skill_id = (select id from skill) and path not in (select path from incoming)),
     written as (
       insert into skill_files (skill_id, company_id, path, kind, encoding, content, size_bytes, sha256)
       select (select id from skill), $1, i.path, i.kind, i.encoding, i.content, octet_length(i.bytes), encode(sha256(i.bytes), 'hex') from incoming i
       on conflict (skill_id, path) do update set kind = excluded.kind, encoding = excluded.encoding, content = excluded.content,
         size_bytes = excluded.size_bytes, sha256 = excluded.sha256)
     select * from skill`,
    [companyId, record.key, record.slug, record.name, record.description, record.markdown, record.sourceType, record.sourceLocator,
      record.sourceRef, record.sourceCommit, record.trustLevel, record.editable, record.required, JSON.stringify(record.metadata),
      JSON.stringify(record.files)],
  );
  const row = rows[0]!;
  return { row, created: row.created === true };
}
