import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { startAnthropicModel, type ScriptedAnthropic } from '../../support/scripted-models/anthropic.ts';
import { addProvider, everythingReadable } from './helpers.ts';
import { callsSettled, costRows, liveRun, startGatewayWorld, type GatewayWorld } from './world.ts';

/**
 * Provider keys: a plain key becomes a secret of the company's vault (secrets.store) and only its
 * reference is kept; the value is never answered, logged or written to activity, and reaches the
 * provider only. And the provider test call, through the gateway's own path.
 */
let world: GatewayWorld;
let anthropic: ScriptedAnthropic;
const kernelLog: string[] = [];
const KEY = 'sk-ant-api03-VERY-SECRET-provider-key-7f3a9c';

beforeAll(async () => {
  world = await startGatewayWorld({}, { captureLogs: kernelLog });
  anthropic = await startAnthropicModel(() => ({ text: 'ok', usage: { inputTokens: 5, outputTokens: 1 } }), { apiKey: KEY });
});
afterAll(async () => {
  await anthropic?.close();
  await world?.stop();
});

const PRICE = [{ model: 'claude-*', inputCentsPerMTok: 1, cachedInputCentsPerMTok: 1, cacheWriteCentsPerMTok: 1, outputCentsPerMTok: 1 }];

describe('provider keys', () => {
  it('stores a plain key in the vault (audited as the vault writes it) and never shows it anywhere', async () => {
    const company = await createCompany(world.t.api);
    const provider = await addProvider(world.t.api, company.id, { baseUrl: anthropic.url, apiKey: KEY, models: PRICE, name: 'Keyed' });
    expect(JSON.stringify(provider)).not.toContain(KEY);
    const stored = await world.t.sql.query('select name, latest_version from secrets where id = $1 and company_id = $2', [provider.apiKeySecretId, company.id]);
    expect(stored.rows).toEqual([{ name: `model-gateway:provider/${provider.id}`, latest_version: 1 }]);
    const vaultActivity = await world.t.sql.query("select action, details from activity_log where company_id = $1 and entity_id = $2", [company.id, provider.apiKeySecretId]);
    expect(vaultActivity.rows).toEqual([{ action: 'secret.created', details: expect.objectContaining({ plugin: 'model-gateway', version: 1 }) }]);
    // A new key is a new version of the same secret, and the provider is pinned to it.
    const rotated = await world.t.api.patch(`/api/model-providers/${provider.id}`, { apiKey: `${KEY}-2` });
    expect(rotated.status).toBe(200);
    expect(rotated.body).toMatchObject({ apiKeySecretId: provider.apiKeySecretId, apiKeyVersion: 2 });
    // The call through the gateway sends that version (the scripted provider wants the first key: 401 now).
    const run = await liveRun(world, company.id);
    const res = await fetch(`${world.t.url}/api/llm/${provider.id}/v1/messages`, {
      method: 'POST', headers: { 'x-api-key': run.token, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-x', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(401);
    expect(anthropic.requests.at(-1)!.headers['x-api-key']).toBe(`${KEY}-2`);
    expect((await world.t.api.patch(`/api/model-providers/${provider.id}`, { apiKey: KEY })).status).toBe(200);
    const ok = await fetch(`${world.t.url}/api/llm/${provider.id}/v1/messages`, {
      method: 'POST', headers: { 'x-api-key': run.token, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-x', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(ok.status, await ok.text()).toBe(200);
    await world.t.api.post(`/api/model-providers/${provider.id}/test`, { model: 'claude-x' });
    await callsSettled(world.t);
    const readable = await everythingReadable(world.t, company.id);
    expect(readable).toContain(provider.id);
    expect(readable).not.toContain(KEY.slice(8));
    const events = await world.t.sql.query('select payload::text as p from keel_events.outbox where company_id = $1', [company.id]);
    const calls = await world.t.sql.query('select report::text as r from proxied_calls where company_id = $1', [company.id]);
    expect(JSON.stringify([events.rows, calls.rows])).not.toContain(KEY.slice(8));
    // Nor in anything the kernel logged, at trace level (the log lines are there: the check can fail).
    expect(kernelLog.join('\n')).toContain('model-gateway');
    expect(kernelLog.join('\n')).not.toContain(KEY.slice(8));
  });

  it('refused requests store nothing in the vault', async () => {
    const company = await createCompany(world.t.api);
    await addProvider(world.t.api, company.id, { name: 'Taken', baseUrl: anthropic.url, models: PRICE });
    const before = (await world.t.sql.query('select count(*)::int as n from secrets where company_id = $1', [company.id])).rows[0].n;
    const refusals = [
      await world.t.api.post(`/api/companies/${company.id}/model-providers`, { name: 'Taken', kind: 'anthropic', baseUrl: anthropic.url, apiKey: 'sk-should-not-store-1' }),
      await world.t.api.post(`/api/companies/${company.id}/model-providers`, { name: 'Bad URL', kind: 'anthropic', baseUrl: 'http://10.1.2.3', apiKey: 'sk-should-not-store-2' }),
      await world.t.api.post(`/api/companies/${company.id}/model-providers`, { name: 'Dup', kind: 'anthropic', baseUrl: anthropic.url, apiKey: 'sk-should-not-store-3', models: [...PRICE, ...PRICE] }),
      await world.t.api.post(`/api/companies/${company.id}/model-providers`, { name: 'Blank', kind: 'anthropic', baseUrl: anthropic.url, apiKey: '   ' }),
    ];
    expect(refusals.map((res) => res.status)).toEqual([409, 422, 422, 422]);
    const readable = await everythingReadable(world.t, company.id) + kernelLog.join('\n');
    expect(readable).not.toContain('sk-should-not-store');
    expect((await world.t.sql.query('select count(*)::int as n from secrets where company_id = $1', [company.id])).rows[0].n).toBe(before);
  });
});

describe('POST /api/model-providers/{id}/test', () => {
  it('makes one minimal call through the gateway\'s path with the company\'s key and keeps its outcome; no cost event', async () => {
    const company = await createCompany(world.t.api);
    const provider = await addProvider(world.t.api, company.id, { baseUrl: anthropic.url, apiKey: KEY, models: [{ ...PRICE[0], model: 'claude-probe' }] });
    const before = anthropic.requests.length;
    const res = await world.t.api.post(`/api/model-providers/${provider.id}/test`, {});
    expect(res.status, res.text).toBe(200);
    // The kernel's summary of the call, never the provider's bytes.
    expect(res.body).toEqual({ ok: true, status: 200, latencyMs: expect.any(Number), error: null });
    const seen = anthropic.requests.slice(before);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ path: '/v1/messages/count_tokens', body: { model: 'claude-probe', messages: [{ role: 'user', content: 'ping' }] } });
    expect(seen[0]!.headers['x-api-key']).toBe(KEY);
    await callsSettled(world.t);
    const after = await world.t.api.get(`/api/model-providers/${provider.id}`);
    expect(after.body.lastTest).toEqual({ ok: true, status: 200, latencyMs: expect.any(Number), error: null, testedAt: expect.any(String) });
    expect(await costRows(world.t, company.id)).toEqual([]);
  });

  it('answers the provider\'s own refusal (a wrong key) as a failed test, with the provider\'s message, and keeps it', async () => {
    const company = await createCompany(world.t.api);
    const provider = await addProvider(world.t.api, company.id, { baseUrl: anthropic.url, apiKey: 'sk-wrong', models: [{ ...PRICE[0], model: 'claude-probe' }] });
    const res = await world.t.api.post(`/api/model-providers/${provider.id}/test`, {});
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ ok: false, status: 401, latencyMs: expect.any(Number), error: expect.stringMatching(/^The provider answered 401: \S/) });
    expect(res.text).not.toContain('sk-wrong');
    await callsSettled(world.t);
    expect((await world.t.api.get(`/api/model-providers/${provider.id}`)).body.lastTest).toMatchObject({ ok: false, status: 401, error: 'the provider answered 401' });
  });

  it('a provider that cannot be reached is a failed test with the reason, not an error of the route', async () => {
    const company = await createCompany(world.t.api);
    const closed = await new Promise<number>((resolve) => {
      const server = createServer();
      server.listen(0, '127.0.0.1', () => { const { port } = server.address() as AddressInfo; server.close(() => resolve(port)); });
    });
    const provider = await addProvider(world.t.api, company.id, { baseUrl: `http://127.0.0.1:${closed}`, apiKey: KEY, models: [{ ...PRICE[0], model: 'claude-probe' }] });
    const res = await world.t.api.post(`/api/model-providers/${provider.id}/test`, {});
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ ok: false, status: null, latencyMs: expect.any(Number), error: expect.stringContaining('could not be reached') });
  });

  it('needs a model to test with (422) and is board only (403 for an agent)', async () => {
    const company = await createCompany(world.t.api);
    const provider = await addProvider(world.t.api, company.id, { baseUrl: anthropic.url, apiKey: KEY, models: PRICE });
    const before = anthropic.requests.length;
    const noModel = await world.t.api.post(`/api/model-providers/${provider.id}/test`, {});
    expect(noModel.status, noModel.text).toBe(422);
    expect(noModel.body.code).toBe('model_required');
    const agent = await createAgent(world.t.api, company.id);
    const key = (await world.t.api.post(`/api/agents/${agent.id}/keys`, { name: 'k' })).body.token;
    expect((await world.t.api.as(key).post(`/api/model-providers/${provider.id}/test`, { model: 'claude-x' })).status).toBe(403);
    expect(anthropic.requests.length).toBe(before);
  });
});
