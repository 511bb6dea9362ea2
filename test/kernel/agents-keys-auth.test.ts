import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { activity, agentWithKey, createAgent, createKey, expectUnchanged, insertCompany, waitFor } from './agents-fixtures.ts';

let t: TestKernel;
let companyId: string;
let otherCompanyId: string;

beforeAll(async () => {
  t = await startTestKernel();
  companyId = await insertCompany(t);
  otherCompanyId = await insertCompany(t);
});
afterAll(async () => { await t?.stop(); });

describe('agent API keys', () => {
  it('creates a key shown once, stored only as a hash', async () => {
    const agent = await createAgent(t, companyId);
    const res = await t.api.post(`/api/agents/${agent.id}/keys`, { name: 'ci' });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(Object.keys(res.body).sort()).toEqual(['createdAt', 'id', 'keyPrefix', 'name', 'token']);
    expect(res.body.name).toBe('ci');
    expect(res.body.token).toMatch(/^svc_agent_[A-Za-z0-9_-]{40,}$/);
    expect(res.body.token.startsWith(res.body.keyPrefix)).toBe(true);
    const stored = await t.sql.query('select * from agent_api_keys where id = $1', [res.body.id]);
    expect(JSON.stringify(stored.rows[0])).not.toContain(res.body.token);
    expect(stored.rows[0].company_id).toBe(companyId);
    const logged = await t.sql.query('select count(*)::int as n from activity_log where details::text like $1', [`%${res.body.token.slice(12)}%`]);
    expect(logged.rows[0].n).toBe(0);
    expect((await activity(t, agent.id)).map((e) => e.action)).toContain('agent.key_created');

    const unnamed = await t.api.post(`/api/agents/${agent.id}/keys`);
    expect(unnamed.body.name).toBe('default');
  });

  it('lists keys without tokens, newest first', async () => {
    const agent = await createAgent(t, companyId);
    const first = await createKey(t, agent.id, 'one');
    const second = await createKey(t, agent.id, 'two');
    const res = await t.api.get(`/api/agents/${agent.id}/keys`);
    expect(res.status).toBe(200);
    expect(res.body.map((k: any) => k.id)).toEqual([second.id, first.id]);
    expect(Object.keys(res.body[0]).sort()).toEqual(['createdAt', 'id', 'keyPrefix', 'lastUsedAt', 'name', 'revokedAt']);
    expect(res.text).not.toContain(first.token);
  });

  it('records lastUsedAt on first use', async () => {
    const { agent, token } = await agentWithKey(t, companyId);
    expect((await t.api.get(`/api/agents/${agent.id}/keys`)).body[0].lastUsedAt).toBeNull();
    expect((await t.api.get('/api/agents/me', { token })).status).toBe(200);
    const keys = await waitFor(async () => (await t.api.get(`/api/agents/${agent.id}/keys`)).body, (list: any[]) => list[0].lastUsedAt !== null);
    expect(Date.parse(keys[0].lastUsedAt)).not.toBeNaN();
  });

  it('revokes a key so that it is refused at once, while other keys keep working', async () => {
    const agent = await createAgent(t, companyId);
    const doomed = await createKey(t, agent.id);
    const kept = await createKey(t, agent.id);
    expect((await t.api.get('/api/agents/me', { token: doomed.token })).status).toBe(200);
    const res = await t.api.delete(`/api/agents/${agent.id}/keys/${doomed.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: doomed.id });
    expect(res.body.revokedAt).not.toBeNull();
    expect((await t.api.get('/api/agents/me', { token: doomed.token })).status).toBe(401);
    expect((await t.api.get('/api/agents/me', { token: kept.token })).status).toBe(200);
    expect((await activity(t, agent.id)).map((e) => e.action)).toContain('agent.key_revoked');
    // Revoking again is harmless and keeps the first revocation time.
    expect((await t.api.delete(`/api/agents/${agent.id}/keys/${doomed.id}`)).body.revokedAt).toBe(res.body.revokedAt);
  });

  it('answers 404 for keys of another agent and unknown keys', async () => {
    const agent = await createAgent(t, companyId);
    const other = await createAgent(t, companyId);
    const key = await createKey(t, other.id);
    await expectUnchanged(t, () => t.api.delete(`/api/agents/${agent.id}/keys/${key.id}`), 404, 'Key not found');
    await expectUnchanged(t, () => t.api.delete(`/api/agents/${agent.id}/keys/${randomUUID()}`), 404, 'Key not found');
    await expectUnchanged(t, () => t.api.delete(`/api/agents/${agent.id}/keys/nope`), 404, 'Key not found');
    expect((await t.api.get('/api/agents/me', { token: key.token })).status).toBe(200);
  });

  it('refuses keys for pending agents and bad names', async () => {
    const strict = await insertCompany(t, { requireApproval: true });
    const hire = await t.api.post(`/api/companies/${strict}/agent-hires`, { name: 'Pending' });
    await expectUnchanged(t, () => t.api.post(`/api/agents/${hire.body.agent.id}/keys`), 409, 'Cannot create keys for pending approval agents');
    const agent = await createAgent(t, companyId);
    await expectUnchanged(t, () => t.api.post(`/api/agents/${agent.id}/keys`, { name: '' }), 400);
    await expectUnchanged(t, () => t.api.post(`/api/agents/${agent.id}/keys`, { name: 7 }), 400);
  });

  it('lets the agent itself and a CEO manage keys, but not a plain peer or another company', async () => {
    const { agent, token } = await agentWithKey(t, companyId);
    const own = await t.api.post(`/api/agents/${agent.id}/keys`, { name: 'self' }, { token });
    expect(own.status).toBe(201);
    expect((await t.api.get(`/api/agents/${agent.id}/keys`, { token })).status).toBe(200);

    const { token: ceoToken } = await agentWithKey(t, companyId, { role: 'ceo' });
    const byCeo = await t.api.post(`/api/agents/${agent.id}/keys`, undefined, { token: ceoToken });
    expect(byCeo.status).toBe(201);
    expect((await t.api.get('/api/agents/me', { token: byCeo.body.token })).body.id).toBe(agent.id);

    const { token: peerToken } = await agentWithKey(t, companyId);
    await expectUnchanged(t, () => t.api.post(`/api/agents/${agent.id}/keys`, undefined, { token: peerToken }), 403, /agents:create/);
    await expectUnchanged(t, () => t.api.get(`/api/agents/${agent.id}/keys`, { token: peerToken }), 403);
    await expectUnchanged(t, () => t.api.delete(`/api/agents/${agent.id}/keys/${own.body.id}`, { token: peerToken }), 403);

    const { token: foreignToken } = await agentWithKey(t, otherCompanyId, { role: 'ceo' });
    await expectUnchanged(t, () => t.api.post(`/api/agents/${agent.id}/keys`, undefined, { token: foreignToken }), 403, 'Agent key cannot access another company');
  });
});

describe('authentication as an agent', () => {
  it('authenticates with an agent key', async () => {
    const { agent, token } = await agentWithKey(t, companyId);
    const res = await t.api.get('/api/agents/me', { token });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(agent.id);
  });

  it('refuses keys of pending agents with 401', async () => {
    const agent = await createAgent(t, companyId);
    const key = await createKey(t, agent.id);
    await t.sql.query("update agents set status = 'pending_approval' where id = $1", [agent.id]);
    // The status was changed behind the kernel's back; a fresh process would see it, so drop the cache here.
    t.kernel.services.authCache.apply({ type: 'agent', id: agent.id });
    const res = await t.api.get('/api/agents/me', { token: key.token });
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('Agent is pending approval');
  });

  it('accepts a valid agent JWT and refuses tampered, foreign and expired ones', async () => {
    const { agent } = await agentWithKey(t, companyId);
    const jwt = t.kernel.services.jwt;
    const good = await jwt.sign({ agentId: agent.id, companyId, adapterType: agent.adapterType });
    const res = await t.api.get('/api/agents/me', { token: good });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(agent.id);

    const [header, payload, signature] = good.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    const tampered = [header, Buffer.from(JSON.stringify({ ...claims, company_id: otherCompanyId })).toString('base64url'), signature].join('.');
    expect((await t.api.get('/api/agents/me', { token: tampered })).status).toBe(401);

    // Correctly signed for another company, but the agent does not live there.
    const foreign = await jwt.sign({ agentId: agent.id, companyId: otherCompanyId, adapterType: agent.adapterType });
    expect((await t.api.get('/api/agents/me', { token: foreign })).status).toBe(401);

    const expired = await jwt.sign({ agentId: agent.id, companyId, adapterType: agent.adapterType, ttlSeconds: -60 });
    expect((await t.api.get('/api/agents/me', { token: expired })).status).toBe(401);
  });

  it('refuses the JWT of a terminated agent', async () => {
    const agent = await createAgent(t, companyId);
    const token = await t.kernel.services.jwt.sign({ agentId: agent.id, companyId, adapterType: agent.adapterType });
    expect((await t.api.get('/api/agents/me', { token })).status).toBe(200);
    await t.api.post(`/api/agents/${agent.id}/terminate`);
    const res = await t.api.get('/api/agents/me', { token });
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('Agent is terminated');
  });

  it('keeps agents out of other companies and off board-only routes', async () => {
    const { token } = await agentWithKey(t, companyId, { role: 'ceo' });
    const foreign = await createAgent(t, otherCompanyId);
    const list = await t.api.get(`/api/companies/${otherCompanyId}/agents`, { token });
    expect(list.status).toBe(403);
    expect(list.body.error).toBe('Agent key cannot access another company');
    expect((await t.api.get(`/api/agents/${foreign.id}`, { token })).status).toBe(403);
    await expectUnchanged(t, () => t.api.post(`/api/companies/${companyId}/agents`, { name: 'x' }, { token }), 403, 'Board access required');
    await expectUnchanged(t, () => t.api.post(`/api/companies/${otherCompanyId}/agents`, { name: 'x' }, { token }), 403);
  });
});
