import { PluginError } from '@keel/sdk/plugin';
import type { WorkContext } from './context.ts';
import { projectJson } from './json.ts';

/**
 * Service `managed-project` (callers granted `projects.managed`): the calling plugin's project
 * `key` in the calling company, made the first time with the name and description given and
 * marked `managedBy {plugin, key}`; later calls answer it as it is now (the board may have
 * renamed or archived it: a plugin never overwrites the company's edits). The caller is the
 * plugin the host names, so a plugin reaches only projects it manages.
 */
export async function managedProjectService(input: unknown, ctx: WorkContext) {
  const body = input as { key: string; name: string; description?: string | null };
  const plugin = ctx.invocation.caller?.plugin;
  if (!plugin) throw new PluginError(403, 'plugin_caller_required', 'Only a plugin can ask for a project it manages.');
  const companyId = ctx.invocation.companyId!;
  const find = () => ctx.db.query('select * from projects where company_id = $1 and managed_by_plugin = $2 and managed_key = $3', [companyId, plugin, body.key]);
  const existing = (await find()).rows[0];
  if (existing) return { project: projectJson(existing), created: false };
  const { rows } = await ctx.db.query(
    `insert into projects (company_id, name, description, managed_by_plugin, managed_key) values ($1, $2, $3, $4, $5)
     on conflict (company_id, managed_by_plugin, managed_key) where managed_by_plugin is not null do nothing returning *`,
    [companyId, body.name, body.description ?? null, plugin, body.key]);
  // Another call made it meanwhile (it committed while this one waited on the unique index).
  if (!rows[0]) return { project: projectJson((await find()).rows[0]!), created: false };
  const project = projectJson(rows[0]);
  await ctx.activity.record({
    action: 'project.created', entityType: 'project', entityId: String(project.id),
    details: { name: project.name, status: project.status, managedBy: { plugin, key: body.key } },
  });
  return { project, created: true };
}
