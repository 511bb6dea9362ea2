import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApi, startPeerKernel, startTestKernel, type Api, type PeerKernel, type TestKernel } from '../support/harness.ts';
import { createAgent, createAgentKey, createCompany } from '../support/fixtures.ts';

/**
 * The kernel's own creates an agent or the command-line client may retry take an
 * Idempotency-Key: a retry, a concurrent pair and a pair sent to two Keel processes each write
 * one row and answer the same id; another body under the key is refused and writes nothing.
 */
let t: TestKernel;
let peer: PeerKernel;
let peerApi: Api;

beforeAll(async () => {
  t = await startTestKernel();
  peer = await startPeerKernel(t);
  peerApi = createApi(peer.url);
}, 120_000);
afterAll(async () => {
  await peer?.stop();
  await t?.stop();
});

const count = async (sql: string, params: unknown[] = []) => (await t.sql.query(`select count(*)::int as n from ${sql}`, params)).rows[0].n as number;
const keyed = (key: string) => ({ headers: { 'Idempotency-Key': key } });

describe('POST /api/companies', () => {
  it('a retry answers the same company and writes nothing; another body under the key is 409', async () => {
    const before = await count('companies');
    const first = await t.api.post('/api/companies', { name: 'Keyed Co', budgetMonthlyCents: 100 }, keyed('company-1'));
    expect(first.status, first.text).toBe(201);
    const activity = await count('activity_log');
    const retry = await t.api.post('/api/companies', { name: 'Keyed Co', budgetMonthlyCents: 100 }, keyed('company-1'));
    expect(await count('activity_log')).toBe(activity);
    expect([retry.status, retry.headers.get('x-idempotent-replayed'), retry.body.id]).toEqual([200, 'true', first.body.id]);
    const other = await t.api.post('/api/companies', { name: 'Other Co' }, keyed('company-1'));
    expect([other.status, other.body.code]).toEqual([409, 'idempotency_key_reused']);
    expect(await count('companies')).toBe(before + 1);
    expect(await count("activity_log where action = 'company.created' and entity_id = $1", [first.body.id])).toBe(1);
  });

  it('a concurrent pair, one at each of two processes, writes one company and both answer it', async () => {
    const before = await count('companies');
    const [here, there] = await Promise.all([
      t.api.post('/api/companies', { name: 'Raced Co' }, keyed('company-race')),
      peerApi.post('/api/companies', { name: 'Raced Co' }, keyed('company-race')),
    ]);
    expect([here.status, there.status].sort(), `${here.text}\n${there.text}`).toEqual([200, 201]);
    expect(here.body.id).toBe(there.body.id);
    expect(await count('companies')).toBe(before + 1);
  });

  it('an Idempotency-Key that is not 1-255 visible ASCII characters is 400 and creates nothing', async () => {
    const before = await count('companies');
    const res = await t.api.post('/api/companies', { name: 'Bad key Co' }, keyed('x'.repeat(256)));
    expect([res.status, res.body.code]).toEqual([400, 'invalid_idempotency_key']);
    expect(await count('companies')).toBe(before);
  });
});

describe('agent creates and hires', () => {
  it('POST /api/companies/{id}/agents: a retry and a concurrent pair each write one agent', async () => {
    const company = await createCompany(t.api, { name: 'Agents Co' });
    const body = { name: 'Keyed agent', adapterType: 'process', adapterConfig: { command: 'true' } };
    const first = await t.api.post(`/api/companies/${company.id}/agents`, body, keyed('agent-1'));
    expect(first.status, first.text).toBe(201);
    const retry = await t.api.post(`/api/companies/${company.id}/agents`, body, keyed('agent-1'));
    expect([retry.status, retry.body.id]).toEqual([200, first.body.id]);
    const pair = await Promise.all([t.api, peerApi].map((api) => api.post(`/api/companies/${company.id}/agents`, { ...body, name: 'Raced agent' }, keyed('agent-2'))));
    expect(pair.map((res) => res.status).sort(), pair.map((res) => res.text).join('\n')).toEqual([200, 201]);
    expect(pair[0]!.body.id).toBe(pair[1]!.body.id);
    expect(await count('agents where company_id = $1', [company.id])).toBe(2);
  });

  it('POST /api/companies/{id}/agent-hires by an agent: a retry answers the same agent and approval', async () => {
    const company = await createCompany(t.api, { name: 'Hiring Co', requireBoardApprovalForNewAgents: true });
    const ceo = await createAgent(t.api, company.id, { name: 'Chief', role: 'ceo' });
    const as = t.api.as(await createAgentKey(t.api, ceo.id));
    const body = { name: 'New hire', adapterType: 'process', adapterConfig: { command: 'true' } };
    const first = await as.post(`/api/companies/${company.id}/agent-hires`, body, keyed('hire-1'));
    expect(first.status, first.text).toBe(201);
    const retry = await as.post(`/api/companies/${company.id}/agent-hires`, body, keyed('hire-1'));
    expect(retry.status, retry.text).toBe(200);
    expect([retry.body.agent.id, retry.body.approval.id]).toEqual([first.body.agent.id, first.body.approval.id]);
    expect(await count('agents where company_id = $1', [company.id])).toBe(2);
    expect(await count("approvals where company_id = $1 and type = 'hire_agent'", [company.id])).toBe(1);
    // Keys are the caller's own: the board's request under the same key is another create.
    const board = await t.api.post(`/api/companies/${company.id}/agent-hires`, body, keyed('hire-1'));
    expect(board.status, board.text).toBe(201);
    expect(board.body.agent.id).not.toBe(first.body.agent.id);
  });
});

describe('POST /api/companies/{id}/activity', () => {
  it('a retry answers the same entry and records it once', async () => {
    const company = await createCompany(t.api, { name: 'Audited Co' });
    const body = { actorId: 'importer', action: 'import.noted', entityType: 'company', entityId: company.id };
    const first = await t.api.post(`/api/companies/${company.id}/activity`, body, keyed('activity-1'));
    expect(first.status, first.text).toBe(201);
    const retry = await peerApi.post(`/api/companies/${company.id}/activity`, body, keyed('activity-1'));
    expect([retry.status, retry.body.id]).toEqual([200, first.body.id]);
    expect(await count("activity_log where company_id = $1 and action = 'import.noted'", [company.id])).toBe(1);
  });
});

describe('keys and secrets', () => {
  it('POST /api/agents/{id}/keys: a retry answers the same key with token null (shown once) and writes nothing; a pair at two processes makes one key', async () => {
    const company = await createCompany(t.api, { name: 'Keyed Keys Co' });
    const agent = await createAgent(t.api, company.id);
    const first = await t.api.post(`/api/agents/${agent.id}/keys`, { name: 'deploy' }, keyed('key-1'));
    expect(first.status, first.text).toBe(201);
    expect(first.body.token).toMatch(/^\S{20,}$/);
    const retry = await peerApi.post(`/api/agents/${agent.id}/keys`, { name: 'deploy' }, keyed('key-1'));
    expect([retry.status, retry.headers.get('x-idempotent-replayed'), retry.body.id, retry.body.token, retry.body.keyPrefix])
      .toEqual([200, 'true', first.body.id, null, first.body.keyPrefix]);
    expect(retry.headers.get('cache-control')).toBe('no-store');
    expect(await count('agent_api_keys where agent_id = $1', [agent.id])).toBe(1);
    const other = await t.api.post(`/api/agents/${agent.id}/keys`, { name: 'other' }, keyed('key-1'));
    expect([other.status, other.body.code]).toEqual([409, 'idempotency_key_reused']);
    const [here, there] = await Promise.all([
      t.api.post(`/api/agents/${agent.id}/keys`, { name: 'raced' }, keyed('key-race')),
      peerApi.post(`/api/agents/${agent.id}/keys`, { name: 'raced' }, keyed('key-race')),
    ]);
    expect([here.status, there.status].sort(), `${here.text}\n${there.text}`).toEqual([200, 201]);
    expect(await count('agent_api_keys where agent_id = $1', [agent.id])).toBe(2);
    expect(await count("activity_log where action = 'agent.key_created' and entity_id = $1", [agent.id])).toBe(2);
  });

  it('POST /api/companies/{id}/secrets: a retry answers the same secret; the value is never in the idempotency record', async () => {
    const company = await createCompany(t.api, { name: 'Keyed Secrets Co' });
    const value = 'sk-idempotent-value-never-stored';
    const first = await t.api.post(`/api/companies/${company.id}/secrets`, { name: 'OPENAI', value }, keyed('secret-1'));
    expect(first.status, first.text).toBe(201);
    const retry = await peerApi.post(`/api/companies/${company.id}/secrets`, { name: 'OPENAI', value }, keyed('secret-1'));
    expect([retry.status, retry.headers.get('x-idempotent-replayed'), retry.body.id]).toEqual([200, 'true', first.body.id]);
    expect(retry.text).not.toContain(value);
    expect(await count('secrets where company_id = $1', [company.id])).toBe(1);
    const stored = await t.sql.query(`select row_to_json(c)::text as row from keel_host.service_calls c where idempotency_key = 'secret-1'`);
    expect(stored.rows).toHaveLength(1);
    expect(stored.rows[0].row).not.toContain(value);
    const renamed = await t.api.post(`/api/companies/${company.id}/secrets`, { name: 'OTHER', value }, keyed('secret-1'));
    expect([renamed.status, renamed.body.code]).toEqual([409, 'idempotency_key_reused']);
    expect(await count('secrets where company_id = $1', [company.id])).toBe(1);
  });

  it('POST /api/agents/{id}/secret-grants: a retry answers the same grant instead of 409 secret_grant_conflict', async () => {
    const company = await createCompany(t.api, { name: 'Keyed Grants Co' });
    const agent = await createAgent(t.api, company.id);
    const secret = (await t.api.post(`/api/companies/${company.id}/secrets`, { name: 'TOKEN', value: 'v' })).body;
    const body = { secretId: secret.id, key: 'TOKEN', delivery: 'api' };
    const first = await t.api.post(`/api/agents/${agent.id}/secret-grants`, body, keyed('grant-1'));
    expect(first.status, first.text).toBe(201);
    const retry = await peerApi.post(`/api/agents/${agent.id}/secret-grants`, body, keyed('grant-1'));
    expect([retry.status, retry.body.id]).toEqual([200, first.body.id]);
    // Without a key, the same grant again is still the conflict it always was.
    const unkeyed = await t.api.post(`/api/agents/${agent.id}/secret-grants`, body);
    expect([unkeyed.status, unkeyed.body.code]).toEqual([409, 'secret_grant_conflict']);
    expect(await count('agent_secret_grants where agent_id = $1', [agent.id])).toBe(1);
  });
});
