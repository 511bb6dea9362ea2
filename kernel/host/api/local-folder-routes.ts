import type { Context } from 'koa';
import type { FolderManifest, PluginManifest } from '../../../sdk/plugin/manifest.ts';
import { iso, type Row } from '../../db/database.ts';
import type { RouteModule } from '../../http/app.ts';
import { KeelError, notFound } from '../../http/errors.ts';
import { declareRoutes } from '../../http/route-spec.ts';
import { bodyValidator } from '../../http/validate.ts';
import type { KernelServices } from '../../services.ts';
import { companyForRequest } from '../../tenancy/company-access.ts';
import { inspectFolder, realLocations, type FolderInspection } from '../folder-inspection.ts';
import { installFolderMounts } from '../folder-mounts.ts';
import { installFolderWatches } from '../folder-watch.ts';
import { REPO_ROOT } from '../plugin-sources.ts';
import type { ExtensionHost } from '../extension-host.ts';

const pathBody = bodyValidator<{ path: string }>({
  type: 'object', required: ['path'],
  properties: { path: { type: 'string', minLength: 1, maxLength: 4096 } },
});

interface Scope { companyId: string; row: Row; manifest: PluginManifest }

/**
 * Local-folder mounts of a plugin, per company (instance admins only): the declared folders
 * with their configuration, a folder's status, validation of a candidate path, and saving a
 * path. A path is saved only when it passes every check, and it is stored as its real path;
 * the worker refuses a mount whose real path has since changed.
 */
export const localFolderRoutes = (host: ExtensionHost): RouteModule => (router, kernel) => {
  installFolderMounts(host, kernel.db);
  const watches = installFolderWatches(host, kernel.db);
  const base = '/api/plugins/:pluginId/companies/:companyId/local-folders';
  const route = declareRoutes(router, kernel, 'Plugin local folders');

  route({ method: 'GET', path: base, auth: 'instance_admin', success: 200, summary: "A plugin's declared local folders and their paths for the company" }, async (ctx) => {
    const { companyId, row, manifest } = await scope(ctx, kernel);
    const stored = await storedMounts(kernel, row.key, companyId);
    const declared = manifest.folders ?? [];
    const folders = declared.map((folder) => {
      const mount = stored.get(folder.key);
      return { ...describe(folder), declared: true, configured: !!mount, path: mount?.path ?? null, updatedAt: mount ? iso(mount.updated_at) : null };
    });
    // Mounts kept from an earlier version whose manifest declared them; the worker ignores these.
    for (const [key, mount] of stored) {
      if (!declared.some((folder) => folder.key === key)) folders.push({ folderKey: key, access: null, description: null, declared: false, configured: true, path: mount.path, updatedAt: iso(mount.updated_at) });
    }
    ctx.body = { pluginKey: row.key, companyId, folders };
  });

  route({ method: 'GET', path: `${base}/:folderKey/status`, auth: 'instance_admin', success: 200, summary: "A local folder's configured path, checked now" }, async (ctx) => {
    const { companyId, row, manifest } = await scope(ctx, kernel);
    const folder = declaration(manifest, ctx.params.folderKey!);
    const mount = (await storedMounts(kernel, row.key, companyId)).get(folder.key);
    const status = mount
      ? await inspectFolder(mount.path, folder.access, await protectedLocations(kernel, row))
      : { path: null, realPath: null, readable: false, writable: false, healthy: false, problems: [{ code: 'not_configured', message: 'No path is configured for this company.' }], listing: null };
    if (mount && status.realPath && status.realPath !== mount.path) {
      // The stored path is a real path; a link placed on it since makes the worker refuse the mount.
      status.problems.push({ code: 'path_changed', message: 'The folder now resolves elsewhere (a link was placed on its path); configure it again.' });
      status.healthy = false;
    }
    ctx.body = { pluginKey: row.key, companyId, ...describe(folder), configured: !!mount, ...status, updatedAt: mount ? iso(mount.updated_at) : null, checkedAt: new Date().toISOString() };
  });

  route({
    method: 'POST', path: `${base}/:folderKey/validate`, auth: 'instance_admin', body: pathBody, success: 200,
    summary: 'Check a candidate path for a local folder; saves nothing',
  }, async (ctx, req) => {
    const { companyId, row, manifest } = await scope(ctx, kernel);
    const folder = declaration(manifest, ctx.params.folderKey!);
    const body = await req.body();
    const inspection = await inspectFolder(body.path, folder.access, await protectedLocations(kernel, row));
    ctx.state.skipAudit = true;
    ctx.body = { pluginKey: row.key, companyId, ...describe(folder), valid: inspection.healthy, ...inspection, checkedAt: new Date().toISOString() };
  });

  route({
    method: 'PUT', path: `${base}/:folderKey`, auth: 'instance_admin', body: pathBody, success: 200, errors: [422],
    summary: "Save a local folder's path for the company (only a path that passes every check)",
  }, async (ctx, req) => {
    const { companyId, row, manifest } = await scope(ctx, kernel);
    const folder = declaration(manifest, ctx.params.folderKey!);
    const body = await req.body();
    const inspection: FolderInspection = await inspectFolder(body.path, folder.access, await protectedLocations(kernel, row));
    if (!inspection.healthy || !inspection.realPath) {
      const first = inspection.problems[0]?.message ?? 'The folder cannot be used.';
      throw new KeelError(422, 'invalid_folder_path', `Local folder path refused: ${first}`, { details: { problems: inspection.problems } });
    }
    const saved = await kernel.db.transaction(async (tx) => {
      const previous = await tx.maybeOne<{ path: string }>('select path from plugin_folder_mounts where plugin_key = ? and company_id = ? and folder_key = ? for update', [row.key, companyId, folder.key]);
      const stored = await tx.maybeOne(
        `insert into plugin_folder_mounts (plugin_key, company_id, folder_key, path) values (?, ?, ?, ?)
         on conflict (plugin_key, company_id, folder_key) do update set path = excluded.path, updated_at = now() returning *`,
        [row.key, companyId, folder.key, inspection.realPath]);
      await kernel.activity.recordFor(ctx, tx, {
        companyId, action: 'plugin.local_folder_configured', entityType: 'plugin', entityId: row.key,
        details: { folderKey: folder.key, path: inspection.realPath, previousPath: previous?.path ?? null, access: folder.access },
      });
      return stored!;
    });
    // This process watches the new path at once; others within their resync interval.
    await watches.sync(row.key as string);
    ctx.body = { pluginKey: row.key, companyId, ...describe(folder), configured: true, ...inspection, path: saved.path, updatedAt: iso(saved.updated_at), checkedAt: new Date().toISOString() };
  });
};

/** After the route's instance-admin guard (401, 403): the company (403, 404), then the plugin (404). */
async function scope(ctx: Context, kernel: KernelServices): Promise<Scope> {
  const { company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
  const row = await kernel.db.maybeOne('select * from plugins where key = ?', [ctx.params.pluginId]);
  if (!row) throw notFound('Plugin not found', 'plugin_not_found');
  return { companyId: company.id as string, row, manifest: row.manifest as PluginManifest };
}

function declaration(manifest: PluginManifest, folderKey: string): FolderManifest {
  const folder = (manifest.folders ?? []).find((candidate) => candidate.key === folderKey);
  if (!folder) throw notFound(`Local folder "${folderKey.slice(0, 64)}" is not declared by this plugin`, 'folder_not_declared');
  return folder;
}

function describe(folder: FolderManifest) {
  return { folderKey: folder.key, access: folder.access as FolderManifest['access'] | null, description: folder.description ?? null };
}

async function storedMounts(kernel: KernelServices, pluginKey: string, companyId: string): Promise<Map<string, { path: string; updated_at: unknown }>> {
  const rows = await kernel.db.query<{ folder_key: string; path: string; updated_at: unknown }>(
    'select folder_key, path, updated_at from plugin_folder_mounts where plugin_key = ? and company_id = ? order by folder_key', [pluginKey, companyId]);
  return new Map(rows.map((mount) => [mount.folder_key, mount]));
}

function protectedLocations(kernel: KernelServices, row: Row) {
  return realLocations([
    { path: kernel.config.dataDir, label: 'the instance data directory' },
    { path: REPO_ROOT, label: 'the service installation' },
    { path: row.source_path as string, label: "the plugin's own code" },
  ]);
}
