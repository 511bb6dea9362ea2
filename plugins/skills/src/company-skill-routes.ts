import { createOnce, PluginError, respond, type RouteRequest } from '@keel/sdk/plugin';
import { authorise } from './authority.ts';
import type { SkillsContext } from './context.ts';
import { utf8Length } from './skill-file/bytes.ts';
import { fileKind, MAX_SKILL_FILE_BYTES, SKILL_FILE, trustLevel } from './skill-file/inventory.ts';
import { safeSkillPath } from './skill-file/skill-folder.ts';
import { localKey, readSkillMarkdown, toSlug } from './skill-file/skill-shape.ts';
import { fileInventories, findSkill, policySourceType, saveSkill, skillJson, writeFiles } from './skill-store.ts';

type Row = Record<string, unknown>;
const companyOf = (req: RouteRequest) => req.companyId!;

/**
 * GET /api/companies/{companyId}/skills: every skill of the company, by name. A read writes
 * nothing: the bundled skills are installed when an agent is pointed at them (bundled.ts).
 */
export async function listSkills(req: RouteRequest, ctx: SkillsContext): Promise<unknown> {
  const companyId = companyOf(req);
  const { rows } = await ctx.db.query('select * from company_skills where company_id = $1 order by name, key', [companyId]);
  const inventories = await fileInventories(ctx.db, companyId, rows.map((row) => String(row.id)));
  const usage = await desiringAgentCounts(ctx, companyId);
  return rows.map((row) => ({ ...skillJson(row, inventories.get(String(row.id)) ?? []), attachedAgentCount: usage.get(String(row.key)) ?? 0 }));
}

async function desiringAgentCounts(ctx: SkillsContext, companyId: string): Promise<Map<string, number>> {
  const { rows } = await ctx.db.query(
    `select key, count(*)::int as agents from agent_skill_preferences, jsonb_array_elements_text(desired_skills) as key
      where company_id = $1 group by key`, [companyId]);
  return new Map(rows.map((row) => [String(row.key), Number(row.agents)]));
}

/** GET .../skills/{skillId}: the skill, its markdown and which agents desire it. */
export async function getSkill(req: RouteRequest, ctx: SkillsContext): Promise<unknown> {
  const companyId = companyOf(req);
  const row = await findSkill(ctx.db, companyId, req.params.skillId!);
  const inventories = await fileInventories(ctx.db, companyId, [String(row.id)]);
  const { rows: desiring } = await ctx.db.query(
    'select agent_id from agent_skill_preferences where company_id = $1 and desired_skills ? $2 order by agent_id', [companyId, row.key]);
  const agents = desiring.length ? await ctx.agents.list() : [];
  const byId = new Map(agents.map((agent) => [String(agent.id), agent]));
  const usedByAgents = desiring.map((entry) => byId.get(String(entry.agent_id))).filter((agent): agent is Record<string, unknown> => !!agent)
    .map((agent) => ({ id: agent.id, name: agent.name, urlKey: agent.urlKey, adapterType: agent.adapterType, desired: true }));
  return { ...skillJson(row, inventories.get(String(row.id)) ?? []), markdown: row.markdown, attachedAgentCount: usedByAgents.length, usedByAgents };
}

/** GET .../skills/{skillId}/files?path=: one file (SKILL.md by default); binary assets come as base64. */
export async function getSkillFile(req: RouteRequest, ctx: SkillsContext): Promise<unknown> {
  const companyId = companyOf(req);
  const row = await findSkill(ctx.db, companyId, req.params.skillId!);
  const path = typeof req.query.path === 'string' && req.query.path !== '' ? req.query.path : SKILL_FILE;
  if (!safeSkillPath(path)) throw new PluginError(400, 'invalid_skill_path', 'The path must be relative to the skill folder, without "..", empty segments or backslashes');
  const { rows } = await ctx.db.query('select * from skill_files where skill_id = $1 and company_id = $2 and path = $3', [row.id, companyId, path]);
  const file = rows[0];
  if (!file) throw new PluginError(404, 'skill_file_not_found', 'Skill file not found');
  return {
    skillId: row.id,
    path: file.path,
    kind: file.kind,
    encoding: file.encoding,
    content: file.content,
    sizeBytes: Number(file.size_bytes),
    sha256: file.sha256,
    markdown: /\.(md|markdown)$/i.test(String(file.path)),
    editable: row.editable === true,
  };
}

/** PATCH .../skills/{skillId}/files {path, content}: editable (managed) skills only. */
export async function patchSkillFile(req: RouteRequest, ctx: SkillsContext): Promise<unknown> {
  const companyId = companyOf(req);
  const body = req.body as { path: string; content: string };
  const current = await findSkill(ctx.db, companyId, req.params.skillId!, true);
  const metadata = (current.metadata ?? {}) as Row;
  await authorise(ctx, 'skills.edit', { skillId: String(current.id), skillKey: String(current.key), sourceType: policySourceType(metadata.sourceKind as string, String(current.source_type)), ...(current.source_locator ? { sourceLocator: String(current.source_locator) } : {}) });
  if (current.editable !== true) {
    const reason = metadata.sourceKind === 'service_bundled' ? 'Bundled skills cannot be edited' : 'This skill is read-only: only skills created in this company can be edited';
    throw new PluginError(422, 'skill_read_only', reason);
  }
  if (!safeSkillPath(body.path)) throw new PluginError(400, 'invalid_skill_path', 'The path must be relative to the skill folder, without "..", empty segments or backslashes');
  if (utf8Length(body.content) > MAX_SKILL_FILE_BYTES) throw new PluginError(413, 'skill_file_too_large', `Skill files may be at most ${MAX_SKILL_FILE_BYTES} bytes`);
  if (body.content.includes('\u0000')) throw new PluginError(400, 'skill_file_not_text', 'Skill files edited here must be text');
  const kind = fileKind(body.path);
  await writeFiles(ctx.db, companyId, String(current.id), [{ path: body.path, kind, encoding: 'utf8', content: body.content }]);
  let row = current;
  const { rows: kinds } = await ctx.db.query('select path, kind from skill_files where skill_id = $1', [current.id]);
  const level = trustLevel(kinds.map((file) => ({ path: String(file.path), kind: file.kind as never })));
  if (body.path === SKILL_FILE) {
    // The frontmatter may rename the skill; its key (company/<id>/<slug>) stays what it was.
    const shape = readSkillMarkdown(body.content, String(current.slug));
    const { rows } = await ctx.db.query(
      'update company_skills set markdown = $2, name = $3, description = $4, trust_level = $5, updated_at = now() where id = $1 returning *',
      [current.id, body.content, shape.name, shape.description, level]);
    row = rows[0]!;
  } else {
    const { rows } = await ctx.db.query('update company_skills set trust_level = $2, updated_at = now() where id = $1 returning *', [current.id, level]);
    row = rows[0]!;
  }
  await ctx.activity.record({ action: 'company.skill_file_updated', entityType: 'company_skill', entityId: String(row.id), details: { key: row.key, path: body.path } });
  return getSkillFile({ ...req, query: { path: body.path } }, ctx);
}

/** DELETE .../skills/{skillId}: bundled skills stay; agents that desired it keep the key and see it missing. */
export async function deleteSkill(req: RouteRequest, ctx: SkillsContext): Promise<unknown> {
  const companyId = companyOf(req);
  const row = await findSkill(ctx.db, companyId, req.params.skillId!, true);
  const metadata = (row.metadata ?? {}) as Row;
  await authorise(ctx, 'skills.remove', { skillId: String(row.id), skillKey: String(row.key), sourceType: policySourceType(metadata.sourceKind as string, String(row.source_type)), ...(row.source_locator ? { sourceLocator: String(row.source_locator) } : {}) });
  if (metadata.sourceKind === 'service_bundled' || row.required === true) throw new PluginError(422, 'skill_bundled', 'Bundled skills cannot be deleted');
  await ctx.db.query('delete from company_skills where id = $1', [row.id]);
  await ctx.activity.record({ action: 'company.skill_deleted', entityType: 'company_skill', entityId: String(row.id), details: { key: row.key, slug: row.slug, name: row.name } });
  return { ...skillJson(row, []), deleted: true };
}

/**
 * POST .../skills {name, slug?, description?}: an empty managed skill (editable), keyed
 * company/<companyId>/<slug>. With an Idempotency-Key, a retry answers the skill it made (200)
 * instead of 409 skill_exists, and writes nothing (createOnce).
 */
export async function createSkill(req: RouteRequest, ctx: SkillsContext): Promise<unknown> {
  const companyId = companyOf(req);
  return createOnce(ctx.db, {
    key: req.headers['idempotency-key'], companyId, kind: 'skill', request: req.body,
    load: async (id) => {
      const { rows } = await ctx.db.query('select * from company_skills where id = $1 and company_id = $2', [id, companyId]);
      if (!rows[0]) return null;
      const inventories = await fileInventories(ctx.db, companyId, [id]);
      return { ...skillJson(rows[0], inventories.get(id) ?? []), markdown: rows[0].markdown };
    },
    create: () => insertSkill(req, ctx),
  });
}

async function insertSkill(req: RouteRequest, ctx: SkillsContext) {
  const companyId = companyOf(req);
  const body = req.body as { name: string; slug?: string | null; description?: string | null };
  const name = body.name.trim();
  const slug = toSlug(body.slug ?? '') || toSlug(name);
  if (!slug) throw new PluginError(422, 'invalid_skill_slug', 'The skill needs a slug: give one, or a name with letters or digits');
  const key = localKey(companyId, slug);
  await authorise(ctx, 'skills.create', { skillKey: key, sourceType: 'generated' });
  const { rows: taken } = await ctx.db.query('select id from company_skills where company_id = $1 and key = $2', [companyId, key]);
  if (taken[0]) throw new PluginError(409, 'skill_exists', `A skill with key ${key} already exists`, { skillId: taken[0].id, key });
  const description = body.description?.trim() || null;
  const markdown = skeletonMarkdown(name, slug, description);
  const { row } = await saveSkill(ctx.db, companyId, {
    key, slug, name, description, markdown, sourceType: 'local_path', sourceLocator: null, sourceRef: null, sourceCommit: null,
    trustLevel: 'markdown_only', editable: true, required: false, metadata: { sourceKind: 'managed_local' },
    files: [{ path: SKILL_FILE, kind: 'skill', encoding: 'utf8', content: markdown }],
  });
  await ctx.activity.record({ action: 'company.skill_created', entityType: 'company_skill', entityId: String(row.id), details: { key, slug, name } });
  const inventories = await fileInventories(ctx.db, companyId, [String(row.id)]);
  return { id: String(row.id), answer: respond(201, { ...skillJson(row, inventories.get(String(row.id)) ?? []), markdown }) };
}

function skeletonMarkdown(name: string, slug: string, description: string | null): string {
  const quoted = (text: string) => JSON.stringify(text);
  const lines = ['---', `name: ${quoted(name)}`, `slug: ${slug}`];
  if (description) lines.push(`description: ${quoted(description)}`);
  lines.push('---', '', `# ${name}`, '');
  return lines.join('\n');
}
