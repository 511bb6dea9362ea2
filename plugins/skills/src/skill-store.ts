import { PluginError, type DatabaseCapability } from '@keel/sdk/plugin';
import type { SkillFile } from './skill-file/skill-folder.ts';
import type { TrustLevel } from './skill-file/inventory.ts';
import type { PolicySourceType } from './authority.ts';

type Row = Record<string, unknown>;

/** Where a skill came from, as stored (`source_type`), and the finer `metadata.sourceKind`. */
export type SourceType = 'github' | 'skills_sh' | 'url' | 'local_path' | 'catalog';
export type SourceKind = 'service_bundled' | 'github' | 'skills_sh' | 'url' | 'local_path' | 'project_scan' | 'managed_local' | 'catalog';

export interface SkillRecord {
  key: string;
  slug: string;
  name: string;
  description: string | null;
  markdown: string;
  sourceType: SourceType;
  sourceLocator: string | null;
  sourceRef: string | null;
  sourceCommit: string | null;
  trustLevel: TrustLevel;
  editable: boolean;
  required: boolean;
  metadata: Record<string, unknown>;
  files: SkillFile[];
}

/** The policy's name for a stored source (the skill-policy contract). */
export function policySourceType(kind: string | undefined, sourceType: string): PolicySourceType {
  if (kind === 'managed_local') return 'generated';
  if (kind === 'local_path' || kind === 'project_scan') return 'workspace';
  if (sourceType === 'catalog' || kind === 'catalog' || kind === 'service_bundled') return 'catalog';
  if (sourceType === 'skills_sh') return 'external_package';
  if (sourceType === 'github' || sourceType === 'url') return 'git';
  if (sourceType === 'local_path') return 'workspace';
  return 'unknown';
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A skill of this company; another company's skill is not found, like an unknown id. */
export async function findSkill(db: DatabaseCapability, companyId: string, skillId: string, lock = false): Promise<Row> {
  if (!UUID.test(skillId)) throw new PluginError(404, 'skill_not_found', 'Skill not found');
  const { rows } = await db.query(`select * from company_skills where id = $1 and company_id = $2${lock ? ' for update' : ''}`, [skillId, companyId]);
  if (!rows[0]) throw new PluginError(404, 'skill_not_found', 'Skill not found');
  return rows[0];
}

export async function findSkillByKey(db: DatabaseCapability, companyId: string, key: string): Promise<Row | null> {
  const { rows } = await db.query('select * from company_skills where company_id = $1 and key = $2 for update', [companyId, key]);
  return rows[0] ?? null;
}

/**
 * Inserts a new skill or replaces an existing one of the same key, files and all, in one
 * statement: the row (inserted, or replaced on its key),
 * files no longer shipped removed, the others upserted with size and sha256 computed by
 * PostgreSQL. One statement is atomic on its own, so the bundled re-import of the skill
 * list (which runs without a transaction) never leaves a skill with half of its files.
 */
export async function saveSkill(db: DatabaseCapability, companyId: string, record: SkillRecord): Promise<{ row: Row; created: boolean }> {
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

/** Files go in as one jsonb list; size and sha256 are computed by PostgreSQL (the sandbox has no crypto). */
export async function writeFiles(db: DatabaseCapability, companyId: string, skillId: string, files: readonly SkillFile[]): Promise<void> {
  if (files.length === 0) return;
  await db.query(
    `insert into skill_files (skill_id, company_id, path, kind, encoding, content, size_bytes, sha256)
     select $1, $2, f.path, f.kind, f.encoding, f.content, octet_length(b.bytes), encode(sha256(b.bytes), 'hex')
       from jsonb_to_recordset($3::jsonb) as f(path text, kind text, encoding text, content text)
       cross join lateral (select case when f.encoding = 'base64' then decode(f.content, 'base64') else convert_to(f.content, 'UTF8') end as bytes) b
     on conflict (skill_id, path) do update set kind = excluded.kind, encoding = excluded.encoding, content = excluded.content,
       size_bytes = excluded.size_bytes, sha256 = excluded.sha256`,
    [skillId, companyId, JSON.stringify(files)],
  );
}

export async function fileInventories(db: DatabaseCapability, companyId: string, skillIds: string[]): Promise<Map<string, Row[]>> {
  const out = new Map<string, Row[]>();
  if (skillIds.length === 0) return out;
  const { rows } = await db.query(
    `select skill_id, path, kind, size_bytes, sha256 from skill_files
      where company_id = $1 and skill_id in (select jsonb_array_elements_text($2::jsonb)::uuid) order by skill_id, path`,
    [companyId, JSON.stringify(skillIds)],
  );
  for (const row of rows) {
    const list = out.get(String(row.skill_id)) ?? [];
    list.push(row);
    out.set(String(row.skill_id), list);
  }
  return out;
}

const iso = (value: unknown) => (value instanceof Date ? value.toISOString() : value === null || value === undefined ? null : new Date(String(value)).toISOString());

/** Why a skill cannot be edited, or null when it can. */
export function editableReason(row: Row): string | null {
  if (row.editable === true) return null;
  const kind = (row.metadata as Row | null)?.sourceKind;
  if (kind === 'service_bundled') return 'Bundled skills are read-only';
  if (row.source_type === 'catalog') return 'Catalog skills are managed by the catalog; reset or update them instead';
  return 'Imported skills are read-only; import them again to update them';
}

export function skillJson(row: Row, files: Row[]): Record<string, unknown> {
  return {
    id: row.id,
    companyId: row.company_id,
    key: row.key,
    slug: row.slug,
    name: row.name,
    description: row.description,
    sourceType: row.source_type,
    sourceLocator: row.source_locator,
    sourceRef: row.source_ref,
    sourceCommit: row.source_commit,
    trustLevel: row.trust_level,
    compatibility: row.compatibility,
    required: row.required,
    editable: row.editable,
    editableReason: editableReason(row),
    metadata: row.metadata ?? {},
    fileInventory: files.map((file) => ({ path: file.path, kind: file.kind, sizeBytes: Number(file.size_bytes), sha256: file.sha256 })),
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}
