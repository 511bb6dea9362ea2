import { stat } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { contributionsOf } from './contributions/contribution-points.ts';
import { describeIssues, pluginBodyAjv, schemaIssues } from '../../sdk/manifest/plugin-schema-ajv.ts';
import type { Context } from 'koa';
import type { PluginManifest } from '../../sdk/plugin/manifest.ts';
import { activityActor, invocationCaller, type Actor } from '../auth/actor.ts';
import type { RouteModule } from '../http/app.ts';
import { badRequest, KeelError } from '../http/errors.ts';
import { declareRoutes, LIST_RESPONSE, type ParameterDoc } from '../http/route-spec.ts';
import { bodyValidator } from '../http/validate.ts';
import type { KernelServices } from '../services.ts';
import { respond } from './contributions/route-answer.ts';
import { executeTool } from './tool-execution.ts';
import { enabledTools } from './plugin-tools.ts';
import { pendingToolChanges } from './tool-approvals.ts';
import type { ExtensionHost } from './extension-host.ts';
import { lifecycleActor } from './lifecycle-actor.ts';
import { MANIFEST_SCHEMA } from '../../sdk/manifest/manifest-schema.ts';
import { toPluginJson } from './plugin-json.ts';
import { FIRST_PARTY_DIR, fetchNpmPackage, findPackagedPlugin, readPluginFolder, scanExamples, unpackTarball } from './plugin-sources.ts';

const installBody = bodyValidator<{ localPath?: string; packageName?: string }>({
  type: 'object',
  properties: { localPath: { type: 'string', minLength: 1, maxLength: 4096 }, packageName: { type: 'string', minLength: 1, maxLength: 214 } },
});
/** Enable and upgrade: the capabilities the operator grants (enable: default every declared one; upgrade: the new ones). */
const grantBody = bodyValidator<{ grant?: string[] }>({
  type: 'object', properties: { grant: { type: 'array', items: { type: 'string', maxLength: 100 }, maxItems: 64, uniqueItems: true } },
});
/** Which pending tool changes to approve (tool keys, without the plugin's); default every one. */
const approveToolsBody = bodyValidator<{ tools?: string[] }>({
  type: 'object', properties: { tools: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 100 }, minItems: 1, maxItems: 200, uniqueItems: true } },
});
const configBody = bodyValidator<{ config: Record<string, unknown> }>({
  type: 'object', required: ['config'], properties: { config: { type: 'object' } },
});
const executeBody = bodyValidator<{ tool: string; input?: unknown; companyId?: string }>({
  type: 'object', required: ['tool'],
  properties: { tool: { type: 'string', minLength: 3, maxLength: 200 }, input: {}, companyId: { type: 'string' } },
});

function audit(ctx: Context) {
  // Lifecycle changes are recorded by the host itself (instance-level activity, naming the operator).
  ctx.state.activityWritten = true;
}

/** Runs a lifecycle change on behalf of the request's actor. */
function asOperator<T>(ctx: Context, change: () => Promise<T>): Promise<T> {
  const who = activityActor(ctx.state.actor as Actor);
  return lifecycleActor.run({ actorType: who.actorType, actorId: who.actorId }, change);
}

function invocationInfo(ctx: Context, companyId: string | null) {
  return { companyId, ...invocationCaller(ctx.state.actor as Actor) };
}

function validateConfigShape(manifest: PluginManifest, config: Record<string, unknown>): void {
  if (!manifest.config?.schema) return;
  const issues = schemaIssues(pluginBodyAjv, manifest.config.schema, config, '(config)');
  if (issues.length) throw new KeelError(400, 'invalid_plugin_config', describeIssues('plugin configuration', issues), { issues });
}

/** The logs route clamps its limit rather than refusing one out of range, so it is read by hand. */
const LOG_PARAMETERS: ParameterDoc[] = [
  { name: 'limit', in: 'query', description: 'How many lines, 1-500 (default 200); values out of range are clamped.', schema: { type: 'integer' } },
];

/** The plugin HTTP API (`/api/plugins/*`): instance-admin for lifecycle and diagnostics. */
export const pluginApiRoutes = (host: ExtensionHost): RouteModule => (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Plugins');

  route({ method: 'GET', path: '/api/plugins', auth: 'board', success: 200, response: LIST_RESPONSE, summary: 'Installed plugins' }, async (ctx) => {
    const rows = await kernel.db.query('select * from plugins order by key');
    ctx.body = rows.map((row) => toPluginJson(row, host.plugins.get(row.key)));
  });

  route({ method: 'GET', path: '/api/plugins/manifest-schema', auth: 'any', success: 200, summary: 'The JSON schema of plugin manifests' }, async (ctx) => {
    ctx.body = MANIFEST_SCHEMA;
  });

  route({ method: 'GET', path: '/api/plugins/examples', auth: 'board', success: 200, response: LIST_RESPONSE, summary: 'Example plugins that can be installed' }, async (ctx) => {
    const installed = new Set((await kernel.db.query<{ key: string }>('select key from plugins')).map((r) => r.key));
    ctx.body = (await scanExamples()).map((found) => ({
      packageName: `@keel-examples/${found.manifest.key}`,
      pluginKey: found.manifest.key,
      displayName: found.manifest.displayName,
      description: found.manifest.description ?? null,
      localPath: found.folder,
      tag: 'example',
      experimental: found.manifest.experimental ?? false,
      installed: installed.has(found.manifest.key),
    }));
  });

  route({
    method: 'GET', path: '/api/plugins/ui-contributions', auth: 'any', success: 200,
    summary: 'UI slots, launchers and pages of enabled plugins',
  }, async (ctx) => {
    const slots: unknown[] = [];
    const launchers: unknown[] = [];
    const pages: unknown[] = [];
    for (const loaded of host.plugins.values()) {
      const grants: string[] = loaded.row.granted_capabilities ?? [];
      if (grants.includes('ui.slots')) {
        for (const slot of loaded.manifest.ui?.slots ?? []) slots.push({ pluginKey: loaded.key, ...slot, order: slot.order ?? 100 });
        for (const launcher of loaded.manifest.ui?.launchers ?? []) launchers.push({ pluginKey: loaded.key, ...launcher });
      }
      if (grants.includes('ui.page.register')) for (const page of loaded.manifest.ui?.pages ?? []) pages.push({ pluginKey: loaded.key, ...page });
    }
    slots.sort((a, b) => ((a as { order: number }).order - (b as { order: number }).order));
    ctx.body = { slots, launchers, pages };
  });

  route({ method: 'GET', path: '/api/plugins/tools', auth: 'any', success: 200, response: LIST_RESPONSE, summary: 'Tools of enabled plugins' }, async (ctx) => {
    ctx.body = enabledTools(host).map(({ name, plugin, tool }) => ({ key: name, pluginKey: plugin.key, name: tool.key, description: tool.description, inputSchema: tool.inputSchema }));
  });

  route({
    method: 'POST', path: '/api/plugins/tools/execute', auth: 'any', body: executeBody, success: 200, errors: [403, 404, 502, 504],
    summary: "Run a plugin's tool; `input` is checked against the tool's own input schema",
  }, async (ctx, req) => {
    ctx.body = await executeTool(ctx, host, await req.body());
  });

  route({
    method: 'POST', path: '/api/plugins/install', auth: 'instance_admin', body: installBody, success: 201, errors: [409, 422],
    summary: 'Install a plugin from a local folder or a package',
  }, async (ctx, req) => {
    const body = await req.body();
    if (!body.localPath === !body.packageName) throw badRequest('Give exactly one of localPath or packageName');
    let found;
    if (body.localPath) {
      if (!isAbsolute(body.localPath)) throw badRequest('localPath must be an absolute path');
      const path = resolve(body.localPath);
      // A packed package (npm pack) is unpacked into the data directory; a folder is read in place.
      found = /\.(tgz|tar\.gz)$/.test(path) && (await stat(path).catch(() => null))?.isFile()
        ? await unpackTarball(kernel.config.dataDir, path)
        : await readPluginFolder(path, 'local_path');
    } else {
      const example = (await scanExamples()).find((e) => `@keel-examples/${e.manifest.key}` === body.packageName);
      found = example ?? await findPackagedPlugin(FIRST_PARTY_DIR, body.packageName!) ?? await fetchNpmPackage(kernel.config.dataDir, body.packageName!);
    }
    const row = await asOperator(ctx, () => host.changes.install(found));
    audit(ctx);
    ctx.status = 201;
    ctx.body = toPluginJson(row);
  });

  route({ method: 'GET', path: '/api/plugins/:pluginId', auth: 'board', success: 200, summary: 'One installed plugin' }, async (ctx) => {
    const row = await host.row(ctx.params.pluginId!);
    ctx.body = toPluginJson(row, host.plugins.get(row.key));
  });

  route({
    method: 'DELETE', path: '/api/plugins/:pluginId', auth: 'instance_admin', success: 200,
    summary: "Uninstall a plugin: stops it and drops its schema and roles",
  }, async (ctx) => {
    await asOperator(ctx, () => host.changes.uninstall(ctx.params.pluginId!));
    audit(ctx);
    ctx.body = { ok: true, pluginKey: ctx.params.pluginId };
  });

  route({
    method: 'POST', path: '/api/plugins/:pluginId/enable', auth: 'instance_admin', body: grantBody, success: 200, errors: [409, 422],
    summary: 'Grant capabilities and start a plugin',
  }, async (ctx, req) => {
    const body = await req.body();
    const row = await asOperator(ctx, () => host.changes.enable(ctx.params.pluginId!, { grant: body.grant }));
    audit(ctx);
    ctx.body = toPluginJson(row, host.plugins.get(row.key));
  });

  route({ method: 'POST', path: '/api/plugins/:pluginId/disable', auth: 'instance_admin', success: 200, summary: 'Stop a plugin and unmount what it contributes' }, async (ctx) => {
    const row = await asOperator(ctx, () => host.changes.disable(ctx.params.pluginId!));
    audit(ctx);
    ctx.body = toPluginJson(row);
  });

  route({
    method: 'POST', path: '/api/plugins/:pluginId/upgrade', auth: 'instance_admin', body: grantBody, success: 200, errors: [409, 422],
    summary: "Re-read a plugin's source, migrate and restart it, granting capabilities it newly asks for",
  }, async (ctx, req) => {
    const body = await req.body();
    const row = await asOperator(ctx, () => host.changes.upgrade(ctx.params.pluginId!, { grant: body.grant }));
    audit(ctx);
    ctx.body = toPluginJson(row, host.plugins.get(row.key));
  });

  route({
    method: 'GET', path: '/api/plugins/:pluginId/tool-changes', auth: 'instance_admin', success: 200,
    summary: "A plugin's tools that are new or changed since an operator approved them, withheld from agents until approved",
  }, async (ctx) => {
    const row = await host.row(ctx.params.pluginId!);
    ctx.body = { pluginKey: row.key, version: row.version, pending: pendingToolChanges(row) };
  });

  route({
    method: 'POST', path: '/api/plugins/:pluginId/tool-changes/approve', auth: 'instance_admin', body: approveToolsBody, success: 200, errors: [422],
    summary: "Approve a plugin's new or changed tools (all pending, or the ones named) so agents may use them",
  }, async (ctx, req) => {
    const body = await req.body();
    const approved = await asOperator(ctx, () => host.changes.approveToolChanges(ctx.params.pluginId!, body.tools));
    audit(ctx);
    ctx.body = { pluginKey: ctx.params.pluginId, approved, pending: pendingToolChanges(await host.row(ctx.params.pluginId!)) };
  });

  route({ method: 'GET', path: '/api/plugins/:pluginId/health', auth: 'instance_admin', success: 200, summary: "A plugin's status and its worker's health" }, async (ctx) => {
    const row = await host.row(ctx.params.pluginId!);
    const loaded = host.plugins.get(row.key);
    const health = loaded?.process?.health;
    // Event deliveries waiting for this plugin, across every process; a dead letter needs an operator.
    const events = await contributionsOf(host).events.store.health(row.key);
    ctx.body = {
      pluginKey: row.key,
      status: row.status,
      healthy: row.status === 'enabled' && health?.status === 'running' && events.dead === 0,
      // standbyPid: the warm process the next worker to die is replaced by (one for the whole instance).
      worker: health ? { ...health, standbyPid: host.workerProcesses.standbyPid } : { status: 'stopped' },
      events: { ...events, deadLetters: `/api/plugins/${row.key}/events/dead-letters` },
      lastError: row.last_error ?? null,
    };
  });

  route({
    method: 'GET', path: '/api/plugins/:pluginId/logs', auth: 'instance_admin', parameters: LOG_PARAMETERS, success: 200,
    summary: "A plugin's recent log lines, newest first",
  }, async (ctx) => {
    const row = await host.row(ctx.params.pluginId!);
    const limit = Math.min(Math.max(Number(ctx.query.limit ?? 200) || 200, 1), 500);
    const logs = host.plugins.get(row.key)?.logs ?? [];
    ctx.body = { pluginKey: row.key, logs: logs.slice(-limit).reverse() };
  });

  route({ method: 'GET', path: '/api/plugins/:pluginId/config', auth: 'instance_admin', success: 200, summary: "A plugin's configuration and its schema" }, async (ctx) => {
    const row = await host.row(ctx.params.pluginId!);
    ctx.body = { pluginKey: row.key, config: row.config ?? {}, schema: (row.manifest as PluginManifest).config?.schema ?? null };
  });

  route({
    method: 'POST', path: '/api/plugins/:pluginId/config', auth: 'instance_admin', body: configBody, success: 200,
    summary: "Replace a plugin's configuration (checked against the manifest's config schema)",
  }, async (ctx, req) => {
    const row = await host.row(ctx.params.pluginId!);
    const body = await req.body();
    validateConfigShape(row.manifest as PluginManifest, body.config);
    const updated = await asOperator(ctx, () => host.changes.setConfig(row.key, body.config));
    audit(ctx);
    ctx.body = { pluginKey: updated.key, config: updated.config };
  });

  route({
    method: 'POST', path: '/api/plugins/:pluginId/config/test', auth: 'instance_admin', body: configBody, success: 200, errors: [502, 504],
    summary: "Check a configuration with the schema and the plugin's validateConfig; saves nothing",
  }, async (ctx, req) => {
    const row = await host.row(ctx.params.pluginId!);
    const body = await req.body();
    validateConfigShape(row.manifest as PluginManifest, body.config);
    ctx.state.skipAudit = true;
    if (!host.plugins.has(row.key)) {
      ctx.body = { ok: true, errors: [], checkedBy: 'schema' };
      return;
    }
    const result = await host.invoke(row.key, 'validate_config', 'validateConfig', body.config, invocationInfo(ctx, null), { transactional: false });
    if (!result.ok) respond(ctx, result, 200);
    const verdict = JSON.parse(result.value ?? '{}') as { ok?: boolean; errors?: string[] };
    ctx.body = { ok: verdict.ok !== false, errors: verdict.errors ?? [], checkedBy: 'plugin' };
  });
};
