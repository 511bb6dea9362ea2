import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApi, FIRST_PARTY_PLUGINS, startPeerKernel, startTestKernel, type Api, type PeerKernel, type TestKernel } from '../../support/harness.ts';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';

/**
 * Every create of the work plugin a client may retry takes an Idempotency-Key: a retry after a
 * lost answer, a concurrent pair and a pair sent to two Keel processes on one database each
 * write one row and answer the same id.
 */
let t: TestKernel;
let peer: PeerKernel;
let peerApi: Api;
let company: any;
let agent: any;
let agentApi: Api;
let issue: any;
let project: any;

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  peer = await startPeerKernel(t, {}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  peerApi = createApi(peer.url);
  company = await createCompany(t.api, { name: 'Retry Co' });
  agent = await createAgent(t.api, company.id, { name: 'Retrier' });
  agentApi = t.api.as(await createAgentKey(t.api, agent.id));
  issue = (await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Host of comments' })).body;
  project = (await t.api.post(`/api/companies/${company.id}/projects`, { name: 'Host of workspaces' })).body;
}, 120_000);
afterAll(async () => {
  await peer?.stop();
  await t?.stop();
});

interface CreateCase { name: string; path: () => string; body: (n: number) => Record<string, unknown>; table: string }
const CASES: CreateCase[] = [
  { name: 'comment', path: () => `/api/issues/${issue.id}/comments`, body: (n) => ({ body: `Retried comment ${n}` }), table: 'issue_comments' },
  { name: 'issue', path: () => `/api/companies/${company.id}/issues`, body: (n) => ({ title: `Retried issue ${n}` }), table: 'issues' },
  { name: 'project', path: () => `/api/companies/${company.id}/projects`, body: (n) => ({ name: `Retried project ${n}` }), table: 'projects' },
  { name: 'goal', path: () => `/api/companies/${company.id}/goals`, body: (n) => ({ title: `Retried goal ${n}` }), table: 'goals' },
  { name: 'work product', path: () => `/api/issues/${issue.id}/work-products`, body: (n) => ({ type: 'branch', title: `Retried branch ${n}` }), table: 'work_products' },
  { name: 'project workspace', path: () => `/api/projects/${project.id}/workspaces`, body: (n) => ({ name: `Retried workspace ${n}`, cwd: `/srv/retry-${n}` }), table: 'project_workspaces' },
];

async function rowsNamed(table: string, id: string): Promise<number> {
  return (await t.sql.query(`select count(*)::int as n from plugin_work.${table} where id = $1`, [id])).rows[0].n;
}
async function activityCount(): Promise<number> {
  return (await t.sql.query('select count(*)::int as n from activity_log where company_id = $1', [company.id])).rows[0].n;
}
async function tableCount(table: string): Promise<number> {
  return (await t.sql.query(`select count(*)::int as n from plugin_work.${table} where company_id = $1`, [company.id])).rows[0].n;
}

describe.each(CASES)('$name create with an Idempotency-Key', ({ name, path, body, table }) => {
  const key = (suffix: string) => `${name.replace(' ', '-')}-${suffix}`;

  it('a retry answers the same id and writes nothing; another body under the key is 409', async () => {
    const before = await tableCount(table);
    const first = await agentApi.post(path(), body(1), { headers: { 'Idempotency-Key': key('retry') } });
    expect(first.status, first.text).toBe(201);
    const activity = await activityCount();
    const retry = await agentApi.post(path(), body(1), { headers: { 'Idempotency-Key': key('retry') } });
    expect([retry.status, retry.headers.get('x-idempotent-replayed')], retry.text).toEqual([200, 'true']);
    expect(retry.body.id).toBe(first.body.id);
    expect(await tableCount(table)).toBe(before + 1);
    // A replay writes nothing at all: no activity entry either.
    expect(await activityCount()).toBe(activity);
    const other = await agentApi.post(path(), body(2), { headers: { 'Idempotency-Key': key('retry') } });
    expect([other.status, other.body.code]).toEqual([409, 'idempotency_key_reused']);
    expect(await tableCount(table)).toBe(before + 1);
    // Without a key, each request creates.
    expect((await agentApi.post(path(), body(1))).status).toBe(201);
    expect(await tableCount(table)).toBe(before + 2);
  });

  it('a concurrent pair with the same key writes one row, and both answer it', async () => {
    const before = await tableCount(table);
    const pair = await Promise.all([0, 1].map(() => agentApi.post(path(), body(3), { headers: { 'Idempotency-Key': key('concurrent') } })));
    expect(pair.map((res) => res.status).sort(), pair.map((res) => res.text).join('\n')).toEqual([200, 201]);
    expect(pair[0]!.body.id).toBe(pair[1]!.body.id);
    expect(await rowsNamed(table, pair[0]!.body.id)).toBe(1);
    expect(await tableCount(table)).toBe(before + 1);
  });
});

describe('two Keel processes on one database', () => {
  it('a comment sent with one key to both processes at once is written once', async () => {
    const before = await tableCount('issue_comments');
    const headers = { 'Idempotency-Key': 'comment-two-processes' };
    const [here, there] = await Promise.all([
      t.api.post(`/api/issues/${issue.id}/comments`, { body: 'Sent twice' }, { headers }),
      peerApi.post(`/api/issues/${issue.id}/comments`, { body: 'Sent twice' }, { headers }),
    ]);
    expect([here.status, there.status].sort(), `${here.text}\n${there.text}`).toEqual([200, 201]);
    expect(here.body.id).toBe(there.body.id);
    expect(await tableCount('issue_comments')).toBe(before + 1);
    // A retry later, at either process, answers it again.
    const later = await peerApi.post(`/api/issues/${issue.id}/comments`, { body: 'Sent twice' }, { headers });
    expect([later.status, later.body.id]).toEqual([200, here.body.id]);
  });

  it('keys are kept per company: the same key in another company creates there', async () => {
    const other = await createCompany(t.api, { name: 'Other Retry Co' });
    const headers = { 'Idempotency-Key': 'goal-shared-key' };
    const mine = await t.api.post(`/api/companies/${company.id}/goals`, { title: 'Same key' }, { headers });
    const theirs = await peerApi.post(`/api/companies/${other.id}/goals`, { title: 'Same key' }, { headers });
    expect([mine.status, theirs.status]).toEqual([201, 201]);
    expect(theirs.body.id).not.toBe(mine.body.id);
  });
});
