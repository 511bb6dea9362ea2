import { createHmac, timingSafeEqual } from 'node:crypto';
import { pluginSchemaAjv } from '../build/validate-manifest.ts';
import type { ValidateFunction } from 'ajv';
import type { RouteResponseManifest, WebhookManifest } from '../plugin/manifest.ts';
import { PluginCallError } from './errors.ts';

/**
 * A route or webhook answer as the kernel would send it over HTTP. A raw body is the string with
 * its `content-type` header; server-sent events are in `events` (and `stream.channel` when the
 * kernel would hold the connection on that channel of the request's company).
 */
export interface RouteAnswer { status: number; body: unknown; headers: Record<string, string>; events?: unknown[]; stream?: { channel: string }; proxy?: Record<string, unknown> }

// The same ajv settings as the host's route dispatch: defaults applied, query values coerced.
const bodyAjv = pluginSchemaAjv({ allErrors: true, useDefaults: true });
const queryAjv = pluginSchemaAjv({ allErrors: true, useDefaults: true, coerceTypes: true });
const compiled = { body: new WeakMap<object, ValidateFunction>(), query: new WeakMap<object, ValidateFunction>() };

/** Validates in place (defaults, coercion) like the host does before the isolate runs; throws 400 `validation_failed`. */
export function validateInput(schema: object | undefined, value: unknown, where: string, coerce = false): void {
  if (!schema) return;
  const cache = coerce ? compiled.query : compiled.body;
  let check = cache.get(schema);
  if (!check) { check = (coerce ? queryAjv : bodyAjv).compile(schema); cache.set(schema, check); }
  if (check(value)) return;
  const issues = (check.errors ?? []).map((e) => {
    const base = e.instancePath.replace(/^\//, '').replaceAll('/', '.');
    const missing = e.keyword === 'required' ? (e.params as { missingProperty: string }).missingProperty : '';
    return { path: [base, missing].filter(Boolean).join('.') || '(body)', message: e.keyword === 'required' ? 'is required' : e.message ?? 'is invalid' };
  });
  throw new PluginCallError(400, 'validation_failed', `Invalid ${where}: ${issues[0]!.path} ${issues[0]!.message}${issues.length > 1 ? ` (and ${issues.length - 1} more)` : ''}`, { issues });
}

/** The error body every kernel route answers with. */
export function errorAnswer(error: PluginCallError): RouteAnswer {
  const body: Record<string, unknown> = { error: error.message, code: error.code };
  if (error.details !== undefined) body.details = error.details;
  if (error.issues !== undefined) body.issues = error.issues;
  return { status: error.status >= 400 && error.status <= 599 ? error.status : 500, body, headers: {} };
}

/**
 * A handler's return value as an HTTP answer: `respond(status, body, headers)` or a plain body with
 * the success status; on a route declaring `response`, raw strings and event answers as the host
 * sends them (the full checks are the host's: kernel/host/contributions/route-answer.ts).
 */
export function successAnswer(value: unknown, successStatus: number, response?: RouteResponseManifest): RouteAnswer {
  const rawType = response?.contentTypes?.[0];
  const envelope = value && typeof value === 'object' && '$response' in value
    ? (value as { $response: { status?: number; body?: unknown; headers?: Record<string, string>; events?: unknown[]; stream?: { channel: string } } }).$response : null;
  if (!envelope) {
    if (typeof value === 'string' && rawType) return { status: successStatus, body: value, headers: { 'content-type': rawType } };
    return { status: successStatus, body: value ?? null, headers: {} };
  }
  const headers: Record<string, string> = {};
  let contentType: string | undefined;
  // The host forwards only these response headers.
  for (const [name, headerValue] of Object.entries(envelope.headers ?? {})) {
    if (name.toLowerCase() === 'content-type') contentType = String(headerValue).split(';')[0]!.trim().toLowerCase();
    else if (/^(x-[a-z0-9-]+|cache-control|etag|location|content-language|content-disposition|mcp-session-id)$/i.test(name) && !/^x-(request-id|content-type-options)$/i.test(name)) headers[name.toLowerCase()] = String(headerValue);
  }
  const proxy = (envelope as { proxy?: Record<string, unknown> }).proxy;
  // A proxy answer (respondProxy): the spec as the kernel would receive it; the exchange itself is the kernel's.
  if (proxy !== undefined) return { status: 200, body: null, headers: {}, proxy };
  if (envelope.events !== undefined || envelope.stream !== undefined) {
    if (response?.stream !== 'sse') throw new PluginCallError(502, 'plugin_invalid_response', "The plugin answered server-sent events on a route that does not declare response.stream 'sse'");
    return { status: 200, body: null, headers: { ...headers, 'content-type': 'text/event-stream' }, events: envelope.events ?? [], ...(envelope.stream ? { stream: envelope.stream } : {}) };
  }
  if (contentType !== undefined && contentType !== 'application/json' && !response?.contentTypes?.includes(contentType as never)) {
    throw new PluginCallError(502, 'plugin_invalid_response', `The plugin answered with content type ${contentType}, which the route does not declare under response.contentTypes`);
  }
  const status = envelope.status && envelope.status >= 200 && envelope.status <= 599 ? envelope.status : successStatus;
  if (typeof envelope.body === 'string' && rawType && contentType !== 'application/json') headers['content-type'] = contentType ?? rawType;
  return { status, body: envelope.body ?? null, headers };
}

/** Hex HMAC-SHA256 of the delivery (of `timestamp.body` when the webhook declares a timestamp header). */
export function webhookSignature(secret: string, body: string, timestamp?: string): string {
  return createHmac('sha256', secret).update(timestamp === undefined ? body : `${timestamp}.${body}`).digest('hex');
}

/**
 * Checks a delivery against the webhook's signature declaration before anything reads the
 * body, with the host's rules and error codes (kernel/host/contributions/webhook-signature.ts).
 * Returns null when it verifies.
 */
export function verifyWebhook(webhook: WebhookManifest, config: Record<string, unknown>, headers: Record<string, string>, body: string, now = Date.now()): PluginCallError | null {
  const signature = webhook.signature!;
  const secret = config[signature.secretConfigKey];
  if (typeof secret !== 'string' || secret.length === 0) {
    return new PluginCallError(503, 'webhook_secret_missing', 'This webhook endpoint has no signing secret configured; deliveries are refused until one is set');
  }
  const provided = (headers[signature.header.toLowerCase()] ?? '').trim();
  if (!provided) return new PluginCallError(401, 'webhook_signature_missing', `Missing webhook signature header ${signature.header}`);
  let timestamp: string | undefined;
  if (signature.timestampHeader) {
    timestamp = (headers[signature.timestampHeader.toLowerCase()] ?? '').trim();
    if (!/^\d{1,12}$/.test(timestamp)) return new PluginCallError(401, 'webhook_timestamp_invalid', `Missing or malformed webhook timestamp header ${signature.timestampHeader}`);
  }
  const expected = Buffer.from(webhookSignature(secret, body, timestamp), 'hex');
  const match = /^(?:sha256=)?([0-9a-fA-F]{64})$/.exec(provided);
  if (!match || !timingSafeEqual(expected, Buffer.from(match[1]!, 'hex'))) return new PluginCallError(401, 'webhook_signature_invalid', 'Invalid webhook signature');
  const tolerance = signature.toleranceSeconds ?? 300;
  if (timestamp !== undefined && Math.abs(now / 1000 - Number(timestamp)) > tolerance) {
    return new PluginCallError(401, 'webhook_timestamp_stale', `Webhook timestamp is outside the accepted window of ${tolerance} seconds`);
  }
  return null;
}
