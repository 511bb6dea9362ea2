import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { addMember, agentToken, boardToken, createCompany, insertAgent, insertUser, logoForm, PNG_1X1, snapshot, uploadLogo } from './companies-fixtures.ts';

let t: TestKernel;
let admin: string;
let member: string;
let memberId: string;
let mine: any;
let theirs: any;
let left: any;
let theirLogo: any;

beforeAll(async () => {
  t = await startTestKernel({ deploymentMode: 'authenticated' });
  admin = await boardToken(t, await insertUser(t, { admin: true }));
  memberId = await insertUser(t);
  member = await boardToken(t, memberId);
  mine = await createCompany(t, { name: 'Mine' }, admin);
  theirs = await createCompany(t, { name: 'Theirs' }, admin);
  left = await createCompany(t, { name: 'Left Behind' }, admin);
  await addMember(t, mine.id, memberId);
  await addMember(t, left.id, memberId, 'member', 'left');
  theirLogo = await uploadLogo(t, theirs.id, PNG_1X1, 'image/png', admin);
});
afterAll(async () => { await t?.stop(); });

describe('unauthenticated requests', () => {
  it('answer 401 on every company route and change nothing', async () => {
    const before = await snapshot(t);
    const id = mine.id;
    const requests: Array<[string, string, unknown?]> = [
      ['GET', '/api/companies'], ['GET', '/api/companies/stats'], ['GET', `/api/companies/${id}`],
      ['POST', '/api/companies', { name: 'Anon' }], ['PATCH', `/api/companies/${id}`, { name: 'Anon' }],
      ['PATCH', `/api/companies/${id}/branding`, { name: 'Anon' }], ['POST', `/api/companies/${id}/archive`],
      ['DELETE', `/api/companies/${id}`], ['GET', `/api/assets/${theirLogo.assetId}/content`],
      ['GET', '/api/companies/not-a-uuid'],
    ];
    for (const [method, path, body] of requests) {
      const res = await t.api.request(method, path, { body });
      expect({ method, path, status: res.status, body: res.body }).toEqual({ method, path, status: 401, body: { error: 'Authentication required', code: 'unauthorized' } });
    }
    const logo = await t.api.post(`/api/companies/${id}/logo`, undefined, { rawBody: logoForm(PNG_1X1, 'image/png') });
    expect(logo.status).toBe(401);
    const badToken = await t.api.get('/api/companies', { token: 'svc_board_not-a-real-key' });
    expect(badToken.status).toBe(401);
    expect(await snapshot(t)).toEqual(before);
  });
});

describe('board users', () => {
  it('list and count only the companies of their active memberships', async () => {
    const list = await t.api.get('/api/companies?includeArchived=true', { token: member });
    expect(list.status).toBe(200);
    expect(list.body.map((c: any) => c.id)).toEqual([mine.id]);
    const stats = await t.api.get('/api/companies/stats', { token: member });
    expect(Object.keys(stats.body)).toEqual([mine.id]);
  });

  it('instance admins list every company', async () => {
    const list = await t.api.get('/api/companies', { token: admin });
    expect(list.body.map((c: any) => c.id)).toEqual(expect.arrayContaining([mine.id, theirs.id, left.id]));
  });

  it('get 403 for another company on every company route, and nothing changes', async () => {
    const before = await snapshot(t);
    const forbidden = { error: 'User does not have access to this company', code: 'company_access_denied' };
    const id = theirs.id;
    for (const [method, path, body] of [
      ['GET', `/api/companies/${id}`], ['PATCH', `/api/companies/${id}`, { name: 'X' }], ['PATCH', `/api/companies/${id}/branding`, { name: 'X' }],
      ['POST', `/api/companies/${id}/archive`], ['DELETE', `/api/companies/${id}`], ['GET', `/api/assets/${theirLogo.assetId}/content`],
      ['GET', `/api/companies/${left.id}`],
    ] as Array<[string, string, unknown?]>) {
      const res = await t.api.request(method, path, { body, token: member });
      expect({ method, path, status: res.status, body: res.body }).toEqual({ method, path, status: 403, body: forbidden });
    }
    const logo = await t.api.post(`/api/companies/${id}/logo`, undefined, { rawBody: logoForm(PNG_1X1, 'image/png'), token: member });
    expect(logo.status).toBe(403);
    // A non-existent company is also 403 for a member: existence is not revealed outside one's reach.
    const unknown = await t.api.get('/api/companies/00000000-0000-4000-8000-000000000000', { token: member });
    expect(unknown.status).toBe(403);
    expect(await snapshot(t)).toEqual(before);
  });

  it('become owner of the company they create, effective on the very next request', async () => {
    expect((await t.api.get('/api/companies', { token: member })).status).toBe(200);
    const created = await t.api.post('/api/companies', { name: 'Member Made' }, { token: member });
    expect(created.status).toBe(201);
    const { rows } = await t.sql.query("select role, status from company_memberships where company_id = $1 and principal_type = 'user' and principal_id = $2", [created.body.id, memberId]);
    expect(rows).toEqual([{ role: 'owner', status: 'active' }]);
    const { rows: activity } = await t.sql.query("select actor_id, details from activity_log where company_id = $1 and action = 'company.created'", [created.body.id]);
    expect(activity[0]).toMatchObject({ actor_id: memberId, details: { ownerUserId: memberId } });
    const get = await t.api.get(`/api/companies/${created.body.id}`, { token: member });
    expect(get.status).toBe(200);
    const list = await t.api.get('/api/companies', { token: member });
    expect(list.body.map((c: any) => c.id).sort()).toEqual([mine.id, created.body.id].sort());
  });

  it('a key of the local board creates companies without a membership', async () => {
    const local = await boardToken(t, null);
    const created = await t.api.post('/api/companies', { name: 'Local Key Made' }, { token: local });
    expect(created.status).toBe(201);
    const { rows } = await t.sql.query('select count(*)::int as n from company_memberships where company_id = $1', [created.body.id]);
    expect(rows[0].n).toBe(0);
  });

  it('deleting a company evicts its members from the credential cache', async () => {
    const doomed = await createCompany(t, { name: 'Short Lived' }, admin);
    await addMember(t, doomed.id, memberId);
    // The membership was written outside the kernel: let its invalidation arrive before reading.
    await t.kernel.services.authCache.sync();
    t.kernel.services.authCache.users.delete(memberId);
    expect((await t.api.get(`/api/companies/${doomed.id}`, { token: member })).status).toBe(200);
    expect(t.kernel.services.authCache.users.get(memberId)?.companyIds).toContain(doomed.id);
    expect((await t.api.delete(`/api/companies/${doomed.id}`, { token: admin })).status).toBe(200);
    expect(t.kernel.services.authCache.users.get(memberId)).toBeUndefined();
    const list = await t.api.get('/api/companies', { token: member });
    expect(list.body.some((c: any) => c.id === doomed.id)).toBe(false);
  });
});

describe('agent tokens', () => {
  it('are refused on board-only routes and limited to their own company', async () => {
    const agent = await insertAgent(t, mine.id, { role: 'ceo' });
    const token = await agentToken(t, agent, mine.id);
    const before = await snapshot(t);
    const boardOnly = { error: 'Board access required', code: 'board_required' };
    for (const [method, path, body] of [
      ['GET', '/api/companies'], ['GET', '/api/companies/stats'], ['POST', '/api/companies', { name: 'By Agent' }],
      ['POST', `/api/companies/${mine.id}/archive`], ['DELETE', `/api/companies/${mine.id}`],
    ] as Array<[string, string, unknown?]>) {
      const res = await t.api.request(method, path, { body, token });
      expect({ method, path, status: res.status, body: res.body }).toEqual({ method, path, status: 403, body: boardOnly });
    }
    const own = await t.api.get(`/api/companies/${mine.id}`, { token });
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({ id: mine.id, name: 'Mine' });
    const other = await t.api.get(`/api/companies/${theirs.id}`, { token });
    expect(other.status).toBe(403);
    expect(other.body).toEqual({ error: 'Agent key cannot access another company', code: 'company_access_denied' });
    const otherAsset = await t.api.get(`/api/assets/${theirLogo.assetId}/content`, { token });
    expect(otherAsset.status).toBe(403);
    expect(await snapshot(t)).toEqual(before);
  });

  it('of terminated agents are refused', async () => {
    const agent = await insertAgent(t, mine.id, { status: 'terminated' });
    const token = await agentToken(t, agent, mine.id);
    const res = await t.api.get(`/api/companies/${mine.id}`, { token });
    expect(res.status).toBe(401);
  });
});
