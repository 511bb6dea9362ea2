import type { Context } from 'koa';
import type { Actor } from '../../auth/actor.ts';
import { assertStorableJson, readRaw } from '../../http/body.ts';
import { KeelError, validationFailed } from '../../http/errors.ts';
import type { RouteProxyManifest } from '../../../sdk/plugin/manifest.ts';
import type { ExtensionHost } from '../extension-host.ts';
import type { InvokeResult } from '../plugin-process.ts';

/** A proxy route's body limit when it declares none (the kernel's JSON limit does not apply). */
export const DEFAULT_PROXY_BODY_BYTES = 32 * 1024 * 1024;

/** Whether a request goes to a route declaring `proxy` (which answers a refused credential itself). */
export function isProxyRoute(host: ExtensionHost, method: string, path: string): boolean {
  const match = host.routes.match(method, path);
  return match !== null && 'route' in match && match.route.route.proxy !== undefined;
}

/**
 * The caller of a proxy route whose credential is in one of its `credentialHeaders` (a model
 * client's `x-api-key`, `x-goog-api-key`) rather than in Authorization: resolved like a bearer
 * token, anonymous when it is not a Keel credential. This replaces the local board a
 * local_trusted instance gives a request without Authorization: the header names the caller.
 */
export async function proxyCaller(ctx: Context, host: ExtensionHost, proxy: RouteProxyManifest): Promise<void> {
  if (/^Bearer\s+\S/i.test(ctx.get('authorization'))) return;
  for (const name of proxy.credentialHeaders ?? []) {
    const token = ctx.get(name).trim();
    if (!token) continue;
    ctx.state.actor = await host.kernel.resolver.resolveToken(ctx, token) as Actor;
    return;
  }
}

/** The body of a proxy request: read raw (the bytes forwarded), parsed once; only `bodyFields` cross into the isolate. */
export async function readProxyBody(ctx: Context, proxy: RouteProxyManifest): Promise<{ raw: Buffer; parsed: Record<string, unknown>; fields: Record<string, unknown> }> {
  const limit = proxy.maxBodyBytes ?? DEFAULT_PROXY_BODY_BYTES;
  const declared = ctx.request.length;
  if (declared !== undefined && declared > limit) throw new KeelError(413, 'payload_too_large', `Request body exceeds the limit of ${limit} bytes`);
  const raw = await readRaw(ctx, limit);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch (error) {
    throw validationFailed(`Invalid request body: not JSON (${(error as Error).message})`, [{ path: '(body)', message: 'is not JSON', keyword: 'type' }]);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw validationFailed('Invalid request body: must be a JSON object', [{ path: '(body)', message: 'must be a JSON object', keyword: 'type' }]);
  }
  const body = parsed as Record<string, unknown>;
  const fields: Record<string, unknown> = {};
  for (const name of proxy.bodyFields ?? []) if (Object.hasOwn(body, name)) fields[name] = body[name];
  // The fields cross into the isolate as JSON: refused as any body a plugin receives would be.
  assertStorableJson(fields);
  return { raw, parsed: body, fields };
}

/**
 * A proxy route's answer: a respondProxy envelope is forwarded by the model gateway (only for a
 * plugin that holds http.proxy, and only for a call serving a company, whose key it names);
 * anything else is written as any route's answer is.
 */
export async function answerProxy(ctx: Context, host: ExtensionHost, plugin: string, result: InvokeResult, request: { raw: Buffer; parsed: Record<string, unknown>; companyId: string | null; receivedAt: number }): Promise<boolean> {
  const spec = result.ok ? proxyOf(result) : undefined;
  if (spec === undefined) return false;
  const invalid = (message: string) => new KeelError(502, 'plugin_invalid_response', message, { expose: true });
  if (!host.plugins.get(plugin)?.row.granted_capabilities.includes('http.proxy')) throw invalid('The plugin answered a proxy without the http.proxy capability');
  if (!request.companyId) throw invalid('The plugin answered a proxy for a call that serves no company (the key must be a secret of the calling agent\'s company)');
  ctx.respond = false;
  ctx.state.skipAudit = true;
  try {
    await host.kernel.gateway.forward({ plugin, companyId: request.companyId, spec, rawBody: request.raw, parsedBody: request.parsed, req: ctx.req, res: ctx.res, receivedAt: request.receivedAt });
    ctx.status = ctx.res.statusCode;
  } catch (error) {
    // Nothing was written: the kernel's JSON error answers it.
    if (!ctx.res.headersSent) ctx.respond = true;
    throw error;
  }
  return true;
}

function proxyOf(result: InvokeResult): unknown {
  if (result.envelope) return result.envelope.proxy;
  const raw = result.value ?? '';
  if (!raw.startsWith('{"$response"')) return undefined;
  const parts = (JSON.parse(raw) as { $response?: Record<string, unknown> }).$response;
  return parts && typeof parts === 'object' ? parts.proxy : undefined;
}
