import type { Context, Middleware } from 'koa';
import { describeIssues, pluginBodyAjv, pluginQueryAjv, schemaIssues } from '../manifest/plugin-schema-ajv.ts';
import type { Ajv } from 'ajv';
import { activityActor, type Actor } from '../../auth/actor.ts';
import { assertStorableQuery, readJsonBody } from '../../http/body.ts';
import { KeelError, validationFailed } from '../../http/errors.ts';
import { authorize } from '../../http/route-auth.ts';
import { companyForRequest } from '../../tenancy/company-access.ts';
import { agentForRequest } from '../../tenancy/agent-access.ts';
import { isUuid } from '../../http/validate.ts';
import type { ExtensionHost } from '../extension-host.ts';
import type { PluginRoute } from './routes.ts';
import { routeHeaders } from './route-headers.ts';
import { discardUpload, receiveUpload, sendDownload } from './route-blobs.ts';
import type { InvokeResult } from '../plugin-process.ts';

function validate(ajv: Ajv, schema: object | undefined, value: unknown, where: string): void {
  if (!schema) return;
  const issues = schemaIssues(ajv, schema, value);
  if (issues.length) throw validationFailed(describeIssues(where, issues), issues);
}

/** Writes a plugin's answer (or its error) as the kernel answers: JSON, with the one error body. */
export function respond(ctx: Context, result: InvokeResult, successStatus: number): void {
  if (!result.ok) {
    const error = result.error!;
    const status = error.status >= 400 && error.status <= 599 ? error.status : 500;
    throw new KeelError(status, error.code, error.message, { details: error.details, expose: true });
  }
  const raw = result.value ?? 'null';
  // The worker already parsed and bounded this JSON; a plain answer goes out as the same text,
  // and only an explicit respond() envelope is parsed here.
  if (!raw.startsWith('{"$response"')) {
    ctx.status = successStatus;
    ctx.type = 'application/json';
    ctx.body = raw;
    return;
  }
  const value = JSON.parse(raw) as unknown;
  const envelope = value && typeof value === 'object' && '$response' in (value as object) ? (value as { $response: { status?: number; body?: unknown; headers?: Record<string, string> } }).$response : null;
  if (envelope) {
    ctx.status = Number.isInteger(envelope.status) && envelope.status! >= 200 && envelope.status! <= 599 ? envelope.status! : successStatus;
    for (const [name, headerValue] of Object.entries(envelope.headers ?? {})) {
      if (!/^(x-[a-z0-9-]+|cache-control|etag|location|content-language)$/i.test(name)) continue;
      // A value with control characters would split the header (or make Node throw): the plugin's answer is invalid.
      const text = String(headerValue);
      if (text.length > 8192 || /[^\t\x20-\x7e\x80-\xff]/.test(text)) throw new KeelError(502, 'plugin_invalid_response', `The plugin answered with an invalid value for the ${name} header`, { expose: true });
      ctx.set(name, text);
    }
    ctx.body = envelope.body === undefined ? null : envelope.body;
  } else {
    ctx.status = successStatus;
    ctx.body = value;
  }
  if (ctx.body === null) ctx.body = 'null';
  ctx.type = 'application/json';
}

/**
 * A body field naming an agent must name one of the call's company: checked here, so that a
 * plugin needs no round trip to the kernel to trust it (its schema has already made it a uuid
 * when it declares one).
 */
async function assertAgentOfCompany(host: ExtensionHost, body: unknown, field: string, companyId: string): Promise<void> {
  const value = body && typeof body === 'object' ? (body as Record<string, unknown>)[field] : undefined;
  if (value === undefined || value === null) return;
  // The auth cache's agent rows (evicted by trigger on any change of company or deletion).
  const agent = typeof value === 'string' && isUuid(value) ? await host.kernel.resolver.agent(value.toLowerCase()) : undefined;
  if (agent?.companyId !== companyId) throw new KeelError(404, 'agent_not_found', `${field}: no agent with this id belongs to the company`, { details: { field } });
}

/**
 * Serves plugin routes: authentication, company scoping and schema validation run here, in
 * the kernel, before the isolate is entered; the plugin sees a validated request and the
 * identity the kernel resolved.
 */
export function pluginRouteDispatch(host: ExtensionHost): Middleware {
  return async (ctx, next) => {
    const match = host.routes.match(ctx.method === 'HEAD' ? 'GET' : ctx.method, ctx.path);
    if (!match) return next();
    if ('allowed' in match) {
      ctx.set('Allow', [...new Set(match.allowed)].join(', '));
      throw new KeelError(405, 'method_not_allowed', `Method ${ctx.method} is not allowed on ${ctx.path}`);
    }
    await serve(ctx, host, match.route, match.params);
  };
}

async function serve(ctx: Context, host: ExtensionHost, pluginRoute: PluginRoute, params: Record<string, string>): Promise<void> {
  const { route, plugin } = pluginRoute;
  ctx.state.routePattern = pluginRoute.fullPath;
  authorize(ctx, route.auth);
  const actor = ctx.state.actor as Actor;
  let companyId: string | null = null;
  if (route.companyParam) {
    const { company } = await companyForRequest(ctx, host.kernel.db, params[route.companyParam]);
    companyId = company.id;
  } else if (route.agentParam) {
    // agentForRequest reads the path parameter (a uuid, or a short name with ?companyId=) from ctx.params.
    ctx.params = params;
    const { agent } = await agentForRequest(ctx, host.kernel.db, route.agentParam);
    params[route.agentParam] = agent.id;
    companyId = agent.company_id;
  } else if (actor.kind === 'agent') {
    companyId = actor.companyId;
  }
  ctx.state.companyId = companyId;
  const query = { ...ctx.query } as Record<string, unknown>;
  // Whatever the plugin's schema says: its SQL could not send a NUL to PostgreSQL either.
  assertStorableQuery(query);
  validate(pluginQueryAjv, route.query, query, 'query');
  let body: unknown = null;
  const upload = route.upload ? await receiveUpload(ctx, host, plugin, route, companyId) : undefined;
  if (route.method !== 'GET' && !upload) {
    body = await readJsonBody(ctx, host.kernel.config.limits.jsonBodyBytes);
    if (body === undefined) body = route.body ? {} : null;
    validate(pluginBodyAjv, route.body, body, 'request body');
    if (route.agentBodyField && companyId) await assertAgentOfCompany(host, body, route.agentBodyField, companyId);
  }
  const headers = routeHeaders(ctx);
  const who = activityActor(actor);
  const readOnly = route.readOnly ?? route.method === 'GET';
  const transactional = !readOnly && (route.transactional ?? true);
  const input = upload ? { params, query, body, headers, companyId, upload } : { params, query, body, headers, companyId };
  const result = await host.invoke(plugin, 'route', route.key, input, {
    companyId,
    actor: { type: who.actorType, id: who.actorId, agentId: who.agentId },
    runId: who.runId,
  }, {
    transactional,
    readOnly,
    batch: route.batch && transactional && !readOnly ? { key: route.key, maxItems: route.batch.maxItems ?? 100, maxInFlight: route.batch.maxInFlight ?? 2 } : undefined,
    defaultActivity: readOnly ? null : { action: `plugin.${plugin}.${route.key}`, entityType: 'plugin_route', entityId: `${route.method} ${pluginRoute.fullPath}` },
  }).catch(async (error: unknown) => {
    // A plugin that could not be invoked at all (not running, busy) keeps no upload either.
    if (upload) await discardUpload(host, upload);
    throw error;
  });
  // A mutating route's entry was written by the plugin's transaction (its own, or the host's
  // default one); a read-only route ran in a READ ONLY transaction and changed nothing.
  ctx.state.activityWritten = true;
  if (upload && !result.ok) await discardUpload(host, upload);
  if (route.download && await sendDownload(ctx, host, plugin, result, companyId)) return;
  respond(ctx, result, route.successStatus ?? 200);
}
