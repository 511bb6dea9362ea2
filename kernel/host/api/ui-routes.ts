import type { Context } from 'koa';
import { activityActor, type Actor } from '../../auth/actor.ts';
import type { RouteModule } from '../../http/app.ts';
import { KeelError, notFound } from '../../http/errors.ts';
import { requireInstanceAdmin } from '../../http/guards.ts';
import { declareRoutes, type RouteRequest } from '../../http/route-spec.ts';
import { bodyValidator } from '../../http/validate.ts';
import type { KernelServices } from '../../services.ts';
import { companyForRequest } from '../../tenancy/company-access.ts';
import { respond } from '../contributions/route-answer.ts';
import { answerSse, DEFAULT_MAX_STREAMS } from '../sse-connection.ts';
import type { ExtensionHost } from '../extension-host.ts';
import { heldKey, StreamHub, type StreamScope } from '../stream-hub.ts';

const KEY = '^[a-z][a-z0-9]*([-_.][a-z0-9]+)*$';
interface Keyed { key?: string; companyId?: string; params?: unknown }
const keyed = bodyValidator<Keyed>({
  type: 'object',
  properties: { key: { type: 'string', pattern: KEY, maxLength: 64 }, companyId: { type: 'string' }, params: {} },
});
const isKey = (value: string) => value.length <= 64 && new RegExp(KEY).test(value);

/**
 * UI-facing calls into a plugin: data reads and actions by key (from the UI directly, or from
 * the plugin's own UI through the bridge), and server-sent event streams the plugin publishes
 * to. Board callers only; a company named in the body is checked like any company route.
 */
export const pluginUiRoutes = (host: ExtensionHost): RouteModule => (router, kernel) => {

  const route = declareRoutes(router, kernel, 'Plugin UI');

  const call = async (ctx: Context, req: RouteRequest<Keyed, never, 'board'>, kind: 'data' | 'action', key: string | undefined) => {
    const pluginKey = ctx.params.pluginId!;
    const body = await req.body();
    const target = key ?? body.key;
    if (!target) throw new KeelError(400, 'validation_failed', 'Invalid request body: key is required');
    const missing = () => notFound(`Plugin ${pluginKey} has no ${kind} handler "${target}"`, 'plugin_handler_not_found');
    // Keys are not declared in the manifest: one that cannot be a key, or that the plugin has no handler for, names nothing.
    if (!isKey(target)) throw missing();
    const loaded = host.plugins.get(pluginKey);
    if (!loaded) throw notFound(`Plugin ${pluginKey} is not enabled`, 'plugin_not_enabled');
    let companyId: string | null = null;
    if (body.companyId !== undefined) companyId = (await companyForRequest(ctx, kernel.db, body.companyId)).company.id;
    const who = activityActor(ctx.state.actor as Actor);
    const result = await host.invoke(pluginKey, kind, target, { params: body.params ?? null, companyId },
      { companyId, actor: { type: who.actorType, id: who.actorId, agentId: who.agentId }, runId: who.runId },
      kind === 'action'
        ? { transactional: true, defaultActivity: { action: `plugin.${pluginKey}.action.${target}`, entityType: 'plugin_action', entityId: target } }
        : { transactional: false, readOnly: true });
    if (!result.ok && result.error?.code === 'handler_missing') throw missing();
    if (kind === 'action') ctx.state.activityWritten = true;
    else ctx.state.skipAudit = true;
    respond(ctx, result, 200);
  };

  const data = { auth: 'board', body: keyed, success: 200, errors: [502, 504] } as const;
  route({ ...data, method: 'POST', path: '/api/plugins/:pluginId/data/:key', summary: "Read data from a plugin's data handler (read-only)" }, (ctx, req) => call(ctx, req, 'data', ctx.params.key));
  route({ ...data, method: 'POST', path: '/api/plugins/:pluginId/actions/:key', summary: "Run a plugin's action (in a transaction, with activity)" }, (ctx, req) => call(ctx, req, 'action', ctx.params.key));
  route({ ...data, method: 'POST', path: '/api/plugins/:pluginId/bridge/data', summary: "A plugin UI's data read, `key` in the body" }, (ctx, req) => call(ctx, req, 'data', undefined));
  route({ ...data, method: 'POST', path: '/api/plugins/:pluginId/bridge/action', summary: "A plugin UI's action, `key` in the body" }, (ctx, req) => call(ctx, req, 'action', undefined));

  /**
   * A plugin channel's events as server-sent events. `?companyId=` reads that company's
   * channel (the caller must have access to the company); without it, the instance's
   * channel, which only instance admins may read.
   */
  route({
    method: 'GET', path: '/api/plugins/:pluginId/bridge/stream/:channel', auth: 'board', success: 200, contentType: 'text/event-stream',
    summary: 'Server-sent events a plugin publishes on a channel', errors: [400],
    parameters: [{
      name: 'companyId', in: 'query', schema: { type: 'string' },
      description: "The company whose channel to read (company access is checked); without it, the instance's channel, which only instance admins may read.",
    }],
  }, async (ctx) => {
    const pluginKey = ctx.params.pluginId!;
    const channel = ctx.params.channel!;
    StreamHub.assertChannel(channel);
    const companyParam = typeof ctx.query.companyId === 'string' ? ctx.query.companyId : undefined;
    let scope: StreamScope;
    if (companyParam !== undefined) scope = { companyId: (await companyForRequest(ctx, kernel.db, companyParam)).company.id };
    else {
      requireInstanceAdmin(ctx);
      scope = { instance: true };
    }
    if (!host.plugins.has(pluginKey)) throw notFound(`Plugin ${pluginKey} is not enabled`, 'plugin_not_enabled');
    const open = `event: open\ndata: ${JSON.stringify({ plugin: pluginKey, channel, ...('companyId' in scope ? { companyId: scope.companyId } : {}) })}\n\n`;
    // The same connection handling as plugin routes' held streams, counted against the same bound.
    answerSse(ctx, open, {
      counts: host.streams.held, key: heldKey(pluginKey, scope), limit: DEFAULT_MAX_STREAMS,
      subscribe: (write, end) => host.streams.subscribe(pluginKey, scope, channel, (data) => write(`data: ${data}\n\n`), end),
    });
  });
};
