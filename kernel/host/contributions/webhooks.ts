import type { Context } from 'koa';
import type { PluginManifest, WebhookManifest } from '../../../sdk/plugin/manifest.ts';
import { readRaw } from '../../http/body.ts';
import { conflict, KeelError, notFound, payloadTooLarge } from '../../http/errors.ts';
import { respond } from './route-answer.ts';
import type { ExtensionHost } from '../extension-host.ts';
import type { InvokeResult } from '../plugin-process.ts';
import { appendPluginLog } from './plugin-log.ts';
import { verifySignature } from './webhook-signature.ts';

export const MAX_WEBHOOK_BYTES = 1024 * 1024;
/** Headers that carry the caller's credentials to this host, or describe the connection: never forwarded. */
const WITHHELD_HEADERS = new Set([
  'authorization', 'proxy-authorization', 'cookie', 'host', 'connection', 'keep-alive', 'transfer-encoding',
  'upgrade', 'te', 'trailer', 'forwarded', 'x-real-ip', 'x-service-run-id',
]);
const MAX_FORWARDED_HEADERS = 64;
const MAX_HEADER_VALUE = 4096;

/** The headers a plugin sees: no credentials, no hop-by-hop or proxy headers, bounded in count and size. */
export function forwardedHeaders(headers: Context['headers']): Record<string, string> {
  const forwarded: Record<string, string> = {};
  let count = 0;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || WITHHELD_HEADERS.has(name) || name.startsWith('x-forwarded-')) continue;
    if (++count > MAX_FORWARDED_HEADERS) break;
    forwarded[name] = (Array.isArray(value) ? value.join(', ') : value).slice(0, MAX_HEADER_VALUE);
  }
  return forwarded;
}

/**
 * Inbound webhooks: POST /api/plugins/{pluginId}/webhooks/{endpointKey}, called from outside
 * with no board or agent credentials. The raw body is read with a 1 MiB limit and, when the
 * manifest declares a signature, verified against the secret in the plugin's configuration
 * (read from the database, so a rotated secret holds in every process) before anything parses
 * it. A verified signature is recorded in keel_host.webhook_deliveries until it expires, and
 * a second delivery with it is refused with 409 in every process. A delivery the plugin
 * fails forgets its signature again, so the sender's retry is accepted.
 */
export async function receiveWebhook(ctx: Context, host: ExtensionHost, pluginKey: string, endpointKey: string): Promise<void> {
  const db = host.kernel.db;
  const row = await db.maybeOne<{ status: string; config: Record<string, unknown> | null; manifest: PluginManifest }>(
    'select status, config, manifest from plugins where key = ?', [pluginKey]);
  const endpoint = row?.manifest.webhooks?.find((w) => w.key === endpointKey);
  if (!row || !endpoint) throw notFound('Webhook endpoint not found', 'webhook_not_found');
  const plugin = host.plugins.get(pluginKey);
  if (row.status !== 'enabled' || !plugin?.process || !(plugin.row.granted_capabilities ?? []).includes('webhooks.receive')) {
    throw conflict(`Plugin ${pluginKey} is not enabled`, undefined, 'plugin_not_enabled');
  }
  const declared = ctx.request.length;
  if (declared !== undefined && declared > MAX_WEBHOOK_BYTES) throw payloadTooLarge(MAX_WEBHOOK_BYTES);
  const raw = await readRaw(ctx, MAX_WEBHOOK_BYTES);

  let replay: { key: string; expiresAt: Date } | null = null;
  if (endpoint.signature) {
    try {
      const verified = verifySignature(endpoint.signature, row.config?.[endpoint.signature.secretConfigKey], (name) => ctx.get(name), raw, Date.now());
      replay = { key: verified.replayKey, expiresAt: verified.expiresAt };
    } catch (error) {
      appendPluginLog(plugin, 'warn', `webhook ${endpointKey}: delivery refused (${(error as KeelError).code})`);
      throw error;
    }
    await claimSignature(host, pluginKey, endpointKey, replay);
  }

  let result: InvokeResult;
  try {
    result = await host.invoke(pluginKey, 'webhook', endpointKey, { headers: forwardedHeaders(ctx.headers), body: raw.toString('utf8'), verified: replay !== null }, {
      companyId: null, actor: { type: 'system', id: 'webhook', agentId: null }, runId: null,
    }, { transactional: true, defaultActivity: null });
  } catch (error) {
    result = { ok: false, error: { status: 503, code: (error as KeelError).code ?? 'plugin_unavailable', message: (error as Error).message }, activityWritten: false };
  }
  if (!result.ok && replay) {
    await db.exec('delete from keel_host.webhook_deliveries where plugin_key = ? and endpoint_key = ? and signature_hash = ?', [pluginKey, endpointKey, replay.key]);
  }
  await recordDelivery(host, pluginKey, endpoint, { verified: replay !== null, bytes: raw.length, result });
  ctx.state.activityWritten = true;
  respond(ctx, result, 200);
}

/** Remembers a verified signature; a live earlier record of it means this delivery is a replay. */
async function claimSignature(host: ExtensionHost, pluginKey: string, endpointKey: string, replay: { key: string; expiresAt: Date }): Promise<void> {
  const claimed = await host.kernel.db.transaction(async (tx) => {
    await tx.exec('delete from keel_host.webhook_deliveries where plugin_key = ? and endpoint_key = ? and expires_at < now()', [pluginKey, endpointKey]);
    return tx.maybeOne(
      `insert into keel_host.webhook_deliveries (plugin_key, endpoint_key, signature_hash, expires_at) values (?, ?, ?, ?)
       on conflict (plugin_key, endpoint_key, signature_hash) do nothing returning signature_hash`,
      [pluginKey, endpointKey, replay.key, replay.expiresAt.toISOString()]);
  });
  if (!claimed) {
    appendPluginLog(host.plugins.get(pluginKey), 'warn', `webhook ${endpointKey}: replayed delivery refused`);
    throw conflict('This webhook delivery was already received', undefined, 'webhook_replayed');
  }
}

/** One instance-level activity entry per delivery that reached the plugin (refused ones go to the plugin's logs only). */
async function recordDelivery(host: ExtensionHost, pluginKey: string, endpoint: WebhookManifest, outcome: { verified: boolean; bytes: number; result: InvokeResult }): Promise<void> {
  await host.kernel.db.transaction(async (tx) => {
    await host.kernel.activity.record(tx, {
      companyId: null, actorType: 'system', actorId: 'webhook',
      action: outcome.result.ok ? 'plugin.webhook_received' : 'plugin.webhook_failed',
      entityType: 'plugin_webhook', entityId: `${pluginKey}.${endpoint.key}`,
      details: {
        plugin: pluginKey, endpoint: endpoint.key, verified: outcome.verified, bytes: outcome.bytes,
        ...(outcome.result.ok ? {} : { error: outcome.result.error?.code ?? 'plugin_error' }),
      },
    });
  });
}
