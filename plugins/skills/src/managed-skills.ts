import { PluginError } from '@keel/sdk/plugin';
import type { SkillsContext } from './context.ts';
import { SKILL_FILE } from './skill-file/inventory.ts';
import { fileInventories, saveSkill, skillJson } from './skill-store.ts';

type Row = Record<string, unknown>;

/** The key of a plugin's managed skill: its own namespace, which no company-made key shares. */
export const managedSkillKey = (plugin: string, slug: string) => `plugin/${plugin}/${slug}`;

/**
 * Service `managed-skill` (callers granted `skills.managed`): installs the calling plugin's skill
 * `slug` in the calling company from the SKILL.md the plugin ships, keyed `plugin/<plugin>/<slug>`,
 * read-only and marked `metadata.managedBy {plugin, key}`. A later call with other markdown
 * replaces it (a new version of the plugin ships new text); the same markdown changes nothing. A
 * skill of that key that this plugin does not manage (an import that chose the key) is never
 * overwritten: 409 `skill_key_taken`.
 */
export async function managedSkillService(input: unknown, ctx: SkillsContext) {
  const body = input as { slug: string; name: string; description?: string | null; markdown: string };
  const plugin = ctx.invocation.caller?.plugin;
  if (!plugin) throw new PluginError(403, 'plugin_caller_required', 'Only a plugin can install a skill it manages.');
  const companyId = ctx.invocation.companyId!;
  const key = managedSkillKey(plugin, body.slug);
  const { rows } = await ctx.db.query('select * from company_skills where company_id = $1 and key = $2 for update', [companyId, key]);
  const current = rows[0] as Row | undefined;
  if (current) {
    const owner = ((current.metadata as Row | null)?.managedBy as Row | undefined)?.plugin;
    if (owner !== plugin) throw new PluginError(409, 'skill_key_taken', `A skill with key ${key} exists that ${plugin} does not manage`, { key });
    if (current.markdown === body.markdown && current.name === body.name) return { skill: await view(ctx, companyId, current), changed: false };
  }
  const { row, created } = await saveSkill(ctx.db, companyId, {
    key, slug: body.slug, name: body.name, description: body.description ?? null, markdown: body.markdown,
    sourceType: 'local_path', sourceLocator: null, sourceRef: null, sourceCommit: null, trustLevel: 'markdown_only',
    editable: false, required: false, metadata: { sourceKind: 'service_bundled', managedBy: { plugin, key: body.slug } },
    files: [{ path: SKILL_FILE, kind: 'skill', encoding: 'utf8', content: body.markdown }],
  });
  await ctx.activity.record({
    action: created ? 'company.skill_created' : 'company.skill_updated', entityType: 'company_skill', entityId: String(row.id),
    details: { key, slug: body.slug, name: body.name, managedBy: { plugin, key: body.slug } },
  });
  return { skill: await view(ctx, companyId, row), changed: true };
}

async function view(ctx: SkillsContext, companyId: string, row: Row) {
  const inventories = await fileInventories(ctx.db, companyId, [String(row.id)]);
  return skillJson(row, inventories.get(String(row.id)) ?? []);
}
