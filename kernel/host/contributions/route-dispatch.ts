import { performance } from 'node:perf_hooks';
import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import { describeIssues, pluginBodyAjv, pluginQueryAjv, schemaIssues } from '../../../sdk/manifest/plugin-schema-ajv.ts';
import type { Ajv } from 'ajv';
import type { RouteManifest } from '../../../sdk/plugin/manifest.ts';
import { invocationCaller, type Actor } from '../../auth/actor.ts';
import { assertFiniteQuery, assertStorableQuery, readJsonBody } from '../../http/body.ts';
import { KeelError, validationFailed } from '../../http/errors.ts';
import { authorize } from '../../http/route-auth.ts';
import { canAccessCompany } from '../../http/guards.ts';
import { companyForRequest } from '../../tenancy/company-access.ts';
import { agentForRequest } from '../../tenancy/agent-access.ts';
import { isUuid } from '../../http/validate.ts';
import type { ExtensionHost } from '../extension-host.ts';
import type { PluginRoute } from './routes.ts';
import { routeHeaders } from './route-headers.ts';
import { resolveEntity } from './route-entities.ts';
import { respond } from './route-answer.ts';
import { companiesToServe, invokePerCompany } from './route-per-company.ts';
import { discardUpload, receiveUpload, sendDownload } from './route-blobs.ts';
import { answerProxy, proxyCaller, readProxyBody } from './route-proxy.ts';
import type { InvokeResult } from '../plugin-process.ts';

/** Client keys remembered per process; beyond it the oldest are computed again. */
const CLIENT_KEYS_KEPT = 4096;
const clientKeys = new WeakMap<ExtensionHost, { secret: KeyObject; known: Map<string, string> }>();

/**
 * The caller's address as a plugin sees it: an HMAC under a secret every process of the
 * instance derives alike, bound to the plugin, so limits count one client across processes
 * without handing plugins addresses (or keys another plugin could correlate). The same pair
 * always gives the same key, so recent ones are kept: computing an HMAC was a measurable
 * part of every plugin route's cost in the kernel.
 */
function clientKeyOf(host: ExtensionHost, plugin: string, address: string): string {
  let keys = clientKeys.get(host);
  if (!keys) clientKeys.set(host, keys = { secret: createSecretKey(host.kernel.jwt.derive('route-client-key')), known: new Map() });
  const input = `${plugin}\0${address}`;
  let key = keys.known.get(input);
  if (key === undefined) {
    key = createHmac('sha256', keys.secret).update(input).digest('base64url');
    if (keys.known.size >= CLIENT_KEYS_KEPT) keys.known.delete(keys.known.keys().next().value!);
    keys.known.set(input, key);
  }
  return key;
}

function validate(ajv: Ajv, schema: object | undefined, value: unknown, where: string): void {
  if (!schema) return;
  const issues = schemaIssues(ajv, schema, value);
  if (issues.length) throw validationFailed(describeIssues(where, issues), issues);
}

/**
 * A body field naming an agent must name one of the call's company: checked here, so that a
 * plugin needs no round trip to the kernel to trust it (its schema has already made it a uuid
 * when it declares one).
 */
/**
 * The company a route names in its query (GET) or body (`companyField`), checked like a path's
 * company: unknown 404, another company's caller 403. Without it an agent acts in its own
 * company; a board caller must name one.
 */
async function companyFromField(ctx: Context, host: ExtensionHost, source: unknown, field: string, current: string | null, authCodes: RouteManifest['authCodes']): Promise<string> {
  const value = source && typeof source === 'object' ? (source as Record<string, unknown>)[field] : undefined;
  if (typeof value === 'string' && value) {
    const { company } = await companyForRequest(ctx, host.kernel.db, value).catch((error: unknown) => { throw withAuthCodes(ctx, authCodes, error); });
    return company.id as string;
  }
  if (value !== undefined && value !== null) throw new KeelError(400, 'validation_failed', `${field} must be a company id`, { details: { field } });
  if (current) return current;
  throw new KeelError(400, 'company_required', `Name the company: ${field} is required for a board caller`, { details: { field } });
}

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

/**
 * The host's refusals of who is calling, with the codes the route declares under `authCodes`
 * (an API may name its own); status and message stay the host's.
 */
function withAuthCodes(ctx: Context, codes: PluginRoute['route']['authCodes'], error: unknown): unknown {
  if (!codes || !(error instanceof KeelError)) return error;
  const actor = ctx.state.actor as Actor;
  let code: string | undefined;
  if (error.status === 401) code = codes.unauthenticated;
  else if (error.status === 403 && error.code === 'company_access_denied' && actor.kind === 'agent') code = codes.otherCompany;
  return code ? new KeelError(error.status, code, error.message, { details: error.details, issues: error.issues }) : error;
}

async function serve(ctx: Context, host: ExtensionHost, pluginRoute: PluginRoute, params: Record<string, string>): Promise<void> {
  const { route, plugin } = pluginRoute;
  const receivedAt = performance.now();
  ctx.state.routePattern = pluginRoute.fullPath;
  if (route.proxy) await proxyCaller(ctx, host, route.proxy);
  try {
    authorize(ctx, route.auth);
  } catch (error) {
    throw withAuthCodes(ctx, route.authCodes, error);
  }
  const actor = ctx.state.actor as Actor;
  let companyId: string | null = null;
  if (route.companyParam) {
    const { company } = await companyForRequest(ctx, host.kernel.db, params[route.companyParam]).catch((error: unknown) => { throw withAuthCodes(ctx, route.authCodes, error); });
    companyId = company.id;
  } else if (route.agentParam) {
    // agentForRequest reads the path parameter (a uuid, or a short name with ?companyId=) from ctx.params.
    ctx.params = params;
    const { agent } = await agentForRequest(ctx, host.kernel.db, route.agentParam);
    params[route.agentParam] = agent.id;
    companyId = agent.company_id;
  } else if (pluginRoute.entity) {
    const row = await resolveEntity(host.kernel.db, pluginRoute.entity, params[pluginRoute.entity.param]);
    const { company } = await companyForRequest(ctx, host.kernel.db, row.companyId);
    params[pluginRoute.entity.param] = row.id;
    companyId = company.id;
  } else if (route.runParam) {
    // An unknown run and a run of a company the caller cannot reach serve no company alike:
    // the handler answers both as an unknown run (a run's issues: an empty list).
    const value = params[route.runParam];
    let run: { id: string; company_id: string } | undefined;
    if (isUuid(value)) {
      params[route.runParam] = value.toLowerCase();
      run = await host.kernel.db.maybeOne('select id, company_id from runs where id = ?', [value.toLowerCase()]);
    }
    if (run && canAccessCompany(actor, run.company_id)) {
      ctx.state.auditCompanyId = run.company_id;
      companyId = run.company_id;
    }
  } else if (actor.kind === 'agent') {
    companyId = actor.companyId;
  }
  ctx.state.companyId = companyId;
  const query = { ...ctx.query } as Record<string, unknown>;
  // Whatever the plugin's schema says: its SQL could not send a NUL to PostgreSQL either.
  assertStorableQuery(query);
  validate(pluginQueryAjv, route.query, query, 'query');
  assertFiniteQuery(query);
  let body: unknown = null;
  const upload = route.upload ? await receiveUpload(ctx, host, plugin, route, companyId) : undefined;
  const proxied = route.proxy ? await readProxyBody(ctx, route.proxy) : undefined;
  if (proxied) body = proxied.fields;
  else if (route.method !== 'GET' && !upload) {
    body = await readJsonBody(ctx, host.kernel.config.limits.jsonBodyBytes);
    if (body === undefined) body = route.body ? {} : null;
    validate(pluginBodyAjv, route.body, body, 'request body');
  }
  if (route.companyField) companyId = await companyFromField(ctx, host, route.method === 'GET' ? query : body, route.companyField, companyId, route.authCodes);
  if (route.agentBodyField && companyId && route.method !== 'GET' && !upload) await assertAgentOfCompany(host, body, route.agentBodyField, companyId);
  ctx.state.companyId = companyId;
  const headers = routeHeaders(ctx);
  const readOnly = route.readOnly ?? route.method === 'GET';
  const transactional = !readOnly && (route.transactional ?? true);
  const clientKey = clientKeyOf(host, plugin, ctx.ip);
  const input = upload ? { params, query, body, headers, companyId, clientKey, upload } : { params, query, body, headers, companyId, clientKey };
  const call = (callCompanyId: string | null) => host.invoke(plugin, 'route', route.key, route.perCompany ? { ...input, companyId: callCompanyId } : input, {
    companyId: callCompanyId,
    ...invocationCaller(actor),
  }, {
    transactional,
    readOnly,
    batch: route.batch && transactional && !readOnly ? { key: route.key, maxItems: route.batch.maxItems ?? 100, maxInFlight: route.batch.maxInFlight ?? 2 } : undefined,
    // A proxied call is recorded in the proxied-call ledger (and by the plugin on proxy.finished), not once more per request.
    // A keyed create that wrote nothing answered what its key created before: a replay leaves no entry.
    defaultActivity: readOnly || route.proxy ? null : {
      action: `plugin.${plugin}.${route.key}`, entityType: 'plugin_route', entityId: `${route.method} ${pluginRoute.fullPath}`,
      ...(route.idempotencyKey && ctx.get('idempotency-key') ? { onlyIfWritten: true } : {}),
    },
    // A route may declare a longer deadline than the plugin's default (an import): the request keeps its connection meanwhile.
    deadlineMs: route.timeoutMs,
  });
  const invoked = route.perCompany
    ? servePerCompany(host, plugin, route, input, actor, call)
    : call(companyId);
  const result = await invoked.catch(async (error: unknown) => {
    // A plugin that could not be invoked at all (not running, busy) keeps no upload either.
    if (upload) await discardUpload(host, upload);
    throw error;
  });
  // A mutating route's entry was written by the plugin's transaction (its own, or the host's
  // default one); a read-only route ran its statements read-only and changed nothing.
  ctx.state.activityWritten = true;
  // A failed call keeps no upload; nor does a keyed upload the plugin answered as a replay (the first one's file stays).
  if (upload && (!result.ok || isReplay(result))) await discardUpload(host, upload);
  if (route.download && await sendDownload(ctx, host, plugin, result, companyId)) return;
  if (proxied && await answerProxy(ctx, host, plugin, result, { raw: proxied.raw, parsed: proxied.parsed, companyId, receivedAt })) return;
  respond(ctx, result, route.successStatus ?? 200, { response: route.response, stream: { hub: host.streams, plugin, companyId, actor } });
}

/** A perCompany route: its selection first when it declares one (companiesToServe), then one call per company served. */
async function servePerCompany(host: ExtensionHost, plugin: string, route: RouteManifest, input: Record<string, unknown>, actor: Actor, call: (companyId: string | null) => Promise<InvokeResult>): Promise<InvokeResult> {
  const select = route.perCompany!.select;
  const selection = select === undefined ? null : () => host.invoke(plugin, 'route', select, { ...input, companyId: null }, { companyId: null, ...invocationCaller(actor) }, {
    transactional: true, readOnly: true, defaultActivity: null, deadlineMs: route.timeoutMs,
  });
  const served = await companiesToServe(await activeCompanies(host), selection);
  return 'failed' in served ? served.failed : invokePerCompany(served.companies, route.perCompany!.sum ?? [], call);
}

/** The companies a perCompany route serves: every one that is not archived, oldest first. */
async function activeCompanies(host: ExtensionHost): Promise<string[]> {
  return (await host.kernel.db.query<{ id: string }>("select id from companies where status <> 'archived' order by created_at, id")).map((row) => row.id);
}

/** Whether a route's answer is the replay of a keyed create (`x-idempotent-replayed: true`, createOnce). */
function isReplay(result: InvokeResult): boolean {
  const headers = result.envelope?.headers;
  return typeof headers === 'object' && headers !== null && (headers as Record<string, unknown>)['x-idempotent-replayed'] === 'true';
}
