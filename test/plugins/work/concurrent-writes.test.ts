import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApi, FIRST_PARTY_PLUGINS, startPeerKernel, startTestKernel, type Api, type PeerKernel, type TestKernel } from '../../support/harness.ts';
import { createCompany } from '../../support/fixtures.ts';

/**
 * Writes of the work plugin that must not queue behind one row (issue 30, point 3), against two
 * Keel processes on one database: issue numbers are taken from the company's counter in a
 * transaction of their own, so a create holds no lock on the company row while it runs on,
 * and a comment does not lock its issue. Each case holds a create or a comment half-way (the
 * test's own transaction holds a row the call's insert needs) and shows that the row the old
 * code held is free and that the same kind of write goes through meanwhile, at the other
 * process. Were the row still held, the NOWAIT lock would fail at once.
 */
let t: TestKernel;
let peer: PeerKernel;
let peerApi: Api;
let holder: pg.Client;

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  peer = await startPeerKernel(t, {}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  peerApi = createApi(peer.url);
  holder = new pg.Client({ connectionString: t.databaseUrl });
  await holder.connect();
}, 120_000);
afterAll(async () => {
  await holder?.end();
  await peer?.stop();
  await t?.stop();
});

/** Resolves once a plugin connection waits on a lock while running a statement that contains `statement`. */
async function waitingOnLock(statement: string): Promise<void> {
  for (;;) {
    const { rows } = await t.sql.query(
      "select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and application_name like 'keel-w%' and query ilike $1",
      [`%${statement}%`]);
    if (rows[0].n > 0) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Whether `sql` (a NOWAIT lock) gets its lock at once, in a transaction of its own that is rolled back. */
async function lockedAtOnce(sql: string, params: unknown[]): Promise<boolean> {
  const client = await t.sql.connect();
  try {
    await client.query('begin');
    await client.query(sql, params);
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === '55P03') return false;
    throw error;
  } finally {
    await client.query('rollback');
    client.release();
  }
}

describe('issue numbers across two Keel processes', () => {
  it('gives 60 concurrent creates sent to both processes the numbers 1 to 60, each once', async () => {
    const company = await createCompany(t.api, { name: 'Two Process Numbers' });
    const path = `/api/companies/${company.id}/issues`;
    const created = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? peerApi : t.api).post(path, { title: `Both ${i}` })));
    expect(created.filter((res) => res.status !== 201).map((res) => res.text)).toEqual([]);
    expect(created.map((res) => res.body.issueNumber).sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    expect(new Set(created.map((res) => res.body.identifier)).size).toBe(60);
    expect((await t.api.get(`/api/companies/${company.id}`)).body.issueCounter).toBe(60);
    const { rows } = await t.sql.query('select count(*)::int as n, max(issue_number) as top from plugin_work.issues where company_id = $1', [company.id]);
    expect(rows[0]).toEqual({ n: 60, top: 60 });
  });

  it('takes a number without holding the company row: another process creates while the first create is still open', async () => {
    const company = await createCompany(t.api, { name: 'Open Create Co' });
    const project = (await t.api.post(`/api/companies/${company.id}/projects`, { name: 'Held' })).body;
    // The project's row, locked here, stops the first create at its insert (the foreign key's
    // KEY SHARE waits), after it took its number.
    await holder.query('begin');
    await holder.query('select 1 from plugin_work.projects where id = $1 for update', [project.id]);
    const first = t.api.post(`/api/companies/${company.id}/issues`, { title: 'Held open', projectId: project.id });
    try {
      await waitingOnLock('insert into issues');
      expect((await t.sql.query('select issue_counter from companies where id = $1', [company.id])).rows[0].issue_counter).toBe(1);
      expect(await lockedAtOnce('select 1 from companies where id = $1 for update nowait', [company.id])).toBe(true);
      const second = await peerApi.post(`/api/companies/${company.id}/issues`, { title: 'Meanwhile' });
      expect([second.status, second.body.issueNumber], second.text).toEqual([201, 2]);
    } finally {
      await holder.query('rollback');
    }
    const answered = await first;
    expect([answered.status, answered.body.issueNumber], answered.text).toEqual([201, 1]);
    expect((await t.api.get(`/api/companies/${company.id}`)).body.issueCounter).toBe(2);
  });
});

describe('comments across two Keel processes', () => {
  it('do not lock their issue: while one comment is open, the issue is patched and commented at the other process', async () => {
    const company = await createCompany(t.api, { name: 'Open Comment Co' });
    const issue = (await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Talked about' })).body;
    const parent = (await t.api.post(`/api/issues/${issue.id}/comments`, { body: 'First word' })).body;
    // The parent comment's row, locked here, stops the reply at its insert (the foreign key's KEY SHARE waits).
    await holder.query('begin');
    await holder.query('select 1 from plugin_work.issue_comments where id = $1 for update', [parent.id]);
    const reply = t.api.post(`/api/issues/${issue.id}/comments`, { body: 'A reply', parentCommentId: parent.id });
    try {
      await waitingOnLock('insert into issue_comments');
      expect(await lockedAtOnce('select 1 from plugin_work.issues where id = $1 for no key update nowait', [issue.id])).toBe(true);
      const patched = await peerApi.patch(`/api/issues/${issue.id}`, { title: 'Talked about, renamed' });
      expect([patched.status, patched.body.title], patched.text).toEqual([200, 'Talked about, renamed']);
      const other = await peerApi.post(`/api/issues/${issue.id}/comments`, { body: 'Meanwhile' });
      expect(other.status, other.text).toBe(201);
    } finally {
      await holder.query('rollback');
    }
    const answered = await reply;
    expect([answered.status, answered.body.parentCommentId], answered.text).toEqual([201, parent.id]);
    const listed = (await t.api.get(`/api/issues/${issue.id}/comments`)).body.map((comment: any) => comment.body);
    expect(listed.sort()).toEqual(['A reply', 'First word', 'Meanwhile']);
    const { rows } = await t.sql.query("select count(*)::int as n from activity_log where entity_id = $1 and action = 'issue.comment_added'", [issue.id]);
    expect(rows[0].n).toBe(3);
  });
});

describe('document, attachment and work product writes across two Keel processes', () => {
  it('do not lock their issue: while a document write is open, the issue is patched and commented at the other process, and a second write based on the same revision waits for it and loses', async () => {
    const company = await createCompany(t.api, { name: 'Open Document Co' });
    const issue = (await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Documented' })).body;
    const first = (await t.api.put(`/api/issues/${issue.id}/documents/plan`, { body: 'v1' })).body;
    // The issue's artifact lock (its rollup row), held here, stops the next document write at its start.
    await holder.query('begin');
    await holder.query('select 1 from plugin_work.artifact_rollups where issue_id = $1 for update', [issue.id]);
    const write = t.api.put(`/api/issues/${issue.id}/documents/plan`, { body: 'v2', baseRevisionId: first.latestRevisionId });
    let racing: Promise<any> | undefined;
    try {
      await waitingOnLock('insert into artifact_rollups');
      expect(await lockedAtOnce('select 1 from plugin_work.issues where id = $1 for no key update nowait', [issue.id])).toBe(true);
      const patched = await peerApi.patch(`/api/issues/${issue.id}`, { title: 'Documented, renamed' });
      expect([patched.status, patched.body.title], patched.text).toEqual([200, 'Documented, renamed']);
      const comment = await peerApi.post(`/api/issues/${issue.id}/comments`, { body: 'Meanwhile' });
      expect(comment.status, comment.text).toBe(201);
      // A second write based on the same revision, at the other process, waits behind the first (it cannot see v1 as current and win too).
      racing = peerApi.put(`/api/issues/${issue.id}/documents/plan`, { body: 'v2 elsewhere', baseRevisionId: first.latestRevisionId });
    } finally {
      await holder.query('rollback');
    }
    const [written, lost] = [await write, await racing!];
    expect([written.status, lost.status], `${written.text} ${lost.text}`).toEqual([200, 409]);
    expect(lost.body.code).toBe('document_revision_conflict');
    expect((await t.api.get(`/api/issues/${issue.id}/documents/plan`)).body.body).toBe('v2');
  });
});

