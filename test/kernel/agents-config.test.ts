import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { activity, agentWithKey, createAgent, expectUnchanged, insertCompany, memberToken } from './agents-fixtures.ts';

let t: TestKernel;
let companyId: string;
let otherCompanyId: string;
let secretId: string;

beforeAll(async () => {
  t = await startTestKernel();
  companyId = await insertCompany(t);
  otherCompanyId = await insertCompany(t);
  const secret = await t.api.post(`/api/companies/${companyId}/secrets`, { name: 'PROVIDER_KEY', value: 'sv-provider-plaintext' });
  expect(secret.status, secret.text).toBe(201);
  secretId = secret.body.id;
});
afterAll(async () => { await t?.stop(); });

describe('GET /api/agents/{agentId}/configuration', () => {
  it('shows the configuration with secret references as references and sensitive values masked', async () => {
    const agent = await createAgent(t, companyId, {
      adapterType: 'http',
      adapterConfig: {
        url: 'https://runner.example', headers: { Authorization: 'Bearer abcdefghijklmnop' },
        env: { REGION: 'eu', DB_PASSWORD: 'pw-1', LOOKS_LIKE_KEY: 'sk-abcdefghijklmnop', REF: { type: 'secret_ref', secretId } },
      },
      desiredSkills: ['git'],
    });
    const res = await t.api.get(`/api/agents/${agent.id}/configuration`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ agentId: agent.id, companyId, adapterType: 'http', desiredSkills: ['git'], runtimeConfig: { heartbeat: { enabled: false } } });
    expect(res.body.adapterConfig).toEqual({
      url: 'https://runner.example', headers: { Authorization: '[REDACTED]' },
      env: { REGION: 'eu', DB_PASSWORD: '[REDACTED]', LOOKS_LIKE_KEY: '[REDACTED]', REF: { type: 'secret_ref', secretId } },
      serviceSkillSync: { desiredSkills: ['git'] },
    });
    for (const plain of ['pw-1', 'sk-abcdefghijklmnop', 'abcdefghijklmnop', 'sv-provider-plaintext']) expect(res.text).not.toContain(plain);
  });

  it('is readable by board members, the agent itself and creators, not by plain peers', async () => {
    const { agent, token } = await agentWithKey(t, companyId);
    expect((await t.api.get(`/api/agents/${agent.id}/configuration`, { token })).status).toBe(200);
    const member = await memberToken(t, [companyId]);
    expect((await t.api.get(`/api/agents/${agent.id}/configuration`, { token: member.token })).status).toBe(200);
    const { token: ceoToken } = await agentWithKey(t, companyId, { role: 'ceo' });
    expect((await t.api.get(`/api/agents/${agent.id}/configuration`, { token: ceoToken })).status).toBe(200);
    const { token: peerToken } = await agentWithKey(t, companyId);
    const denied = await t.api.get(`/api/agents/${agent.id}/configuration`, { token: peerToken });
    expect(denied.status).toBe(403);
    expect(denied.body.error).toMatch(/reading another agent's configuration requires the agents:create grant/);
    const outsider = await memberToken(t, [otherCompanyId]);
    expect((await t.api.get(`/api/agents/${agent.id}/configuration`, { token: outsider.token })).status).toBe(403);
    expect((await t.api.get(`/api/agents/${randomUUID()}/configuration`)).status).toBe(404);
  });
});

describe('configuration revisions', () => {
  it('lists revisions newest first and reads one, masked', async () => {
    const agent = await createAgent(t, companyId, { adapterConfig: { model: 'one', env: { TOKEN: 'tok-1' } } });
    await t.api.patch(`/api/agents/${agent.id}`, { adapterConfig: { model: 'two' } });
    await t.api.patch(`/api/agents/${agent.id}`, { name: 'Renamed Agent' });
    const res = await t.api.get(`/api/agents/${agent.id}/config-revisions`);
    expect(res.status).toBe(200);
    expect(res.body.map((r: any) => [r.revisionNumber, r.source, r.changedKeys])).toEqual([
      [3, 'patch', ['name']],
      [2, 'patch', ['adapterConfig']],
      [1, 'create', expect.arrayContaining(['name', 'adapterConfig', 'runtimeConfig'])],
    ]);
    expect(res.body[0]).toMatchObject({ agentId: agent.id, companyId, createdByUserId: 'local-board', createdByAgentId: null, rolledBackFromRevisionId: null });
    expect(res.body[1].snapshot.adapterConfig).toEqual({ model: 'two', env: { TOKEN: '[REDACTED]' } });
    expect(res.text).not.toContain('tok-1');

    const one = await t.api.get(`/api/agents/${agent.id}/config-revisions/${res.body[2].id}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ revisionNumber: 1, source: 'create', snapshot: { name: agent.name, adapterConfig: { model: 'one' } } });
  });

  it('answers 404 for unknown revisions and revisions of another agent', async () => {
    const agent = await createAgent(t, companyId);
    const other = await createAgent(t, companyId);
    const foreignRevision = (await t.api.get(`/api/agents/${other.id}/config-revisions`)).body[0].id;
    expect((await t.api.get(`/api/agents/${agent.id}/config-revisions/${foreignRevision}`)).body.error).toBe('Revision not found');
    expect((await t.api.get(`/api/agents/${agent.id}/config-revisions/${randomUUID()}`)).status).toBe(404);
    expect((await t.api.get(`/api/agents/${agent.id}/config-revisions/nope`)).status).toBe(404);
    await expectUnchanged(t, () => t.api.post(`/api/agents/${agent.id}/config-revisions/${foreignRevision}/rollback`), 404, 'Revision not found');
  });

  it('rolls back to a revision, restoring secrets, and records a rollback revision', async () => {
    const manager = await createAgent(t, companyId);
    const agent = await createAgent(t, companyId, { role: 'engineer', adapterConfig: { model: 'first', env: { TOKEN: 'tok-first' } }, budgetMonthlyCents: 100, reportsTo: manager.id });
    const first = (await t.api.get(`/api/agents/${agent.id}/config-revisions`)).body[0];
    await t.api.patch(`/api/agents/${agent.id}`, {
      name: 'Changed Name', role: 'cto', replaceAdapterConfig: true, adapterConfig: { model: 'second', env: { TOKEN: 'tok-second' } }, budgetMonthlyCents: 700, reportsTo: null,
    });
    const res = await t.api.post(`/api/agents/${agent.id}/config-revisions/${first.id}/rollback`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: agent.name, urlKey: agent.urlKey, role: 'engineer', budgetMonthlyCents: 100, reportsTo: manager.id, adapterConfig: { model: 'first', env: { TOKEN: '[REDACTED]' } } });
    const stored = await t.sql.query('select adapter_config from agents where id = $1', [agent.id]);
    expect(stored.rows[0].adapter_config.env.TOKEN).toBe('tok-first');
    const list = (await t.api.get(`/api/agents/${agent.id}/config-revisions`)).body;
    expect(list[0]).toMatchObject({ revisionNumber: 3, source: 'rollback', rolledBackFromRevisionId: first.id });
    expect(list[0].changedKeys).toEqual(expect.arrayContaining(['name', 'role', 'reportsTo', 'adapterConfig', 'budgetMonthlyCents']));
    expect((await activity(t, agent.id)).at(-1)).toMatchObject({ action: 'agent.config_rolled_back', details: { revisionId: first.id, revisionNumber: 1 } });
  });

  it('refuses a rollback whose name now collides, and callers without agents:create', async () => {
    const agent = await createAgent(t, companyId, { name: 'Original Name' });
    const first = (await t.api.get(`/api/agents/${agent.id}/config-revisions`)).body[0];
    await t.api.patch(`/api/agents/${agent.id}`, { name: 'Other Name' });
    await createAgent(t, companyId, { name: 'Original Name' });
    await expectUnchanged(t, () => t.api.post(`/api/agents/${agent.id}/config-revisions/${first.id}/rollback`), 409, "Agent shortname 'original-name' is already in use in this company");

    const { agent: self, token } = await agentWithKey(t, companyId);
    const own = (await t.api.get(`/api/agents/${self.id}/config-revisions`, { token })).body[0];
    await expectUnchanged(t, () => t.api.post(`/api/agents/${self.id}/config-revisions/${own.id}/rollback`, undefined, { token }), 403, /agents:create/);
  });
});
