import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsSettled } from '../../support/events.ts';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { activityOf, addProvider, ISO, LOCAL_PROVIDERS, postProvider, PRICE, providerBody, providerRows, PUBLIC_URL, UUID } from './helpers.ts';

let t: TestKernel;
beforeAll(async () => { t = await startTestKernel(LOCAL_PROVIDERS, { firstPartyDir: FIRST_PARTY_PLUGINS }); });
afterAll(async () => { await t?.stop(); });

describe('model providers: create, read, list', () => {
  it('creates a provider (201) with every field, the key replaced by a vault reference', async () => {
    const company = await createCompany(t.api);
    const res = await postProvider(t.api, company.id, providerBody({ name: 'Anthropic main', isDefault: true, allowUnpricedModels: true, baseUrl: `${PUBLIC_URL}/` }));
    expect(res.status, res.text).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID), companyId: company.id, name: 'Anthropic main', kind: 'anthropic', baseUrl: PUBLIC_URL,
      apiKey: { type: 'secret_ref', secretId: expect.stringMatching(UUID), version: 1 },
      apiKeySecretId: expect.stringMatching(UUID), apiKeyVersion: 1, models: [PRICE], allowUnpricedModels: true, isDefault: true, lastTest: null,
      createdAt: expect.stringMatching(ISO), updatedAt: expect.stringMatching(ISO),
    });
    expect(res.body.apiKey.secretId).toBe(res.body.apiKeySecretId);
    const got = await t.api.get(`/api/model-providers/${res.body.id}`);
    expect(got.status, got.text).toBe(200);
    expect(got.body).toEqual(res.body);
    const list = await t.api.get(`/api/companies/${company.id}/model-providers`);
    expect(list.status).toBe(200);
    expect(list.body).toEqual([res.body]);
    // The vault holds the key as a secret of the company, named for the plugin and the provider.
    const secrets = await t.api.get(`/api/companies/${company.id}/secrets`);
    expect(secrets.body).toEqual([expect.objectContaining({ id: res.body.apiKeySecretId, name: `model-gateway:provider/${res.body.id}`, latestVersion: 1 })]);
    const activity = await activityOf(t, company.id, 'model_provider.');
    expect(activity).toEqual([{ action: 'model_provider.created', entity_id: res.body.id, details: expect.objectContaining({ name: 'Anthropic main', kind: 'anthropic', isDefault: true }) }]);
  });

  it('accepts a secret reference of the company as is, and refuses another company\'s or an unknown one (422)', async () => {
    const company = await createCompany(t.api);
    const other = await createCompany(t.api);
    const mine = await t.api.post(`/api/companies/${company.id}/secrets`, { name: 'openai-key', value: 'sk-mine' });
    const theirs = await t.api.post(`/api/companies/${other.id}/secrets`, { name: 'openai-key', value: 'sk-theirs' });
    expect(mine.status).toBe(201);
    const ok = await postProvider(t.api, company.id, providerBody({ kind: 'openai', baseUrl: PUBLIC_URL, apiKey: { type: 'secret_ref', secretId: mine.body.id, version: 1 } }));
    expect(ok.status, ok.text).toBe(201);
    expect(ok.body).toMatchObject({ apiKeySecretId: mine.body.id, apiKeyVersion: 1 });
    for (const [ref, code] of [
      [{ type: 'secret_ref', secretId: theirs.body.id }, 'secret_not_found'],
      [{ type: 'secret_ref', secretId: randomUUID() }, 'secret_not_found'],
      [{ type: 'secret_ref', secretId: mine.body.id, version: 2 }, 'secret_version_not_found'],
    ] as const) {
      const res = await postProvider(t.api, company.id, providerBody({ apiKey: ref }));
      expect(res.status, res.text).toBe(422);
      expect(res.body.code).toBe(code);
    }
    expect(await providerRows(t, company.id)).toHaveLength(1);
  });

  it('refuses bad bodies with 400 naming the field, and changes nothing', async () => {
    const company = await createCompany(t.api);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ name: undefined }, 'name'],
      [{ kind: 'mistral' }, 'kind'],
      [{ baseUrl: undefined }, 'baseUrl'],
      [{ apiKey: undefined }, 'apiKey'],
      [{ apiKey: { type: 'secret_ref' } }, 'apiKey'],
      [{ models: [{ model: 'x', inputCentsPerMTok: -1, cachedInputCentsPerMTok: 0, cacheWriteCentsPerMTok: 0, outputCentsPerMTok: 0 }] }, 'models.0'],
      [{ models: [{ model: 'x*y', inputCentsPerMTok: 1, cachedInputCentsPerMTok: 0, cacheWriteCentsPerMTok: 0, outputCentsPerMTok: 0 }] }, 'models.0.model'],
      [{ models: [{ model: 'x', inputCentsPerMTok: 1 }] }, 'models.0'],
      [{ isDefault: 'yes' }, 'isDefault'],
      [{ extra: 1 }, 'extra'],
    ];
    for (const [fields, field] of cases) {
      const res = await postProvider(t.api, company.id, providerBody(fields));
      expect(res.status, `${JSON.stringify(fields)}: ${res.text}`).toBe(400);
      expect(res.body.code).toBe('validation_failed');
      expect(res.text).toContain(field);
    }
    expect(await providerRows(t, company.id)).toEqual([]);
    const secrets = await t.api.get(`/api/companies/${company.id}/secrets`);
    expect(secrets.body).toEqual([]);
  });

  it('checks baseUrl with the kernel\'s proxy target rule and the price table (422 naming the field); nothing is stored', async () => {
    const company = await createCompany(t.api);
    for (const baseUrl of ['http://93.184.216.34', 'https://user:pw@93.184.216.34', 'https://93.184.216.34/?x=1', 'https://10.0.0.5', 'http://169.254.169.254', 'not a url', 'http://127.0.0.2:8080']) {
      const res = await postProvider(t.api, company.id, providerBody({ baseUrl }));
      expect(res.status, `${baseUrl}: ${res.text}`).toBe(422);
      expect(res.body).toMatchObject({ code: 'invalid_base_url', details: { field: 'baseUrl' } });
    }
    const twice = await postProvider(t.api, company.id, providerBody({ models: [PRICE, { ...PRICE, inputCentsPerMTok: 1 }] }));
    expect(twice.status, twice.text).toBe(422);
    expect(twice.body).toMatchObject({ code: 'duplicate_model_price', details: { field: 'models.1.model' } });
    // The operator listed 127.0.0.1 (llm.privateNetworkHosts): a local provider is accepted.
    const local = await postProvider(t.api, company.id, providerBody({ baseUrl: 'http://127.0.0.1:9999/prefix' }));
    expect(local.status, local.text).toBe(201);
    expect(local.body.baseUrl).toBe('http://127.0.0.1:9999/prefix');
    expect(await providerRows(t, company.id)).toHaveLength(1);
    expect((await t.api.get(`/api/companies/${company.id}/secrets`)).body).toHaveLength(1);
  });

  it('keeps names unique in a company (409) but not across companies', async () => {
    const company = await createCompany(t.api);
    const other = await createCompany(t.api);
    await addProvider(t.api, company.id, { name: 'Main' });
    const clash = await postProvider(t.api, company.id, providerBody({ name: 'Main' }));
    expect(clash.status, clash.text).toBe(409);
    expect(clash.body.code).toBe('model_provider_name_taken');
    expect((await postProvider(t.api, other.id, providerBody({ name: 'Main' }))).status).toBe(201);
    expect((await t.api.get(`/api/companies/${company.id}/secrets`)).body).toHaveLength(1);
  });

  it('keeps one default per kind: a new default replaces the old one', async () => {
    const company = await createCompany(t.api);
    const first = await addProvider(t.api, company.id, { isDefault: true });
    const openai = await addProvider(t.api, company.id, { kind: 'openai', baseUrl: PUBLIC_URL, isDefault: true });
    const second = await addProvider(t.api, company.id, { isDefault: true });
    const byId = Object.fromEntries((await providerRows(t, company.id)).map((row) => [row.id, row.is_default]));
    expect(byId).toEqual({ [first.id]: false, [second.id]: true, [openai.id]: true });
    const patched = await t.api.patch(`/api/model-providers/${first.id}`, { isDefault: true });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.isDefault).toBe(true);
    expect((await t.api.get(`/api/model-providers/${second.id}`)).body.isDefault).toBe(false);
    const activity = await activityOf(t, company.id, 'model_provider.');
    expect(activity.at(-1)).toMatchObject({ action: 'model_provider.updated', entity_id: first.id, details: { replacedDefault: second.id } });
  });
});

describe('model providers: update and delete', () => {
  it('patches fields, stores a new key as a new version of the provider\'s secret, keeps kind', async () => {
    const company = await createCompany(t.api);
    const provider = await addProvider(t.api, company.id, { name: 'Before' });
    const res = await t.api.patch(`/api/model-providers/${provider.id}`, {
      name: 'After', baseUrl: `${PUBLIC_URL}/anthropic`, apiKey: 'sk-ant-rotated', models: [], allowUnpricedModels: true,
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ name: 'After', baseUrl: `${PUBLIC_URL}/anthropic`, models: [], allowUnpricedModels: true, kind: 'anthropic', apiKeySecretId: provider.apiKeySecretId, apiKeyVersion: 2 });
    const secret = await t.api.get(`/api/companies/${company.id}/secrets`);
    expect(secret.body).toEqual([expect.objectContaining({ id: provider.apiKeySecretId, latestVersion: 2 })]);
    const kind = await t.api.patch(`/api/model-providers/${provider.id}`, { kind: 'openai' });
    expect(kind.status).toBe(400);
    const empty = await t.api.patch(`/api/model-providers/${provider.id}`, {});
    expect(empty.status).toBe(400);
    const badUrl = await t.api.patch(`/api/model-providers/${provider.id}`, { baseUrl: 'http://93.184.216.34', apiKey: 'sk-never-stored' });
    expect(badUrl.status).toBe(422);
    expect((await t.api.get(`/api/companies/${company.id}/secrets`)).body[0].latestVersion).toBe(2);
    const activity = await activityOf(t, company.id, 'model_provider.updated');
    expect(activity).toHaveLength(1);
    expect(activity[0]!.details).toMatchObject({ keyReplaced: true, changed: ['allowUnpricedModels', 'apiKey', 'baseUrl', 'models', 'name'] });
  });

  it('renaming onto a taken name is 409; deleting answers ok and the provider is gone (404)', async () => {
    const company = await createCompany(t.api);
    const a = await addProvider(t.api, company.id, { name: 'A' });
    await addProvider(t.api, company.id, { name: 'B' });
    const clash = await t.api.patch(`/api/model-providers/${a.id}`, { name: 'B' });
    expect(clash.status).toBe(409);
    const deleted = await t.api.delete(`/api/model-providers/${a.id}`);
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body).toEqual({ ok: true, id: a.id });
    for (const res of [await t.api.get(`/api/model-providers/${a.id}`), await t.api.patch(`/api/model-providers/${a.id}`, { name: 'C' }), await t.api.delete(`/api/model-providers/${a.id}`)]) {
      expect(res.status).toBe(404);
    }
    expect((await activityOf(t, company.id, 'model_provider.deleted'))).toEqual([{ action: 'model_provider.deleted', entity_id: a.id, details: expect.objectContaining({ name: 'A' }) }]);
  });

  it('removes a deleted company\'s providers and limits', async () => {
    const company = await createCompany(t.api);
    await addProvider(t.api, company.id);
    await t.api.put(`/api/companies/${company.id}/model-gateway/limits`, { callsPerMinute: 5, tokensPerMinute: null });
    expect((await t.api.delete(`/api/companies/${company.id}`)).status).toBe(200);
    await eventsSettled(t);
    expect(await providerRows(t, company.id)).toEqual([]);
    expect((await t.sql.query('select count(*)::int as n from plugin_model_gateway.limits where company_id = $1', [company.id])).rows[0].n).toBe(0);
  });

  it('answers 404 for an unknown or malformed id', async () => {
    expect((await t.api.get(`/api/model-providers/${randomUUID()}`)).status).toBe(404);
    expect((await t.api.get('/api/model-providers/not-a-uuid')).status).toBe(404);
  });
});

describe('model providers: who may', () => {
  it('is board only: an agent key gets 403 on every route and changes nothing', async () => {
    const company = await createCompany(t.api);
    const provider = await addProvider(t.api, company.id);
    const agent = await createAgent(t.api, company.id);
    const agentApi = t.api.as(await createAgentKey(t.api, agent.id));
    const answers = [
      await agentApi.get(`/api/companies/${company.id}/model-providers`),
      await agentApi.post(`/api/companies/${company.id}/model-providers`, providerBody()),
      await agentApi.get(`/api/model-providers/${provider.id}`),
      await agentApi.patch(`/api/model-providers/${provider.id}`, { name: 'x' }),
      await agentApi.delete(`/api/model-providers/${provider.id}`),
      await agentApi.get(`/api/companies/${company.id}/model-gateway/limits`),
      await agentApi.put(`/api/companies/${company.id}/model-gateway/limits`, { callsPerMinute: 1, tokensPerMinute: null }),
    ];
    for (const res of answers) expect(res.status, res.text).toBe(403);
    expect(await providerRows(t, company.id)).toHaveLength(1);
    expect((await t.api.get(`/api/model-providers/${provider.id}`)).body.name).toBe(provider.name);
  });

  it('lists only the company\'s own providers', async () => {
    const company = await createCompany(t.api);
    const other = await createCompany(t.api);
    const mine = await addProvider(t.api, company.id);
    await addProvider(t.api, other.id);
    const list = await t.api.get(`/api/companies/${company.id}/model-providers`);
    expect(list.body.map((p: any) => p.id)).toEqual([mine.id]);
  });
});

describe('gateway limits', () => {
  it('answers nulls by default, stores a PUT, refuses bad values (400) and writes activity', async () => {
    const company = await createCompany(t.api);
    const path = `/api/companies/${company.id}/model-gateway/limits`;
    expect((await t.api.get(path)).body).toEqual({ callsPerMinute: null, tokensPerMinute: null });
    const put = await t.api.put(path, { callsPerMinute: 60, tokensPerMinute: 100000 });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toEqual({ callsPerMinute: 60, tokensPerMinute: 100000 });
    expect((await t.api.get(path)).body).toEqual({ callsPerMinute: 60, tokensPerMinute: 100000 });
    for (const body of [{ callsPerMinute: 0, tokensPerMinute: null }, { callsPerMinute: 1.5, tokensPerMinute: null }, { callsPerMinute: 1 }, { callsPerMinute: 1, tokensPerMinute: 1, x: 1 }]) {
      const res = await t.api.put(path, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    expect((await t.api.get(path)).body).toEqual({ callsPerMinute: 60, tokensPerMinute: 100000 });
    expect(await activityOf(t, company.id, 'model_gateway.limits_updated')).toEqual([
      { action: 'model_gateway.limits_updated', entity_id: company.id, details: { before: { callsPerMinute: null, tokensPerMinute: null }, after: { callsPerMinute: 60, tokensPerMinute: 100000 }, plugin: 'model-gateway' } },
    ]);
  });
});
