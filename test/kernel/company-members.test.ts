import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { addMember, agentWithKey, insertCompany, insertUser, memberToken } from './agents-fixtures.ts';

/** GET /api/companies/{companyId}/members: the company's member users, for the board. */
let t: TestKernel;
let companyId: string;
let otherCompanyId: string;

beforeAll(async () => {
  t = await startTestKernel();
  companyId = await insertCompany(t);
  otherCompanyId = await insertCompany(t);
});
afterAll(async () => { await t?.stop(); });

const membersPath = (id = companyId) => `/api/companies/${id}/members`;

describe('company members', () => {
  it('lists the member users, oldest first, with their user, role and status, leaving agents and other companies out', async () => {
    expect((await t.api.get(membersPath())).body).toEqual([]);
    const owner = await insertUser(t);
    await addMember(t, companyId, owner, 'owner');
    const gone = await insertUser(t);
    await addMember(t, companyId, gone, 'member', 'left');
    await addMember(t, otherCompanyId, await insertUser(t));
    // An agent (a member for assignment) is not a member user.
    const { agent } = await agentWithKey(t, companyId);
    await t.sql.query("insert into company_memberships (company_id, principal_type, principal_id, role) values ($1, 'agent', $2, 'member') on conflict do nothing", [companyId, agent.id]);
    const email = (await t.sql.query('select email from users where id = $1', [owner])).rows[0].email;

    const res = await t.api.get(membersPath());
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual([
      { userId: owner, email, name: 'Test User', role: 'owner', status: 'active', createdAt: expect.any(String), updatedAt: expect.any(String) },
      { userId: gone, email: expect.any(String), name: 'Test User', role: 'member', status: 'left', createdAt: expect.any(String), updatedAt: expect.any(String) },
    ]);
    expect((await t.api.get(`${membersPath()}?status=left`)).body.map((m: any) => m.userId)).toEqual([gone]);
    expect((await t.api.get(`${membersPath()}?status=active`)).body.map((m: any) => m.userId)).toEqual([owner]);
  });

  it('answers a member of the company, and refuses agents, other companies, bad filters and unknown companies', async () => {
    const member = await memberToken(t, [companyId]);
    const mine = await t.api.as(member.token).get(membersPath());
    expect(mine.status, mine.text).toBe(200);
    expect(mine.body.map((m: any) => m.userId)).toContain(member.userId);

    const outsider = await memberToken(t, [otherCompanyId]);
    const foreign = await t.api.as(outsider.token).get(membersPath());
    expect(foreign.status).toBe(403);
    expect(foreign.body).toMatchObject({ error: expect.any(String) });

    const { token } = await agentWithKey(t, companyId);
    const byAgent = await t.api.as(token).get(membersPath());
    expect(byAgent.status).toBe(403);
    expect(byAgent.body).toMatchObject({ error: expect.any(String) });

    const bad = await t.api.get(`${membersPath()}?status=gone`);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'validation_failed' });
    const extra = await t.api.get(`${membersPath()}?role=owner`);
    expect(extra.status).toBe(400);

    const unknown = await t.api.get(membersPath('00000000-0000-4000-8000-000000000000'));
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: 'Company not found' });
  });
});
