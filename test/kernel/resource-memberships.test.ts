import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_KEY_PREFIX, hashToken, mintToken } from '../../kernel/auth/tokens.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';

let local: TestKernel;
let authed: TestKernel;
beforeAll(async () => {
  [local, authed] = await Promise.all([startTestKernel(), startTestKernel({ deploymentMode: 'authenticated' })]);
});
afterAll(async () => { await Promise.all([local?.stop(), authed?.stop()]); });

async function createCompany(k: TestKernel): Promise<string> {
  return (await k.sql.query('insert into companies (name, issue_prefix) values ($1, $2) returning id',
    ['Co', `R${randomUUID().replace(/-/g, '').slice(0, 8)}`])).rows[0].id;
}

async function createAgent(k: TestKernel, companyId: string, status = 'idle'): Promise<string> {
  return (await k.sql.query(`insert into agents (company_id, name, url_key, status) values ($1, 'Agent', $2, $3) returning id`,
    [companyId, `agent-${randomUUID().slice(0, 8)}`, status])).rows[0].id;
}

async function snapshot(k: TestKernel): Promise<{ rows: string; activity: number }> {
  return {
    rows: JSON.stringify((await k.sql.query('select * from resource_memberships order by resource_id')).rows),
    activity: (await k.sql.query('select count(*)::int as n from activity_log')).rows[0].n,
  };
}

const base = (companyId: string) => `/api/companies/${companyId}/resource-memberships/me`;

describe('resource memberships (local board)', () => {
  it('lists nothing and updatedAt null before any change', async () => {
    const companyId = await createCompany(local);
    const res = await local.api.get(base(companyId));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ projectMemberships: {}, agentMemberships: {}, updatedAt: null });
  });

  it('treats joining a resource without a row as a no-op, and records real changes', async () => {
    const companyId = await createCompany(local);
    const agentId = await createAgent(local, companyId);
    const before = await snapshot(local);

    const noop = await local.api.put(`${base(companyId)}/agents/${agentId}`, { state: 'joined' });
    expect(noop.status).toBe(200);
    expect(noop.body).toEqual({ resourceType: 'agent', resourceId: agentId, state: 'joined', updatedAt: null });
    expect(await snapshot(local)).toEqual(before);

    const left = await local.api.put(`${base(companyId)}/agents/${agentId}`, { state: 'left' });
    expect(left.status).toBe(200);
    expect(left.body).toMatchObject({ resourceType: 'agent', resourceId: agentId, state: 'left' });
    expect(left.body.updatedAt).toEqual(expect.any(String));
    const row = (await local.sql.query('select * from resource_memberships where resource_id = $1', [agentId])).rows[0];
    expect(row).toMatchObject({ company_id: companyId, user_id: 'local-board', resource_type: 'agent', state: 'left' });
    const entries = (await local.sql.query(`select * from activity_log where entity_id = $1 order by seq`, [agentId])).rows;
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      company_id: companyId, action: 'resource_membership.left', entity_type: 'resource_membership', actor_type: 'user', actor_id: 'local-board',
    });
    expect(entries[0].details).toEqual({ userId: 'local-board', resourceType: 'agent', resourceId: agentId, state: 'left', previousState: 'joined' });

    const list = await local.api.get(base(companyId));
    expect(list.body).toEqual({ projectMemberships: {}, agentMemberships: { [agentId]: 'left' }, updatedAt: left.body.updatedAt });

    // Setting the current state again changes nothing and writes nothing.
    const mid = await snapshot(local);
    const again = await local.api.put(`${base(companyId)}/agents/${agentId}`, { state: 'left' });
    expect(again.status).toBe(200);
    expect(again.body.updatedAt).toBe(left.body.updatedAt);
    expect(await snapshot(local)).toEqual(mid);

    const rejoined = await local.api.put(`${base(companyId)}/agents/${agentId}`, { state: 'joined' });
    expect(rejoined.body.state).toBe('joined');
    expect(rejoined.body.updatedAt > left.body.updatedAt).toBe(true);
    const actions = (await local.sql.query(`select action from activity_log where entity_id = $1 order by seq`, [agentId])).rows.map((r) => r.action);
    expect(actions).toEqual(['resource_membership.left', 'resource_membership.joined']);
    expect((await local.api.get(base(companyId))).body).toEqual({
      projectMemberships: {}, agentMemberships: { [agentId]: 'joined' }, updatedAt: rejoined.body.updatedAt,
    });
  });

  it('answers 404 for agents of another company, unknown agents and projects when no enabled plugin declares projects', async () => {
    const companyId = await createCompany(local);
    const otherAgent = await createAgent(local, await createCompany(local));
    const before = await snapshot(local);
    const cases: Array<[string, string]> = [
      [`${base(companyId)}/agents/${otherAgent}`, 'Agent not found'],
      [`${base(companyId)}/agents/${randomUUID()}`, 'Agent not found'],
      [`${base(companyId)}/agents/not-a-uuid`, 'Agent not found'],
      [`${base(companyId)}/projects/${randomUUID()}`, 'Project not found'],
      [`${base(randomUUID())}/agents/${otherAgent}`, 'Company not found'],
    ];
    for (const [path, error] of cases) {
      const res = await local.api.put(path, { state: 'left' });
      expect(res.status, path).toBe(404);
      expect(res.body.error).toBe(error);
    }
    expect((await local.api.get(base(randomUUID()))).status).toBe(404);
    expect(await snapshot(local)).toEqual(before);
  });

  it('validates the body: state is required and must be joined or left', async () => {
    const companyId = await createCompany(local);
    const agentId = await createAgent(local, companyId);
    const before = await snapshot(local);
    for (const body of [{}, { state: 'gone' }, { state: null }, { state: true }]) {
      const res = await local.api.put(`${base(companyId)}/agents/${agentId}`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.issues[0].path).toBe('state');
    }
    expect(await snapshot(local)).toEqual(before);
  });

  it('refuses agent tokens with 403', async () => {
    const companyId = await createCompany(local);
    const agentId = await createAgent(local, companyId);
    const key = mintToken(AGENT_KEY_PREFIX);
    await local.sql.query(`insert into agent_api_keys (agent_id, company_id, name, key_hash, key_prefix) values ($1, $2, 'k', $3, 'svc_agent_')`,
      [agentId, companyId, hashToken(key)]);
    const before = await snapshot(local);
    const list = await local.api.get(base(companyId), { token: key });
    expect(list.status).toBe(403);
    expect(list.body.code).toBe('board_required');
    const put = await local.api.put(`${base(companyId)}/agents/${agentId}`, { state: 'left' }, { token: key });
    expect(put.status).toBe(403);
    expect(await snapshot(local)).toEqual(before);
  });
});

describe('resource memberships (authenticated mode)', () => {
  it('needs active company membership and keeps memberships per user', async () => {
    const companyId = await createCompany(authed);
    const agentId = await createAgent(authed, companyId);
    const signUp = async (email: string) => {
      const res = await authed.api.post('/api/auth/sign-up', { email, password: 'password-123' });
      return { userId: res.body.user.id as string, cookie: `keel_session=${/keel_session=([^;]*)/.exec(res.headers.get('set-cookie')!)![1]}` };
    };
    const member = await signUp('member@example.com');
    const outsider = await signUp('outsider@example.com');
    const suspended = await signUp('suspended@example.com');
    await authed.sql.query(`insert into company_memberships (company_id, principal_type, principal_id, role, status)
      values ($1, 'user', $2, 'viewer', 'active'), ($1, 'user', $3, 'viewer', 'suspended')`, [companyId, member.userId, suspended.userId]);

    expect((await authed.api.get(base(companyId))).status).toBe(401);
    for (const who of [outsider, suspended]) {
      const res = await authed.api.put(`${base(companyId)}/agents/${agentId}`, { state: 'left' }, { cookie: who.cookie });
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('company_access_denied');
    }
    expect((await authed.sql.query('select count(*)::int as n from resource_memberships')).rows[0].n).toBe(0);

    const left = await authed.api.put(`${base(companyId)}/agents/${agentId}`, { state: 'left' }, { cookie: member.cookie });
    expect(left.status).toBe(200);
    expect((await authed.sql.query('select user_id from resource_memberships')).rows).toEqual([{ user_id: member.userId }]);
    expect((await authed.api.get(base(companyId), { cookie: member.cookie })).body.agentMemberships).toEqual({ [agentId]: 'left' });
  });
});
