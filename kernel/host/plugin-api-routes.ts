import { isAbsolute, resolve } from 'node:path';
import { describeIssues, pluginBodyAjv, schemaIssues } from './manifest/plugin-schema-ajv.ts';
import type { Context } from 'koa';
import type { PluginManifest } from '../../sdk/plugin/manifest.ts';
import { activityActor, type Actor } from '../auth/actor.ts';
import type { RouteModule } from '../http/app.ts';
import { badRequest, KeelError, notFound, validationFailed } from '../http/errors.ts';
import { requireActor, requireBoard, requireInstanceAdmin } from '../http/guards.ts';
import { parseBody } from '../http/request.ts';
import { bodyValidator } from '../http/validate.ts';
import type { KernelServices } from '../services.ts';
import { companyForRequest } from '../tenancy/company-access.ts';
import { respond } from './contributions/route-dispatch.ts';
import { lifecycleActor, type ExtensionHost } from './extension-host.ts';
import { manifestSchema } from './manifest/fragments.ts';
import { toPluginJson } from './plugin-json.ts';
import { fetchNpmPackage, readPluginFolder, scanExamples } from './plugin-sources.ts';

const installBody = bodyValidator<{ localPath?: string; packageName?: string }>({
  type: 'object',
  properties: { localPath: { type: 'string', minLength: 1, maxLength: 4096 }, packageName: { type: 'string', minLength: 1, maxLength: 214 } },
});
/** Enable and upgrade: the capabilities the operator grants (enable: default every declared one; upgrade: the new ones). */
const grantBody = bodyValidator<{ grant?: string[] }>({
  type: 'object', properties: { grant: { type: 'array', items: { type: 'string', maxLength: 100 }, maxItems: 64, uniqueItems: true } },
});
const configBody = bodyValidator<{ config: Record<string, unknown> }>({
  type: 'object', required: ['config'], properties: { config: { type: 'object' } },
});
const executeBody = bodyValidator<{ tool: string; input?: unknown; companyId?: string }>({
  type: 'object', required: ['tool'],
  properties: { tool: { type: 'string', minLength: 3, maxLength: 200 }, input: {}, companyId: { type: 'string' } },
});

function hostOf(kernel: KernelServices): ExtensionHost {
  return kernel.extensionHost!;
}

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
  const who = activityActor(ctx.state.actor as Actor);
  return { companyId, actor: { type: who.actorType, id: who.actorId, agentId: who.agentId }, runId: who.runId };
}

function validateConfigShape(manifest: PluginManifest, config: Record<string, unknown>): void {
  if (!manifest.config?.schema) return;
  const issues = schemaIssues(pluginBodyAjv, manifest.config.schema, config, '(config)');
  if (issues.length) throw new KeelError(400, 'invalid_plugin_config', describeIssues('plugin configuration', issues), { issues });
}

/** The plugin HTTP API (`/api/plugins/*`): instance-admin for lifecycle and diagnostics. */
export const pluginApiRoutes: RouteModule = (router, kernel) => {
  router.get('/api/plugins', async (ctx) => {
    requireBoard(ctx);
    const rows = await kernel.db.query('select * from plugins order by key');
    ctx.body = rows.map((row) => toPluginJson(row, hostOf(kernel).plugins.get(row.key)));
  });

  router.get('/api/plugins/manifest-schema', async (ctx) => {
    requireActor(ctx);
    ctx.body = manifestSchema;
  });

  router.get('/api/plugins/examples', async (ctx) => {
    requireBoard(ctx);
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

  router.get('/api/plugins/ui-contributions', async (ctx) => {
    requireActor(ctx);
    const slots: unknown[] = [];
    const launchers: unknown[] = [];
    const pages: unknown[] = [];
    for (const loaded of hostOf(kernel).plugins.values()) {
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

  router.get('/api/plugins/tools', async (ctx) => {
    requireActor(ctx);
    const tools: unknown[] = [];
    for (const loaded of hostOf(kernel).plugins.values()) {
      if (!(loaded.row.granted_capabilities ?? []).includes('tools.register')) continue;
      for (const tool of loaded.manifest.tools ?? []) tools.push({ key: `${loaded.key}.${tool.key}`, pluginKey: loaded.key, name: tool.key, description: tool.description, inputSchema: tool.inputSchema });
    }
    ctx.body = tools;
  });

  router.post('/api/plugins/tools/execute', async (ctx) => {
    const actor = requireActor(ctx);
    const body = await parseBody(ctx, kernel, executeBody);
    const dot = body.tool.indexOf('.');
    const pluginKey = dot > 0 ? body.tool.slice(0, dot) : '';
    const toolKey = dot > 0 ? body.tool.slice(dot + 1) : '';
    const loaded = hostOf(kernel).plugins.get(pluginKey);
    const tool = loaded?.manifest.tools?.find((t) => t.key === toolKey);
    if (!loaded || !tool || !(loaded.row.granted_capabilities ?? []).includes('tools.register')) throw notFound(`No enabled tool "${body.tool}"`, 'tool_not_found');
    let companyId: string | null = actor.kind === 'agent' ? actor.companyId : null;
    if (body.companyId !== undefined) {
      const { company } = await companyForRequest(ctx, kernel.db, body.companyId);
      companyId = company.id;
    }
    const input = body.input ?? {};
    const issues = schemaIssues(pluginBodyAjv, tool.inputSchema, input, '(input)');
    if (issues.length) throw validationFailed(describeIssues('tool input', issues), issues);
    const result = await hostOf(kernel).invoke(pluginKey, 'tool', toolKey, input, invocationInfo(ctx, companyId), {
      transactional: true,
      defaultActivity: { action: `plugin.${pluginKey}.tool.${toolKey}`, entityType: 'plugin_tool', entityId: body.tool },
    });
    ctx.state.activityWritten = true;
    if (!result.ok) respond(ctx, result, 200);
    ctx.body = { tool: body.tool, result: result.value === undefined ? null : JSON.parse(result.value) };
  });

  router.post('/api/plugins/install', async (ctx) => {
    requireInstanceAdmin(ctx);
    const body = await parseBody(ctx, kernel, installBody);
    if (!body.localPath === !body.packageName) throw badRequest('Give exactly one of localPath or packageName');
    let found;
    if (body.localPath) {
      if (!isAbsolute(body.localPath)) throw badRequest('localPath must be an absolute path');
      found = await readPluginFolder(resolve(body.localPath), 'local_path');
    } else {
      const example = (await scanExamples()).find((e) => `@keel-examples/${e.manifest.key}` === body.packageName);
      found = example ?? await fetchNpmPackage(kernel.config.dataDir, body.packageName!);
    }
    const row = await asOperator(ctx, () => hostOf(kernel).install(found));
    audit(ctx);
    ctx.status = 201;
    ctx.body = toPluginJson(row);
  });

  router.get('/api/plugins/:pluginId', async (ctx) => {
    requireBoard(ctx);
    const row = await hostOf(kernel).row(ctx.params.pluginId!);
    ctx.body = toPluginJson(row, hostOf(kernel).plugins.get(row.key));
  });

  router.delete('/api/plugins/:pluginId', async (ctx) => {
    requireInstanceAdmin(ctx);
    await asOperator(ctx, () => hostOf(kernel).uninstall(ctx.params.pluginId!));
    audit(ctx);
    ctx.body = { ok: true, pluginKey: ctx.params.pluginId };
  });

  router.post('/api/plugins/:pluginId/enable', async (ctx) => {
    requireInstanceAdmin(ctx);
    const body = await parseBody(ctx, kernel, grantBody);
    const row = await asOperator(ctx, () => hostOf(kernel).enable(ctx.params.pluginId!, { grant: body.grant }));
    audit(ctx);
    ctx.body = toPluginJson(row, hostOf(kernel).plugins.get(row.key));
  });

  router.post('/api/plugins/:pluginId/disable', async (ctx) => {
    requireInstanceAdmin(ctx);
    const row = await asOperator(ctx, () => hostOf(kernel).disable(ctx.params.pluginId!));
    audit(ctx);
    ctx.body = toPluginJson(row);
  });

  router.post('/api/plugins/:pluginId/upgrade', async (ctx) => {
    requireInstanceAdmin(ctx);
    const body = await parseBody(ctx, kernel, grantBody);
    const row = await asOperator(ctx, () => hostOf(kernel).upgrade(ctx.params.pluginId!, { grant: body.grant }));
    audit(ctx);
    ctx.body = toPluginJson(row, hostOf(kernel).plugins.get(row.key));
  });

  router.get('/api/plugins/:pluginId/health', async (ctx) => {
    requireInstanceAdmin(ctx);
    const row = await hostOf(kernel).row(ctx.params.pluginId!);
    const loaded = hostOf(kernel).plugins.get(row.key);
    const health = loaded?.process?.health;
    ctx.body = {
      pluginKey: row.key,
      status: row.status,
      healthy: row.status === 'enabled' && health?.status === 'running',
      worker: health ?? { status: 'stopped' },
      lastError: row.last_error ?? null,
    };
  });

  router.get('/api/plugins/:pluginId/logs', async (ctx) => {
    requireInstanceAdmin(ctx);
    const row = await hostOf(kernel).row(ctx.params.pluginId!);
    const limit = Math.min(Math.max(Number(ctx.query.limit ?? 200) || 200, 1), 500);
    const logs = hostOf(kernel).plugins.get(row.key)?.logs ?? [];
    ctx.body = { pluginKey: row.key, logs: logs.slice(-limit).reverse() };
  });

  router.get('/api/plugins/:pluginId/config', async (ctx) => {
    requireInstanceAdmin(ctx);
    const row = await hostOf(kernel).row(ctx.params.pluginId!);
    ctx.body = { pluginKey: row.key, config: row.config ?? {}, schema: (row.manifest as PluginManifest).config?.schema ?? null };
  });

  router.post('/api/plugins/:pluginId/config', async (ctx) => {
    requireInstanceAdmin(ctx);
    const row = await hostOf(kernel).row(ctx.params.pluginId!);
    const body = await parseBody(ctx, kernel, configBody);
    validateConfigShape(row.manifest as PluginManifest, body.config);
    const updated = await asOperator(ctx, () => hostOf(kernel).setConfig(row.key, body.config));
    audit(ctx);
    ctx.body = { pluginKey: updated.key, config: updated.config };
  });

  router.post('/api/plugins/:pluginId/config/test', async (ctx) => {
    requireInstanceAdmin(ctx);
    const row = await hostOf(kernel).row(ctx.params.pluginId!);
    const body = await parseBody(ctx, kernel, configBody);
    validateConfigShape(row.manifest as PluginManifest, body.config);
    ctx.state.skipAudit = true;
    if (!hostOf(kernel).plugins.has(row.key)) {
      ctx.body = { ok: true, errors: [], checkedBy: 'schema' };
      return;
    }
    const result = await hostOf(kernel).invoke(row.key, 'validate_config', 'validateConfig', body.config, invocationInfo(ctx, null), { transactional: false });
    if (!result.ok) respond(ctx, result, 200);
    const verdict = JSON.parse(result.value ?? '{}') as { ok?: boolean; errors?: string[] };
    ctx.body = { ok: verdict.ok !== false, errors: verdict.errors ?? [], checkedBy: 'plugin' };
  });
};
