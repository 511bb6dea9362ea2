import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken, mintToken, AGENT_KEY_PREFIX, BOARD_KEY_PREFIX } from '../../kernel/auth/tokens.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';

let local: TestKernel;
let authed: TestKernel;
beforeAll(async () => {
  [local, authed] = await Promise.all([startTestKernel(), startTestKernel({ deploymentMode: 'authenticated' })]);
});
afterAll(async () => { await Promise.all([local?.stop(), authed?.stop()]); });

async function createCompany(k: TestKernel, name = 'Acme'): Promise<string> {
  const prefix = `T${randomUUID().replace(/-/g, '').slice(0, 8).toUpperCase()}`;
  return (await k.sql.query('insert into companies (name, issue_prefix) values ($1, $2) returning id', [name, prefix])).rows[0].id;
}

async function createAgent(k: TestKernel, companyId: string): Promise<{ agentId: string; key: string }> {
  const agentId = (await k.sql.query(
    `insert into agents (company_id, name, url_key, adapter_type, status) values ($1, 'Worker', $2, 'process', 'idle') returning id`,
    [companyId, `worker-${randomUUID().slice(0, 8)}`])).rows[0].id;
  const key = mintToken(AGENT_KEY_PREFIX);
  await k.sql.query(`insert into agent_api_keys (agent_id, company_id, name, key_hash, key_prefix) values ($1, $2, 'test', $3, 'svc_agent_')`,
    [agentId, companyId, hashToken(key)]);
  return { agentId, key };
}

async function signUp(k: TestKernel, email: string): Promise<{ userId: string; cookie: string }> {
  const res = await k.api.post('/api/auth/sign-up', { email, password: 'password-123' });
  expect(res.status).toBe(201);
  const token = /keel_session=([^;]*)/.exec(res.headers.get('set-cookie') ?? '')![1];
  return { userId: res.body.user.id, cookie: `keel_session=${token}` };
}

async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('actor resolution in local_trusted mode', () => {
  it('treats a request without a token as the implicit local board', async () => {
    const res = await local.api.get('/api/cli-auth/me');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ source: 'local_implicit', isInstanceAdmin: true, user: { id: 'local-board' } });
    expect(res.body.keyId).toBeUndefined();
  });

  it('answers 401 for an invalid bearer token instead of falling back to the local board', async () => {
    for (const token of ['svc_board_not-a-real-key', 'garbage', 'aaa.bbb.ccc']) {
      const res = await local.api.get('/api/cli-auth/me', { token });
      expect(res.status, token).toBe(401);
      expect(res.body).toEqual({ error: 'Authentication required', code: 'unauthorized' });
    }
  });

  it('records X-Service-Run-Id (a live run of the company) as runId of the activity the request writes', async () => {
    const companyId = await createCompany(local);
    const { agentId } = await createAgent(local, companyId);
    const { runs, db } = local.kernel.services;
    const runId = (await db.transaction((tx) => runs.open(tx, { agentId, companyId }))).run.runId;
    const res = await local.api.post(`/api/companies/${companyId}/activity`,
      { actorId: 'ops', action: 'test.ran', entityType: 'check', entityId: '1' }, { headers: { 'X-Service-Run-Id': runId } });
    expect(res.status).toBe(201);
    expect(res.body.runId).toBe(runId);
    expect((await local.sql.query('select run_id from activity_log where id = $1', [res.body.id])).rows[0].run_id).toBe(runId);

    const notUuid = await local.api.post(`/api/companies/${companyId}/activity`,
      { actorId: 'ops', action: 'test.ran', entityType: 'check', entityId: '2' }, { headers: { 'X-Service-Run-Id': 'not-a-uuid' } });
    expect(notUuid.status).toBe(201);
    expect(notUuid.body.runId).toBeNull();

    // A uuid that names no live run is refused, not recorded (test/kernel/run-ownership.test.ts has the rest).
    const unknown = await local.api.post(`/api/companies/${companyId}/activity`,
      { actorId: 'ops', action: 'test.ran', entityType: 'check', entityId: '3' }, { headers: { 'X-Service-Run-Id': randomUUID() } });
    expect(unknown.status, unknown.text).toBe(403);
    expect(unknown.body.code).toBe('run_not_owned');
  });
});

describe('actor resolution in authenticated mode', () => {
  it('answers 401 without a cookie and resolves the session user with one', async () => {
    expect((await authed.api.get('/api/cli-auth/me')).status).toBe(401);
    const { userId, cookie } = await signUp(authed, 'session@example.com');
    const me = await authed.api.get('/api/cli-auth/me', { cookie });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ source: 'session', userId, isInstanceAdmin: false, companyIds: [], user: { id: userId, email: 'session@example.com' } });
  });

  it('lets a valid board API key win over a cookie, and an invalid bearer token refuse the request', async () => {
    const cookieUser = await signUp(authed, 'cookie-user@example.com');
    const keyUser = await signUp(authed, 'key-user@example.com');
    const key = mintToken(BOARD_KEY_PREFIX);
    const keyId = (await authed.sql.query(
      `insert into board_api_keys (user_id, name, key_hash, key_prefix) values ($1, 'cli', $2, 'svc_board_') returning id`,
      [keyUser.userId, hashToken(key)])).rows[0].id;

    const both = await authed.api.get('/api/cli-auth/me', { token: key, cookie: cookieUser.cookie });
    expect(both.status).toBe(200);
    expect(both.body).toMatchObject({ source: 'board_key', userId: keyUser.userId, keyId });

    const badBearer = await authed.api.get('/api/cli-auth/me', { token: 'svc_board_wrong', cookie: cookieUser.cookie });
    expect(badBearer.status).toBe(401);
  });

  it('resolves company memberships of session users', async () => {
    const companyId = await createCompany(authed, 'Member Co');
    const otherCompanyId = await createCompany(authed, 'Other Co');
    const user = await signUp(authed, 'member@example.com');
    await authed.sql.query(`insert into company_memberships (company_id, principal_type, principal_id, role) values ($1, 'user', $2, 'owner')`,
      [companyId, user.userId]);
    await authed.sql.query(`select pg_notify('keel_auth', $1)`, [JSON.stringify({ type: 'user', id: user.userId })]);
    await waitFor(async () => (await authed.api.get('/api/cli-auth/me', { cookie: user.cookie })).body.companyIds?.length === 1, 'membership');
    expect((await authed.api.get(`/api/companies/${companyId}/activity`, { cookie: user.cookie })).status).toBe(200);
    const foreign = await authed.api.get(`/api/companies/${otherCompanyId}/activity`, { cookie: user.cookie });
    expect(foreign.status).toBe(403);
    expect(foreign.body.code).toBe('company_access_denied');
  });
});

describe('agent keys and agent JWTs', () => {
  it('authenticates agent keys and JWTs for their own company only, and refuses them once the agent is terminated', async () => {
    const companyId = await createCompany(authed, 'Agents Co');
    const otherCompanyId = await createCompany(authed, 'Elsewhere');
    const { agentId, key } = await createAgent(authed, companyId);
    const jwt = await authed.kernel.services.jwt.sign({ agentId, companyId, adapterType: 'process' });

    for (const token of [key, jwt]) {
      const own = await authed.api.get(`/api/companies/${companyId}/activity`, { token });
      expect(own.status).toBe(200);
      const other = await authed.api.get(`/api/companies/${otherCompanyId}/activity`, { token });
      expect(other.status).toBe(403);
      expect(other.body).toEqual({ error: 'Agent key cannot access another company', code: 'company_access_denied' });
      // Board-only routes refuse agents.
      const boardOnly = await authed.api.get('/api/cli-auth/me', { token });
      expect(boardOnly.status).toBe(403);
    }
    // A JWT claiming another company does not verify under that company's key.
    const forged = await authed.kernel.services.jwt.sign({ agentId, companyId: otherCompanyId, adapterType: 'process' });
    expect((await authed.api.get(`/api/companies/${otherCompanyId}/activity`, { token: forged })).status).toBe(401);

    await authed.sql.query(`update agents set status = 'terminated' where id = $1`, [agentId]);
    // Announce the change the way another kernel process would: through NOTIFY on keel_auth.
    await authed.sql.query(`select pg_notify('keel_auth', $1)`, [JSON.stringify({ type: 'agent', id: agentId })]);
    await waitFor(async () => (await authed.api.get(`/api/companies/${companyId}/activity`, { token: key })).status === 401, 'eviction');
    for (const token of [key, jwt]) {
      const refused = await authed.api.get(`/api/companies/${companyId}/activity`, { token });
      expect(refused.status).toBe(401);
      expect(refused.body).toEqual({ error: 'Agent is terminated', code: 'unauthorized' });
    }
  });

  it('refuses a revoked agent key once the cache is told', async () => {
    const companyId = await createCompany(authed, 'Revoked Co');
    const { key } = await createAgent(authed, companyId);
    expect((await authed.api.get(`/api/companies/${companyId}/activity`, { token: key })).status).toBe(200);
    const keyId = (await authed.sql.query('update agent_api_keys set revoked_at = now() where key_hash = $1 returning id', [hashToken(key)])).rows[0].id;
    authed.kernel.services.authCache.apply({ type: 'credential_id', id: keyId });
    expect((await authed.api.get(`/api/companies/${companyId}/activity`, { token: key })).status).toBe(401);
  });
});
