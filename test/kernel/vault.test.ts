import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveRunEnvironment } from '../../kernel/vault/run-environment.ts';
import { createAgent, createAgentKey, createCompany } from '../support/fixtures.ts';
import { createApi, startTestKernel, type Api, type TestKernel } from '../support/harness.ts';

const PLAINTEXTS = ['sk-live-first-Plaintext-0001', 'sk-live-second-Plaintext-0002', 'sk-live-other-company-0003', 'pinned-old-Plaintext-0004', 'pinned-new-Plaintext-0005'];
const logs: string[] = [];
const responses: string[] = [];
let t: TestKernel;
let api: Api;
let company: any;
let other: any;

beforeAll(async () => {
  t = await startTestKernel({}, { captureLogs: logs });
  const raw = createApi(t.url);
  // Every response body of this file is kept, to prove that no plaintext ever left the server
  // except through the run-bound read route.
  const record = (inner: Api): Api => ({
    ...inner,
    request: async (...args) => { const r = await inner.request(...args); if (!String(args[1]).includes('/value')) responses.push(r.text); return r; },
    get: async (...args) => { const r = await inner.get(...args); responses.push(r.text); return r; },
    post: async (...args) => { const r = await inner.post(...args); if (!String(args[0]).includes('/value')) responses.push(r.text); return r; },
    patch: async (...args) => { const r = await inner.patch(...args); responses.push(r.text); return r; },
    put: async (...args) => { const r = await inner.put(...args); responses.push(r.text); return r; },
    delete: async (...args) => { const r = await inner.delete(...args); responses.push(r.text); return r; },
    as: (token) => record(inner.as(token)),
  });
  api = record(raw);
  company = await createCompany(api);
  other = await createCompany(api);
});
afterAll(async () => { await t?.stop(); });

async function createSecret(companyId: string, name: string, value: string, extra: Record<string, unknown> = {}) {
  const res = await api.post(`/api/companies/${companyId}/secrets`, { name, value, ...extra });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

async function openRun(agentId: string, companyId: string, invocationSource = 'on_demand') {
  const { runs, db } = t.kernel.services;
  return db.transaction((tx) => runs.open(tx, { agentId, companyId, invocationSource }));
}

describe('secret providers', () => {
  it('lists local_encrypted and refuses unconfigured providers', async () => {
    const res = await api.get(`/api/companies/${company.id}/secret-providers`);
    expect(res.status).toBe(200);
    expect(res.body).toContainEqual(expect.objectContaining({ id: 'local_encrypted', requiresExternalRef: false }));
    const external = res.body.find((p: any) => p.id !== 'local_encrypted');
    const refused = await api.post(`/api/companies/${company.id}/secrets`, { name: 'EXT', value: 'x', provider: external.id, externalRef: 'ref' });
    expect(refused.status).toBe(422);
    expect(refused.body.code).toBe('secret_provider_not_configured');
    const unknown = await api.post(`/api/companies/${company.id}/secrets`, { name: 'UNK', value: 'x', provider: 'nope' });
    expect(unknown.status).toBe(422);
    expect(unknown.body.code).toBe('unknown_secret_provider');
    const { rows } = await t.sql.query('select count(*)::int as n from secrets where company_id = $1', [company.id]);
    expect(rows[0].n).toBe(0);
  });
});

describe('secrets API', () => {
  let secret: any;

  it('creates version 1 and never returns the value', async () => {
    secret = await createSecret(company.id, 'OPENAI_KEY', PLAINTEXTS[0]!, { description: 'model key', externalRef: 'ext-1' });
    expect(secret).toMatchObject({ companyId: company.id, name: 'OPENAI_KEY', provider: 'local_encrypted', latestVersion: 1, description: 'model key', externalRef: 'ext-1' });
    expect(secret).not.toHaveProperty('value');
    expect(JSON.stringify(secret)).not.toContain(PLAINTEXTS[0]);
  });

  it('refuses a duplicate name in the same company with 409 but allows it in another company', async () => {
    const dup = await api.post(`/api/companies/${company.id}/secrets`, { name: 'OPENAI_KEY', value: 'again' });
    expect(dup.status).toBe(409);
    const elsewhere = await createSecret(other.id, 'OPENAI_KEY', PLAINTEXTS[2]!);
    expect(elsewhere.companyId).toBe(other.id);
  });

  it('lists newest first', async () => {
    await createSecret(company.id, 'SECOND', 'second-value-xyz');
    const res = await api.get(`/api/companies/${company.id}/secrets`);
    expect(res.status).toBe(200);
    expect(res.body.map((s: any) => s.name)).toEqual(['SECOND', 'OPENAI_KEY']);
  });

  it('stores ciphertext that differs per version and does not contain the plaintext', async () => {
    const rotated = await api.post(`/api/secrets/${secret.id}/rotate`, { value: PLAINTEXTS[1] });
    expect(rotated.status).toBe(200);
    expect(rotated.body.latestVersion).toBe(2);
    expect(rotated.body.externalRef).toBe('ext-1');
    const { rows } = await t.sql.query('select version, ciphertext, nonce from secret_versions where secret_id = $1 order by version', [secret.id]);
    expect(rows).toHaveLength(2);
    expect(Buffer.compare(rows[0].ciphertext, rows[1].ciphertext)).not.toBe(0);
    expect(Buffer.compare(rows[0].nonce, rows[1].nonce)).not.toBe(0);
    for (const row of rows) {
      for (const plain of PLAINTEXTS) expect(row.ciphertext.includes(Buffer.from(plain))).toBe(false);
    }
    const dump = await t.sql.query('select * from secrets');
    expect(JSON.stringify(dump.rows)).not.toContain(PLAINTEXTS[0]);
  });

  it('patch changes metadata but never the value', async () => {
    const patched = await api.patch(`/api/secrets/${secret.id}`, { description: 'renamed', name: 'OPENAI_API_KEY' });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ name: 'OPENAI_API_KEY', description: 'renamed', latestVersion: 2 });
    const withValue = await api.patch(`/api/secrets/${secret.id}`, { value: 'sneaky' });
    expect(withValue.status).toBe(400);
    expect(withValue.body.code).toBe('secret_value_immutable');
    const clash = await api.patch(`/api/secrets/${secret.id}`, { name: 'SECOND' });
    expect(clash.status).toBe(409);
    const revealed = await t.kernel.services.vault.reveal(t.kernel.services.db, company.id, secret.id, 'latest');
    expect(revealed).toMatchObject({ value: PLAINTEXTS[1], version: 2 });
  });

  it('refuses bad input with 4xx and writes nothing', async () => {
    const before = (await t.sql.query('select count(*)::int as n from secrets')).rows[0].n;
    const versionsBefore = (await t.sql.query('select count(*)::int as n from secret_versions')).rows[0].n;
    const cases: Array<[unknown, number]> = [
      [{ name: 'EMPTY', value: '' }, 400],
      [{ name: 'BLANK', value: '   ' }, 400],
      [{ name: 'BIG', value: 'x'.repeat(64 * 1024 + 1) }, 400],
      [{ value: 'no name' }, 400],
      [{ name: 'NOVALUE' }, 400],
      [{ name: 42, value: 'x' }, 400],
      [{ name: 'TYPE', value: 17 }, 400],
    ];
    for (const [body, status] of cases) {
      const res = await api.post(`/api/companies/${company.id}/secrets`, body);
      expect(res.status, JSON.stringify(body).slice(0, 60)).toBe(status);
      expect(res.body.error).toEqual(expect.any(String));
    }
    const malformed = await api.request('POST', `/api/companies/${company.id}/secrets`, { rawBody: '{"name":', headers: { 'content-type': 'application/json' } });
    expect(malformed.status).toBe(400);
    const wrongType = await api.request('POST', `/api/companies/${company.id}/secrets`, { rawBody: 'name=x', headers: { 'content-type': 'text/plain' } });
    expect(wrongType.status).toBe(415);
    const emptyRotate = await api.post(`/api/secrets/${secret.id}/rotate`, { value: '' });
    expect(emptyRotate.status).toBe(400);
    expect((await t.sql.query('select count(*)::int as n from secrets')).rows[0].n).toBe(before);
    expect((await t.sql.query('select count(*)::int as n from secret_versions')).rows[0].n).toBe(versionsBefore);
    for (const path of ['/api/secrets/00000000-0000-0000-0000-000000000000/rotate', '/api/secrets/not-a-uuid/rotate']) {
      expect((await api.post(path, { value: 'x' })).status).toBe(404);
    }
    expect((await api.patch('/api/secrets/00000000-0000-0000-0000-000000000000', { name: 'x' })).status).toBe(404);
    expect((await api.delete('/api/secrets/00000000-0000-0000-0000-000000000000')).status).toBe(404);
  });

  it('is board-only', async () => {
    const agent = await createAgent(api, company.id);
    const key = await createAgentKey(api, agent.id);
    const asAgent = api.as(key);
    expect((await asAgent.get(`/api/companies/${company.id}/secrets`)).status).toBe(403);
    expect((await asAgent.get(`/api/companies/${company.id}/secret-providers`)).status).toBe(403);
    expect((await asAgent.post(`/api/companies/${company.id}/secrets`, { name: 'A', value: 'b' })).status).toBe(403);
    expect((await asAgent.post(`/api/secrets/${secret.id}/rotate`, { value: 'b' })).status).toBe(403);
  });

  it('writes activity entries without values', async () => {
    const { rows } = await t.sql.query("select action, details::text as details from activity_log where company_id = $1 and entity_type = 'secret' order by seq", [company.id]);
    expect(rows.map((r: any) => r.action)).toEqual(expect.arrayContaining(['secret.created', 'secret.rotated', 'secret.updated']));
    for (const row of rows) for (const plain of PLAINTEXTS) expect(row.details ?? '').not.toContain(plain);
  });
});

describe('references and run environments', () => {
  it('refuses references to another company\'s secret on create and update', async () => {
    const foreign = await createSecret(other.id, 'FOREIGN', 'foreign-value-123');
    const res = await api.post(`/api/companies/${company.id}/agents`, { name: 'Leaky', adapterConfig: { env: { X: { type: 'secret_ref', secretId: foreign.id } } } });
    expect(res.status).toBe(422);
    const agent = await createAgent(api, company.id);
    const patch = await api.patch(`/api/agents/${agent.id}`, { adapterConfig: { env: { X: { type: 'secret_ref', secretId: foreign.id } } } });
    expect(patch.status).toBe(422);
  });

  it('follows rotations with latest and stays pinned with a version number; deletion breaks resolution', async () => {
    const pinned = await createSecret(company.id, 'PINNED', PLAINTEXTS[3]!);
    const agent = await createAgent(api, company.id, {
      adapterConfig: { env: { PLAIN: 'visible', LATEST: { type: 'secret_ref', secretId: pinned.id, version: 'latest' }, FIXED: { type: 'secret_ref', secretId: pinned.id, version: 1 } } },
    });
    await api.post(`/api/secrets/${pinned.id}/rotate`, { value: PLAINTEXTS[4] });
    const row = (await t.sql.query('select id, company_id, adapter_config from agents where id = $1', [agent.id])).rows[0];
    const { vault, db } = t.kernel.services;
    const resolved = await resolveRunEnvironment(db, vault, row);
    expect(resolved.env).toEqual({ PLAIN: 'visible', LATEST: PLAINTEXTS[4], FIXED: PLAINTEXTS[3] });
    expect(resolved.secrets).toEqual(expect.arrayContaining([
      expect.objectContaining({ envName: 'LATEST', version: 2 }), expect.objectContaining({ envName: 'FIXED', version: 1 }),
    ]));
    const deleted = await api.delete(`/api/secrets/${pinned.id}`);
    expect(deleted.status).toBe(200);
    expect((await t.sql.query('select count(*)::int as n from secret_versions where secret_id = $1', [pinned.id])).rows[0].n).toBe(0);
    await expect(resolveRunEnvironment(db, vault, row)).rejects.toMatchObject({ status: 422, code: 'secret_ref_unresolvable' });
  });

  it('fails loudly when a stored ciphertext was tampered with', async () => {
    const victim = await createSecret(company.id, 'TAMPER', 'tamper-me-value');
    await expect(t.sql.query('update secret_versions set ciphertext = ciphertext where secret_id = $1', [victim.id])).rejects.toThrow(/immutable/);
    await t.sql.query('alter table secret_versions disable trigger secret_versions_no_update');
    // Every bit of the first byte flipped: writing a fixed byte left the ciphertext unchanged when it already held it (1 run in 256).
    await t.sql.query('update secret_versions set ciphertext = set_byte(ciphertext, 0, get_byte(ciphertext, 0) # 255) where secret_id = $1', [victim.id]);
    await t.sql.query('alter table secret_versions enable trigger secret_versions_no_update');
    await expect(t.kernel.services.vault.reveal(t.kernel.services.db, company.id, victim.id, 'latest')).rejects.toMatchObject({ code: 'vault_integrity_error' });
    expect(logs.some((line) => line.includes('failed authentication'))).toBe(true);
  });
});

describe('run-bound delivery', () => {
  let agent: any;
  let secret: any;

  beforeAll(async () => {
    agent = await createAgent(api, company.id);
    secret = await createSecret(company.id, 'RUN_SECRET', 'run-bound-plaintext-777');
    for (const [key, delivery] of [['API_ONLY', 'api'], ['BOTH', 'both'], ['ENV_ONLY', 'env']]) {
      const grant = await api.post(`/api/agents/${agent.id}/secret-grants`, { secretId: secret.id, key, delivery });
      expect(grant.status, grant.text).toBe(201);
    }
  });

  it('manages grants: duplicate alias 409, foreign secret 422, bad delivery 400', async () => {
    expect((await api.post(`/api/agents/${agent.id}/secret-grants`, { secretId: secret.id, key: 'API_ONLY', delivery: 'api' })).status).toBe(409);
    const foreign = (await api.get(`/api/companies/${other.id}/secrets`)).body[0];
    expect((await api.post(`/api/agents/${agent.id}/secret-grants`, { secretId: foreign.id, key: 'F', delivery: 'api' })).status).toBe(422);
    expect((await api.post(`/api/agents/${agent.id}/secret-grants`, { secretId: secret.id, key: 'X', delivery: 'mail' })).status).toBe(400);
    const list = await api.get(`/api/agents/${agent.id}/secret-grants`);
    expect(list.body.map((g: any) => g.key)).toEqual(['API_ONLY', 'BOTH', 'ENV_ONLY']);
  });

  it('lists and reads granted secrets with a live run token, writing the audit trail', async () => {
    const { run, token } = await openRun(agent.id, company.id);
    const asRun = api.as(token);
    const list = await asRun.get('/api/agents/me/secrets');
    expect(list.status, list.text).toBe(200);
    expect(list.body.secrets).toHaveLength(3);
    expect(list.body.secrets[0]).toEqual({ key: 'API_ONLY', name: 'RUN_SECRET', description: null, delivery: 'api', projectionClass: 'standard', latestVersion: 1, versionSelector: 'latest', resolvedVersion: 1 });
    expect(JSON.stringify(list.body)).not.toMatch(/secretId|bindingId|configPath/);
    const read = await createApi(t.url, { token }).post('/api/agents/me/secrets/BOTH/value');
    expect(read.status, read.text).toBe(200);
    expect(read.body).toEqual({ key: 'BOTH', value: 'run-bound-plaintext-777', version: 1 });
    expect(read.headers.get('cache-control')).toBe('no-store');
    const audit = await t.sql.query('select * from security_audit_log where run_id = $1', [run.runId]);
    expect(audit.rows).toHaveLength(1);
    expect(audit.rows[0]).toMatchObject({ event: 'secret.value_read', secret_id: secret.id, secret_version: 1, agent_id: agent.id });
    const activity = await t.sql.query("select details from activity_log where action = 'secret.value_read' and run_id = $1", [run.runId]);
    expect(activity.rows).toHaveLength(1);
    expect(JSON.stringify(activity.rows[0].details)).not.toContain('run-bound-plaintext-777');
    await expect(t.sql.query('delete from security_audit_log')).rejects.toThrow(/append-only/);
  });

  it('refuses agent API keys, ungranted or env-only aliases, skill-test runs and closed runs with 403', async () => {
    const key = await createAgentKey(api, agent.id);
    expect((await api.as(key).get('/api/agents/me/secrets')).status).toBe(403);
    expect((await api.as(key).post('/api/agents/me/secrets/BOTH/value')).status).toBe(403);
    const { run, token } = await openRun(agent.id, company.id);
    expect((await api.as(token).post('/api/agents/me/secrets/NOPE/value')).status).toBe(403);
    expect((await api.as(token).post('/api/agents/me/secrets/ENV_ONLY/value')).status).toBe(403);
    const skillTest = await openRun(agent.id, company.id, 'skill_test');
    expect((await api.as(skillTest.token).get('/api/agents/me/secrets')).status).toBe(403);
    await t.kernel.services.db.transaction((tx) => t.kernel.services.runs.close(tx, run.runId, { status: 'succeeded' }));
    expect((await api.as(token).get('/api/agents/me/secrets')).status).toBe(403);
    expect((await api.as(token).post('/api/agents/me/secrets/BOTH/value')).status).toBe(403);
    expect((await api.as(token).get('/api/agents/me')).status).toBe(401);
    const board = await api.get('/api/agents/me/secrets');
    expect(board.status).toBe(403);
  });

  it('signs run tokens per company: a token cannot be replayed as another company', async () => {
    const { token } = await openRun(agent.id, company.id);
    const [header, payload, signature] = token.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    const forged = [header, Buffer.from(JSON.stringify({ ...claims, company_id: other.id })).toString('base64url'), signature].join('.');
    expect((await api.as(forged).get('/api/agents/me/secrets')).status).toBe(401);
    const { jwt } = t.kernel.services;
    const otherCompanyToken = await jwt.sign({ agentId: agent.id, companyId: other.id, adapterType: 'process' });
    expect((await api.as(otherCompanyToken).get('/api/agents/me')).status).toBe(401);
  });

  it('never let a plaintext out through responses, logs or activity', async () => {
    const everything = [responses.join('\n'), logs.join('\n')];
    const activity = await t.sql.query('select details::text as d from activity_log');
    everything.push(activity.rows.map((r: any) => r.d ?? '').join('\n'));
    for (const text of everything) {
      for (const plain of [...PLAINTEXTS, 'run-bound-plaintext-777', 'second-value-xyz', 'foreign-value-123']) expect(text).not.toContain(plain);
    }
  });
});
