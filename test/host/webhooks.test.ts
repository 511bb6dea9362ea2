import { createHmac } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../kernel/config/load.ts';
import { startKernel, type RunningKernel } from '../../kernel/kernel.ts';
import { createLogger } from '../../kernel/logger.ts';
import { createApi, startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/webhook-fx', import.meta.url));
const KEY = 'webhook-fx';
const SECRET = 'whsec_fixture_secret_1';
const INSTANCE_SECRET = 'webhooks-test-shared-instance-secret-0123456789';
const MIB = 1024 * 1024;
let t: TestKernel;

const sign = (body: string | Buffer, secret = SECRET) => createHmac('sha256', secret).update(body).digest('hex');
const now = () => Math.floor(Date.now() / 1000);

/** Posts raw bytes to an endpoint, as an outside sender would: no kernel credentials. */
function deliver(endpoint: string, body: string | Uint8Array, headers: Record<string, string> = {}, base = t.url) {
  return fetch(`${base}/api/plugins/${KEY}/webhooks/${endpoint}`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: body as BodyInit,
  }).then(async (res) => {
    const text = await res.text();
    return { status: res.status, text, body: text ? JSON.parse(text) : null };
  });
}

async function count(sql: string, params: unknown[] = []): Promise<number> {
  return (await t.sql.query(sql, params)).rows[0].n;
}
const deliveries = (endpoint: string) => count('select count(*)::int as n from plugin_webhookfx.deliveries where endpoint = $1', [endpoint]);
const webhookActivity = () => count("select count(*)::int as n from activity_log where entity_type = 'plugin_webhook'");

beforeAll(async () => {
  t = await startTestKernel({ auth: { agentJwtSecret: INSTANCE_SECRET } });
  await installAndEnable(t, FIXTURE);
  const config = await t.api.post(`/api/plugins/${KEY}/config`, { config: { signingSecret: SECRET } });
  expect(config.status, config.text).toBe(200);
});
afterAll(async () => { await t?.stop(); });

describe('unsigned endpoints', () => {
  it('accept a delivery from outside, hand the raw body and a safe subset of headers to the plugin, and record activity', async () => {
    const before = await webhookActivity();
    const body = '{"event":"ping"}';
    const res = await deliver('plain', body, {
      authorization: 'Bearer not-a-kernel-credential', cookie: 'session=abc', 'x-forwarded-for': '10.0.0.1',
      'x-delivery-id': 'd-1', 'user-agent': 'sender/1.0',
    });
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({ endpoint: 'plain', verified: false, body });
    expect(res.body.headers).toMatchObject({ 'x-delivery-id': 'd-1', 'user-agent': 'sender/1.0', 'content-type': 'application/json' });
    for (const withheld of ['authorization', 'cookie', 'x-forwarded-for', 'host', 'connection']) expect(res.body.headers).not.toHaveProperty(withheld);
    expect(res.body.invocation).toMatchObject({ kind: 'webhook', target: 'plain', companyId: null, actor: { type: 'system', id: 'webhook', agentId: null } });
    expect(await webhookActivity()).toBe(before + 1);
    const entry = (await t.sql.query("select company_id, actor_type, actor_id, action, entity_id, details from activity_log where entity_type = 'plugin_webhook' order by seq desc limit 1")).rows[0];
    expect(entry).toEqual({ company_id: null, actor_type: 'system', actor_id: 'webhook', action: 'plugin.webhook_received', entity_id: 'webhook-fx.plain', details: { plugin: KEY, endpoint: 'plain', verified: false, bytes: body.length } });
  });

  it('answers 404 for unknown endpoints and plugins without reading further', async () => {
    for (const path of [`/api/plugins/${KEY}/webhooks/nope`, '/api/plugins/no-such-plugin/webhooks/plain']) {
      const res = await fetch(t.url + path, { method: 'POST', body: '{}' });
      expect(res.status, path).toBe(404);
      expect(await res.json()).toEqual({ error: 'Webhook endpoint not found', code: 'webhook_not_found', requestId: res.headers.get('x-request-id') });
    }
  });
});

describe('signed endpoints', () => {
  it('accept a correctly signed delivery and never parse the body', async () => {
    const body = '{"event": "created", "id": 1';
    const res = await deliver('signed', body, { 'x-fx-signature': sign(body) });
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({ verified: true, body });
    const prefixed = '{"event":"prefixed"}';
    expect((await deliver('signed', prefixed, { 'x-fx-signature': `sha256=${sign(prefixed)}` })).status).toBe(202);
  });

  it('refuse every way of skipping the signature, before the plugin runs, without activity', async () => {
    const stored = await deliveries('signed');
    const activity = await webhookActivity();
    const body = '{"event":"transfer","amount":100}';
    const cases: Array<[string, string | Uint8Array, Record<string, string>, string]> = [
      ['no header', body, {}, 'webhook_signature_missing'],
      ['empty header', body, { 'x-fx-signature': '' }, 'webhook_signature_missing'],
      ['signature in another header', body, { 'x-signature': sign(body), 'x-hub-signature-256': `sha256=${sign(body)}` }, 'webhook_signature_missing'],
      ['wrong secret', body, { 'x-fx-signature': sign(body, 'another-secret') }, 'webhook_signature_invalid'],
      ['body changed after signing', body.replace('100', '1000'), { 'x-fx-signature': sign(body) }, 'webhook_signature_invalid'],
      ['truncated signature', body, { 'x-fx-signature': sign(body).slice(0, 63) }, 'webhook_signature_invalid'],
      ['not hex', body, { 'x-fx-signature': 'z'.repeat(64) }, 'webhook_signature_invalid'],
      ['signature of an empty body', body, { 'x-fx-signature': sign('') }, 'webhook_signature_invalid'],
      ['malformed JSON, bad signature', '{"broken": ', { 'x-fx-signature': sign('{"other": 1}') }, 'webhook_signature_invalid'],
      ['secret as signature', body, { 'x-fx-signature': SECRET }, 'webhook_signature_invalid'],
    ];
    for (const [what, payload, headers, code] of cases) {
      const res = await deliver('signed', payload, headers);
      expect(res.status, what).toBe(401);
      expect(res.body.code, what).toBe(code);
    }
    expect(await deliveries('signed')).toBe(stored);
    expect(await webhookActivity()).toBe(activity);
    const logs = await t.api.get(`/api/plugins/${KEY}/logs`);
    expect(logs.body.logs.some((l: any) => l.message === 'webhook signed: delivery refused (webhook_signature_invalid)')).toBe(true);
  });

  it('refuses a replayed delivery with 409, through the database', async () => {
    const body = '{"event":"once"}';
    const headers = { 'x-fx-signature': sign(body) };
    expect((await deliver('signed', body, headers)).status).toBe(202);
    const replay = await deliver('signed', body, headers);
    expect(replay.status).toBe(409);
    expect(replay.body).toEqual({ error: 'This webhook delivery was already received', code: 'webhook_replayed', requestId: expect.any(String) });
    expect(await count("select count(*)::int as n from plugin_webhookfx.deliveries where body = $1", [body])).toBe(1);
    const seen = (await t.sql.query("select expires_at from keel_host.webhook_deliveries where plugin_key = $1 and endpoint_key = 'signed'", [KEY])).rows;
    expect(seen.length).toBeGreaterThan(0);
    // Without a timestamp, a signature is remembered for the default tolerance (300 s).
    const latest = Math.max(...seen.map((r: any) => new Date(r.expires_at).getTime()));
    expect(latest).toBeGreaterThan(Date.now() + 290_000);
    expect(latest).toBeLessThan(Date.now() + 310_000);
  });

  it('forgets the signature of a delivery the plugin failed, so the sender can retry', async () => {
    const body = '{"event":"please fail"}';
    const headers = { 'x-fx-signature': sign(body) };
    const first = await deliver('signed', body, headers);
    expect(first.status).toBe(503);
    expect(first.body).toEqual({ error: 'the fixture was asked to fail', code: 'try_later', requestId: expect.any(String) });
    const retry = await deliver('signed', body, headers);
    expect(retry.status).toBe(503);
    // The plugin's own writes rolled back both times, and each attempt left an entry.
    expect(await count("select count(*)::int as n from plugin_webhookfx.deliveries where body = $1", [body])).toBe(0);
    const failed = (await t.sql.query("select details from activity_log where action = 'plugin.webhook_failed' order by seq")).rows;
    expect(failed.map((r: any) => r.details)).toEqual([
      { plugin: KEY, endpoint: 'signed', verified: true, bytes: body.length, error: 'try_later' },
      { plugin: KEY, endpoint: 'signed', verified: true, bytes: body.length, error: 'try_later' },
    ]);
  });

  it('refuses bodies over 1 MiB with 413, declared or streamed, before verifying or invoking', async () => {
    const stored = await deliveries('signed');
    const big = Buffer.alloc(MIB + 1, 'a');
    const declared = await deliver('signed', big, { 'x-fx-signature': sign(big) });
    expect(declared.status).toBe(413);
    expect(declared.body.code).toBe('payload_too_large');
    const streamed = await fetch(`${t.url}/api/plugins/${KEY}/webhooks/signed`, {
      method: 'POST', headers: { 'x-fx-signature': sign(big) }, duplex: 'half',
      body: new ReadableStream({ start(controller) { for (let i = 0; i < 5; i++) controller.enqueue(big.subarray(0, big.length / 4)); controller.close(); } }),
    } as RequestInit);
    expect(streamed.status).toBe(413);
    const exact = Buffer.alloc(MIB, 'b');
    expect((await deliver('signed', exact, { 'x-fx-signature': sign(exact) })).status).toBe(202);
    expect(await deliveries('signed')).toBe(stored + 1);
  });

  it('fails closed when the endpoint has no secret configured', async () => {
    const body = '{}';
    for (const signature of [sign(body, ''), sign(body), 'x']) {
      const res = await deliver('unconfigured', body, { 'x-fx-signature': signature });
      expect(res.status).toBe(503);
      expect(res.body.code).toBe('webhook_secret_missing');
    }
    expect(await deliveries('unconfigured')).toBe(0);
  });

  it('uses the secret as stored now: a rotated secret takes effect at once', async () => {
    const rotated = 'whsec_rotated_2';
    expect((await t.api.post(`/api/plugins/${KEY}/config`, { config: { signingSecret: rotated } })).status).toBe(200);
    try {
      const body = '{"event":"after-rotation"}';
      expect((await deliver('signed', body, { 'x-fx-signature': sign(body) })).status).toBe(401);
      expect((await deliver('signed', body, { 'x-fx-signature': sign(body, rotated) })).status).toBe(202);
    } finally {
      expect((await t.api.post(`/api/plugins/${KEY}/config`, { config: { signingSecret: SECRET } })).status).toBe(200);
    }
  });
});

describe('timestamped signatures', () => {
  const signed = (body: string, ts: number, secret = SECRET) => ({ 'x-fx-signature': sign(`${ts}.${body}`, secret), 'x-fx-timestamp': String(ts) });

  it('accept a fresh delivery signed over timestamp and body', async () => {
    const body = '{"event":"timed"}';
    const res = await deliver('timed', body, signed(body, now()));
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({ verified: true, body });
  });

  it('refuse stale, future, missing or re-stamped timestamps', async () => {
    const stored = await deliveries('timed');
    const body = '{"event":"timed-refused"}';
    const ts = now();
    const cases: Array<[string, Record<string, string>, string]> = [
      ['stale', signed(body, ts - 120), 'webhook_timestamp_stale'],
      ['far future', signed(body, ts + 120), 'webhook_timestamp_stale'],
      ['missing timestamp', { 'x-fx-signature': sign(`${ts}.${body}`) }, 'webhook_timestamp_invalid'],
      ['malformed timestamp', { 'x-fx-signature': sign(`${ts}.${body}`), 'x-fx-timestamp': `${ts}.5` }, 'webhook_timestamp_invalid'],
      ['timestamp changed after signing', { ...signed(body, ts - 120), 'x-fx-timestamp': String(ts) }, 'webhook_signature_invalid'],
      ['body signed without the timestamp', { 'x-fx-signature': sign(body), 'x-fx-timestamp': String(ts) }, 'webhook_signature_invalid'],
    ];
    for (const [what, headers, code] of cases) {
      const res = await deliver('timed', body, headers);
      expect(res.status, what).toBe(401);
      expect(res.body.code, what).toBe(code);
    }
    expect(await deliveries('timed')).toBe(stored);
  });

  it('refuse a replay within the window, remembering it until the timestamp turns stale', async () => {
    const body = '{"event":"timed-once"}';
    const ts = now();
    expect((await deliver('timed', body, signed(body, ts))).status).toBe(202);
    expect((await deliver('timed', body, signed(body, ts))).status).toBe(409);
    const row = (await t.sql.query("select expires_at from keel_host.webhook_deliveries where endpoint_key = 'timed' order by received_at desc limit 1")).rows[0];
    expect(new Date(row.expires_at).getTime()).toBe((ts + 60) * 1000);
  });
});

describe('across processes and lifecycle', () => {
  let second: RunningKernel | undefined;
  afterAll(async () => { await second?.stop(); });

  it('refuses a replay sent to another kernel process sharing the database', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'keel-test-second-'));
    try {
      second = await startKernel(loadConfig({
        env: {},
        overrides: {
          dataDir, database: { url: t.databaseUrl, poolSize: 5 }, logging: { level: 'silent' }, auth: { agentJwtSecret: INSTANCE_SECRET },
          server: { host: '127.0.0.1', port: 0, exposure: 'private' },
        },
      }), { log: createLogger('silent'), port: 0, bootstrapFirstParty: false });
      expect((await createApi(second.url).get(`/api/plugins/${KEY}/health`)).body.healthy).toBe(true);
      const body = '{"event":"cross-process"}';
      const headers = { 'x-fx-signature': sign(body) };
      expect((await deliver('signed', body, headers, second.url)).status).toBe(202);
      expect((await deliver('signed', body, headers, t.url)).status).toBe(409);
      expect((await deliver('signed', body, headers, second.url)).status).toBe(409);
    } finally {
      await second?.stop();
      second = undefined;
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  it('answers 409 while the plugin is disabled', async () => {
    expect((await t.api.post(`/api/plugins/${KEY}/disable`, {})).status).toBe(200);
    try {
      const body = '{"event":"while-disabled"}';
      const res = await deliver('signed', body, { 'x-fx-signature': sign(body) });
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ error: `Plugin ${KEY} is not enabled`, code: 'plugin_not_enabled', requestId: expect.any(String) });
    } finally {
      expect((await t.api.post(`/api/plugins/${KEY}/enable`, {})).status).toBe(200);
    }
  });
});
