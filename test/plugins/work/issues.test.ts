import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';

/** Projects, goals and issues of the work plugin, through HTTP against a real kernel and worker. */
let t: TestKernel;
let company: any;
let agent: any;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  company = await createCompany(t.api, { name: 'Acme Works' });
  agent = await createAgent(t.api, company.id, { name: 'Builder' });
});
afterAll(async () => { await t?.stop(); });

const post = (path: string, body: unknown, headers: Record<string, string> = {}) => t.api.post(path, body, { headers });
async function createIssue(body: Record<string, unknown>, companyId = company.id) {
  const res = await post(`/api/companies/${companyId}/issues`, body);
  expect(res.status, res.text).toBe(201);
  return res.body;
}
async function tableCounts(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of ['projects', 'goals', 'issues', 'issue_blockers', 'idempotency_keys']) {
    out[table] = (await t.sql.query(`select count(*)::int as n from plugin_work.${table}`)).rows[0].n;
  }
  out.counter = (await t.sql.query('select issue_counter from companies where id = $1', [company.id])).rows[0].issue_counter;
  return out;
}

describe('projects', () => {
  it('creates with defaults, reads, lists and patches, with activity', async () => {
    const res = await post(`/api/companies/${company.id}/projects`, { name: 'Launch', leadAgentId: agent.id, targetDate: '2027-03-01', color: '#12ab34' });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ name: 'Launch', status: 'backlog', companyId: company.id, leadAgentId: agent.id, targetDate: '2027-03-01', color: '#12ab34', archivedAt: null });
    expect(res.body.createdAt).toMatch(ISO);
    const id = res.body.id;
    expect((await t.api.get(`/api/projects/${id}`)).body).toEqual(res.body);
    const patched = await t.api.patch(`/api/projects/${id}`, { status: 'in_progress', description: 'Ship it' });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ status: 'in_progress', description: 'Ship it' });
    const listed = await t.api.get(`/api/companies/${company.id}/projects`);
    expect(listed.body.map((p: any) => p.id)).toContain(id);
    const { rows } = await t.sql.query("select action, details from activity_log where entity_type = 'project' and entity_id = $1 order by seq", [id]);
    expect(rows.map((r: any) => r.action)).toEqual(['project.created', 'project.updated']);
    expect(rows[1].details).toMatchObject({ changes: { status: 'in_progress', description: 'Ship it' }, previous: { status: 'backlog', description: null } });
  });

  it('ignores fields it does not know, as the kernel\'s routes do', async () => {
    const res = await post(`/api/companies/${company.id}/projects`, { name: 'Lenient', labelIds: ['x'], extra: 1 });
    expect(res.status, res.text).toBe(201);
    expect(res.body).not.toHaveProperty('extra');
    expect(res.body).not.toHaveProperty('labelIds');
  });

  it('leaves archived projects out of the list unless asked', async () => {
    const project = (await post(`/api/companies/${company.id}/projects`, { name: 'Old' })).body;
    await t.api.patch(`/api/projects/${project.id}`, { archivedAt: new Date().toISOString() });
    expect((await t.api.get(`/api/companies/${company.id}/projects`)).body.map((p: any) => p.id)).not.toContain(project.id);
    expect((await t.api.get(`/api/companies/${company.id}/projects?includeArchived=true`)).body.map((p: any) => p.id)).toContain(project.id);
  });

  it('refuses bad input with 4xx and the JSON error body, writing nothing', async () => {
    const before = await tableCounts();
    const other = await createCompany(t.api);
    const foreignAgent = await createAgent(t.api, other.id);
    const cases: Array<[unknown, number, string]> = [
      [{}, 400, 'validation_failed'],
      [{ name: '' }, 400, 'validation_failed'],
      [{ name: 'x', status: 'done' }, 400, 'validation_failed'],
      [{ name: 'x', color: 'red' }, 400, 'validation_failed'],
      [{ name: 'x', targetDate: 'tomorrow' }, 400, 'validation_failed'],
      // The right shape, but no such day: refused by the schema, never a database error.
      [{ name: 'x', targetDate: '2026-02-30' }, 400, 'validation_failed'],
      [{ name: '   ' }, 400, 'validation_failed'],
      [{ name: 'x', leadAgentId: foreignAgent.id }, 422, 'agent_not_found'],
      [{ name: 'x', goalId: '00000000-0000-4000-8000-000000000000' }, 422, 'goal_not_found'],
    ];
    for (const [body, status, code] of cases) {
      const res = await post(`/api/companies/${company.id}/projects`, body);
      expect([res.status, res.body.code], JSON.stringify(body)).toEqual([status, code]);
      expect(typeof res.body.error).toBe('string');
    }
    const blank = await post(`/api/companies/${company.id}/projects`, { name: ' \t ' });
    expect(blank.body.error).toBe('Invalid request body: name must not be blank');
    expect(await tableCounts()).toEqual(before);
  });

  it('answers 404 for an unknown or malformed project id', async () => {
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const res = await t.api.get(`/api/projects/${id}`);
      expect([res.status, res.body.code, res.body.error]).toEqual([404, 'not_found', 'Project not found']);
    }
  });
});

describe('goals', () => {
  it('creates nested goals with defaults and refuses a cycle', async () => {
    const top = (await post(`/api/companies/${company.id}/goals`, { title: 'Grow', level: 'company', status: 'active' })).body;
    expect(top).toMatchObject({ title: 'Grow', level: 'company', status: 'active', parentId: null });
    const child = await post(`/api/companies/${company.id}/goals`, { title: 'Ship v2', parentId: top.id, ownerAgentId: agent.id });
    expect(child.status, child.text).toBe(201);
    expect(child.body).toMatchObject({ level: 'task', status: 'planned', parentId: top.id, ownerAgentId: agent.id });
    const cycle = await t.api.patch(`/api/goals/${top.id}`, { parentId: child.body.id });
    expect([cycle.status, cycle.body.code]).toEqual([422, 'goal_cycle']);
    expect((await t.api.patch(`/api/goals/${child.body.id}`, { status: 'achieved' })).body.status).toBe('achieved');
    expect((await t.api.get(`/api/companies/${company.id}/goals?level=company`)).body.map((g: any) => g.id)).toEqual(expect.arrayContaining([top.id]));
    expect((await t.api.get(`/api/goals/${child.body.id}`)).body.title).toBe('Ship v2');
  });
});

describe('issues', () => {
  it('numbers issues from the company counter and reads them by id or identifier', async () => {
    const fresh = await createCompany(t.api, { name: 'Numbered Co' });
    const first = await createIssue({ title: 'First' }, fresh.id);
    const second = await createIssue({ title: 'Second', assigneeAgentId: null }, fresh.id);
    expect(first.identifier).toBe(`${fresh.issuePrefix}-1`);
    expect(second.identifier).toBe(`${fresh.issuePrefix}-2`);
    expect(first).toMatchObject({ status: 'backlog', priority: 'medium', issueNumber: 1, companyId: fresh.id, blockedByIssueIds: [], createdByUserId: expect.any(String) });
    for (const ref of [first.id, first.identifier, first.identifier.toLowerCase()]) {
      const res = await t.api.get(`/api/issues/${ref}`);
      expect([res.status, res.body.id], ref).toEqual([200, first.id]);
    }
    expect((await t.api.get(`/api/companies/${fresh.id}`)).body.issueCounter).toBe(2);
    const stats = await t.api.get('/api/companies/stats');
    expect(stats.body[fresh.id]).toMatchObject({ issueCount: 2 });
    const missing = await t.api.get(`/api/issues/${fresh.issuePrefix}-99`);
    expect([missing.status, missing.body.error]).toEqual([404, 'Issue not found']);
  });

  it('starts todo when assigned, and stamps startedAt, completedAt and cancelledAt as the status moves', async () => {
    const issue = await createIssue({ title: 'Assigned', assigneeAgentId: agent.id, priority: 'high' });
    expect(issue).toMatchObject({ status: 'todo', priority: 'high', assigneeAgentId: agent.id, startedAt: null });
    const started = (await t.api.patch(`/api/issues/${issue.id}`, { status: 'in_progress' })).body;
    expect(started.startedAt).toMatch(ISO);
    const done = (await t.api.patch(`/api/issues/${issue.id}`, { status: 'done' })).body;
    expect([done.completedAt, done.startedAt]).toEqual([expect.stringMatching(ISO), started.startedAt]);
    const reopened = (await t.api.patch(`/api/issues/${issue.id}`, { status: 'todo' })).body;
    expect(reopened.completedAt).toBeNull();
    const cancelled = (await t.api.patch(`/api/issues/${issue.id}`, { status: 'cancelled' })).body;
    expect(cancelled.cancelledAt).toMatch(ISO);
  });

  it('keeps blockers, refuses blocker cycles and another company\'s issues', async () => {
    const a = await createIssue({ title: 'A' });
    const b = await createIssue({ title: 'B', blockedByIssueIds: [a.id] });
    expect(b.blockedByIssueIds).toEqual([a.id]);
    const cycle = await t.api.patch(`/api/issues/${a.id}`, { blockedByIssueIds: [b.id] });
    expect([cycle.status, cycle.body.code]).toEqual([422, 'blocker_cycle']);
    const self = await t.api.patch(`/api/issues/${a.id}`, { blockedByIssueIds: [a.id] });
    expect([self.status, self.body.code]).toEqual([422, 'blocker_cycle']);
    const other = await createCompany(t.api);
    const foreign = await createIssue({ title: 'Elsewhere' }, other.id);
    const res = await t.api.patch(`/api/issues/${b.id}`, { blockedByIssueIds: [foreign.id] });
    expect([res.status, res.body.code]).toEqual([422, 'issue_not_found']);
    const cleared = await t.api.patch(`/api/issues/${b.id}`, { blockedByIssueIds: [] });
    expect(cleared.body.blockedByIssueIds).toEqual([]);
  });

  it('refuses bad input with 4xx and writes nothing, not even a number', async () => {
    const before = await tableCounts();
    const cases: Array<[unknown, number, string]> = [
      [{}, 400, 'validation_failed'],
      [{ title: 'x', status: 'open' }, 400, 'validation_failed'],
      [{ title: 'x', priority: 'urgent' }, 400, 'validation_failed'],
      [{ title: 'x', projectId: 'nope' }, 400, 'validation_failed'],
      [{ title: 'x', projectId: 'urn:uuid:00000000-0000-4000-8000-000000000000' }, 400, 'validation_failed'],
      [{ title: 'x', blockedByIssueIds: ['00000000-0000-4000-8000-000000000000'] }, 422, 'issue_not_found'],
      [{ title: 'x', assigneeAgentId: agent.id, assigneeUserId: 'someone' }, 422, 'assignee_conflict'],
      [{ title: 'x', parentId: '00000000-0000-4000-8000-000000000000' }, 422, 'issue_not_found'],
      [{ title: 'x', projectId: '00000000-0000-4000-8000-000000000000' }, 422, 'project_not_found'],
    ];
    for (const [body, status, code] of cases) {
      const res = await post(`/api/companies/${company.id}/issues`, body);
      expect([res.status, res.body.code], JSON.stringify(body)).toEqual([status, code]);
    }
    expect(await tableCounts()).toEqual(before);
  });

  it('creates once per Idempotency-Key; the same key with another body is 409', async () => {
    const first = await post(`/api/companies/${company.id}/issues`, { title: 'Once' }, { 'Idempotency-Key': 'create-once-1' });
    const again = await post(`/api/companies/${company.id}/issues`, { title: 'Once' }, { 'Idempotency-Key': 'create-once-1' });
    expect([first.status, again.status]).toEqual([201, 200]);
    expect(again.body.identifier).toBe(first.body.identifier);
    const reused = await post(`/api/companies/${company.id}/issues`, { title: 'Other' }, { 'Idempotency-Key': 'create-once-1' });
    expect([reused.status, reused.body.code]).toEqual([409, 'idempotency_key_reused']);
  });

  it('gives 100 concurrent creates 100 distinct consecutive identifiers', async () => {
    const fresh = await createCompany(t.api, { name: 'Busy Co' });
    const created = await Promise.all(Array.from({ length: 100 }, (_, i) => post(`/api/companies/${fresh.id}/issues`, { title: `Concurrent ${i}` })));
    expect(created.map((r) => r.status).filter((s) => s !== 201)).toEqual([]);
    const numbers = created.map((r) => r.body.issueNumber).sort((a, b) => a - b);
    expect(numbers).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(new Set(created.map((r) => r.body.identifier)).size).toBe(100);
  });

  it('lists newest first with filters and a cursor that neither skips nor repeats under inserts', async () => {
    const fresh = await createCompany(t.api, { name: 'Listed Co' });
    const project = (await post(`/api/companies/${fresh.id}/projects`, { name: 'P' })).body;
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await createIssue({ title: `Item ${i}`, projectId: i % 2 ? project.id : null, status: i < 3 ? 'todo' : 'backlog' }, fresh.id)).id);
    const all = (await t.api.get(`/api/companies/${fresh.id}/issues`)).body;
    expect(all.map((i: any) => i.id)).toEqual([...ids].reverse());
    expect((await t.api.get(`/api/companies/${fresh.id}/issues?projectId=${project.id}`)).body).toHaveLength(3);
    expect((await t.api.get(`/api/companies/${fresh.id}/issues?status=todo`)).body).toHaveLength(3);
    expect((await t.api.get(`/api/companies/${fresh.id}/issues?status=todo,backlog`)).body).toHaveLength(7);
    expect((await t.api.get(`/api/companies/${fresh.id}/issues?q=item%205`)).body.map((i: any) => i.id)).toEqual([ids[5]]);

    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const res = await t.api.get(`/api/companies/${fresh.id}/issues?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status, res.text).toBe(200);
      seen.push(...res.body.map((i: any) => i.id));
      cursor = res.headers.get('x-next-cursor') ?? undefined;
      // A create between pages lands before the first page, never inside the walk.
      if (pages++ === 0) await createIssue({ title: 'Late' }, fresh.id);
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
    const bad = await t.api.get(`/api/companies/${fresh.id}/issues?cursor=zz`);
    expect([bad.status, bad.body.code]).toEqual([400, 'invalid_cursor']);
  });
});

describe('company scoping', () => {
  it('refuses an agent of another company (403) and answers unknown ids 404, before the plugin runs', async () => {
    const issue = await createIssue({ title: 'Private' });
    const other = await createCompany(t.api);
    const outsider = await createAgent(t.api, other.id);
    const key = await createAgentKey(t.api, outsider.id);
    const as = t.api.as(key);
    for (const path of [`/api/issues/${issue.id}`, `/api/issues/${issue.identifier}`, `/api/companies/${company.id}/issues`]) {
      const res = await as.get(path);
      expect(res.status, path).toBe(403);
      expect(res.text).not.toContain('Private');
    }
    const patch = await as.patch(`/api/issues/${issue.id}`, { title: 'Hijacked' });
    expect(patch.status).toBe(403);
    expect((await t.api.get(`/api/issues/${issue.id}`)).body.title).toBe('Private');
    // Its own company's issues it reads.
    const own = await createIssue({ title: 'Theirs' }, other.id);
    expect((await as.get(`/api/issues/${own.id}`)).status).toBe(200);
  });

  it('removes a deleted company\'s work', async () => {
    const doomed = await createCompany(t.api);
    await createIssue({ title: 'Gone soon' }, doomed.id);
    await post(`/api/companies/${doomed.id}/projects`, { name: 'Gone' });
    expect((await t.api.delete(`/api/companies/${doomed.id}`)).status).toBe(200);
    const until = Date.now() + 15_000;
    let left = -1;
    while (Date.now() < until) {
      left = (await t.sql.query('select (select count(*) from plugin_work.issues where company_id = $1) + (select count(*) from plugin_work.projects where company_id = $1) as n', [doomed.id])).rows[0].n;
      if (Number(left) === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(Number(left)).toBe(0);
  });
});
