import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type Api, type TestKernel } from '../../support/harness.ts';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { attach, createIssue, ISO, PNG_1X1, putDocument, UNKNOWN_ID } from './artifact-helpers.ts';

/**
 * GET /api/companies/{companyId}/artifacts: documents, attachments and work products of the
 * company's visible issues as one projection, filtered, grouped and paged.
 */
let t: TestKernel;
let company: any;
let agent: any;
let agentApi: Api;
let outsiderApi: Api;
let project: any;
/** Issues: a (in the project), b (sub-issue of a, in the project), c (no project), hidden. */
const issues: Record<string, any> = {};
/** Artifact ids by name, and all of them newest first. */
const ids: Record<string, string> = {};
let newestFirst: string[];

const artifacts = (query = '', api: Api = t.api, companyId = company.id) => api.get(`/api/companies/${companyId}/artifacts${query ? `?${query}` : ''}`);
const idsOf = (res: any) => res.body.artifacts.map((a: any) => a.id);

async function product(issueId: string, body: Record<string, unknown>) {
  const res = await t.api.post(`/api/issues/${issueId}/work-products`, body);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  company = await createCompany(t.api, { name: 'Gallery Co' });
  agent = await createAgent(t.api, company.id, { name: 'Uploader' });
  agentApi = t.api.as(await createAgentKey(t.api, agent.id));
  const other = await createCompany(t.api, { name: 'Other Gallery Co' });
  outsiderApi = t.api.as(await createAgentKey(t.api, (await createAgent(t.api, other.id)).id));
  project = (await t.api.post(`/api/companies/${company.id}/projects`, { name: 'Website' })).body;
  issues.a = await createIssue(t.api, company.id, { title: 'Redesign', projectId: project.id });
  issues.b = await createIssue(t.api, company.id, { title: 'Hero image', projectId: project.id, parentId: issues.a.id });
  issues.c = await createIssue(t.api, company.id, { title: 'Launch video' });
  issues.hidden = await createIssue(t.api, company.id, { title: 'Hidden work' });
  await putDocument(t.api, issues.hidden.id, 'secret', { body: 'hidden document' });
  await t.sql.query('update plugin_work.issues set hidden_at = now() where id = $1', [issues.hidden.id]);
  // The other company's artifacts never show here.
  const foreign = await createIssue(t.api, other.id, { title: 'Foreign' });
  await putDocument(t.api, foreign.id, 'plan', { body: 'foreign plan' });

  // Oldest first; each in its own transaction, so each has its own updatedAt.
  const doc = await putDocument(t.api, issues.a.id, 'plan', { body: 'Budget numbers inside', title: 'Launch plan' });
  ids.doc = `document:${doc.id}`;
  const png = await attach(agentApi, company.id, issues.b.id, PNG_1X1, 'image/png', 'hero.png');
  ids.png = `attachment:${png.id}`;
  ids.mp4 = `attachment:${(await attach(t.api, company.id, issues.c.id, Buffer.from('....ftypisom'), 'video/mp4', 'teaser.mp4')).id}`;
  ids.csv = `attachment:${(await attach(t.api, company.id, issues.a.id, 'a,b\n1,2\n', 'text/csv', 'metrics.csv')).id}`;
  ids.zip = `attachment:${(await attach(t.api, company.id, issues.b.id, Buffer.from([0x50, 0x4b, 0x05, 0x06, ...Array(18).fill(0)]), 'application/zip', 'assets.zip')).id}`;
  ids.pdf = `attachment:${(await attach(t.api, company.id, issues.c.id, '%PDF-1.4', 'application/pdf', 'storyboard.pdf')).id}`;
  ids.pr = `work_product:${(await product(issues.c.id, { type: 'pull_request', title: 'Add teaser', url: 'https://git.example.com/pr/9' })).id}`;
  ids.backed = `work_product:${(await product(issues.b.id, { type: 'artifact', title: 'Final hero', attachmentId: png.id })).id}`;
  newestFirst = [ids.backed, ids.pr, ids.pdf, ids.zip, ids.csv, ids.mp4, ids.png, ids.doc];
});
afterAll(async () => { await t?.stop(); });

describe('artifacts', () => {
  it('lists documents, attachments and work products of visible issues, newest first, in the projection shape', async () => {
    const res = await artifacts();
    expect(res.status, res.text).toBe(200);
    expect(idsOf(res)).toEqual(newestFirst);
    expect(res.body.nextCursor).toBeNull();
    const byId = Object.fromEntries(res.body.artifacts.map((a: any) => [a.id, a]));
    const docPath = `/api/issues/${issues.a.id}/documents/plan`;
    expect(byId[ids.doc]).toEqual({
      id: ids.doc, source: 'document', mediaKind: 'document', title: 'Launch plan', previewText: 'Budget numbers inside', contentType: 'text/markdown',
      contentPath: docPath, openPath: docPath, downloadPath: null,
      issue: { id: issues.a.id, identifier: issues.a.identifier, title: 'Redesign' }, project: { id: project.id, name: 'Website' },
      createdByAgent: null, updatedAt: expect.stringMatching(ISO), href: `/issues/${issues.a.identifier}#document-plan`,
    });
    const pngPath = `/api/attachments/${ids.png.slice('attachment:'.length)}/content`;
    expect(byId[ids.png]).toEqual({
      id: ids.png, source: 'attachment', mediaKind: 'image', title: 'hero.png', previewText: null, contentType: 'image/png',
      contentPath: pngPath, openPath: pngPath, downloadPath: `${pngPath}?download=true`,
      issue: { id: issues.b.id, identifier: issues.b.identifier, title: 'Hero image' }, project: { id: project.id, name: 'Website' },
      createdByAgent: { id: agent.id, name: 'Uploader' }, updatedAt: expect.stringMatching(ISO), href: `/issues/${issues.b.identifier}#attachment-${ids.png.slice(11)}`,
    });
    expect(byId[ids.pr]).toMatchObject({
      source: 'work_product', mediaKind: '', title: 'Add teaser', contentType: null, contentPath: null, openPath: 'https://git.example.com/pr/9', downloadPath: null,
      project: null, href: `/issues/${issues.c.identifier}#work-product-${ids.pr.slice('work_product:'.length)}`,
    });
    expect(byId[ids.backed]).toMatchObject({ mediaKind: 'image', contentType: 'image/png', contentPath: pngPath, downloadPath: `${pngPath}?download=true` });
    expect(Object.fromEntries(res.body.artifacts.map((a: any) => [a.id, a.mediaKind]))).toMatchObject({
      [ids.mp4]: 'video', [ids.csv]: 'text', [ids.zip]: 'file', [ids.pdf]: 'document',
    });
    // The paths answer.
    expect((await t.api.get(docPath)).body.body).toBe('Budget numbers inside');
    expect((await fetch(`${t.url}${pngPath}`)).status).toBe(200);
  });

  it('filters by media kind, project and text', async () => {
    const kinds: Record<string, string[]> = {
      image: [ids.backed, ids.png], video: [ids.mp4], text: [ids.csv], document: [ids.pdf, ids.doc], file: [ids.zip], all: newestFirst,
    };
    for (const [kind, expected] of Object.entries(kinds)) expect(idsOf(await artifacts(`kind=${kind}`)), kind).toEqual(expected);
    expect(idsOf(await artifacts(`projectId=${project.id}`))).toEqual([ids.backed, ids.zip, ids.csv, ids.png, ids.doc]);
    expect(idsOf(await artifacts(`projectId=${project.id}&kind=image`))).toEqual([ids.backed, ids.png]);
    expect(idsOf(await artifacts('q=BUDGET'))).toEqual([ids.doc]);
    expect(idsOf(await artifacts('q=teaser'))).toEqual([ids.pr, ids.mp4]);
    expect(idsOf(await artifacts(`q=${issues.c.identifier}`))).toEqual([ids.pr, ids.pdf, ids.mp4]);
    expect(idsOf(await artifacts('q=hero'))).toEqual([ids.backed, ids.zip, ids.png]);
    expect(idsOf(await artifacts('q=100%25'))).toEqual([]);
    expect(idsOf(await artifacts(`projectId=${UNKNOWN_ID}`))).toEqual([]);
  });

  it('pages with an opaque cursor that neither skips nor repeats under concurrent inserts', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    let late = '';
    do {
      const res = await artifacts(`limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status, res.text).toBe(200);
      expect(res.body.artifacts.length).toBeLessThanOrEqual(3);
      seen.push(...idsOf(res));
      cursor = res.body.nextCursor;
      // An artifact added between pages sorts before the first page, never inside the walk.
      if (pages++ === 0) late = `document:${(await putDocument(t.api, issues.c.id, 'late', { body: 'late' })).id}`;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(newestFirst);
    expect(idsOf(await artifacts('limit=1'))).toEqual([late]);
    newestFirst.unshift(late);
    const tail = await artifacts(`limit=${newestFirst.length}`);
    expect([idsOf(tail), tail.body.nextCursor]).toEqual([newestFirst, null]);
  });
});

describe('artifact groups', () => {
  it('groups by task, newest group first, with counts, media kinds and preview artifacts, paged', async () => {
    // The late document of the paging test made issue c's group the newest.
    const late = newestFirst[0]!;
    const res = await artifacts('groupBy=task');
    expect(res.status, res.text).toBe(200);
    expect(res.body.nextCursor).toBeNull();
    expect(res.body.groups.map((g: any) => [g.id, g.count, g.mediaKinds])).toEqual([
      [`task:${issues.c.id}`, 4, ['document', 'video']],
      [`task:${issues.b.id}`, 3, ['file', 'image']],
      [`task:${issues.a.id}`, 2, ['document', 'text']],
    ]);
    const [c, b] = res.body.groups;
    expect(b).toMatchObject({
      groupBy: 'task', issue: { id: issues.b.id, identifier: issues.b.identifier, title: 'Hero image' }, title: 'Hero image',
      updatedAt: expect.stringMatching(ISO), href: `/issues/${issues.b.identifier}`,
    });
    expect(b.previewArtifacts.map((a: any) => a.id)).toEqual([ids.backed, ids.zip, ids.png]);
    expect(b.previewArtifacts[0]).toEqual((await artifacts('limit=2')).body.artifacts[1]);
    // At most four previews, newest first.
    expect(c.previewArtifacts.map((a: any) => a.id)).toEqual([late, ids.pr, ids.pdf, ids.mp4]);
    expect(c.updatedAt).toBe(c.previewArtifacts[0].updatedAt);

    const first = await artifacts('groupBy=task&limit=2');
    expect(first.body.groups.map((g: any) => g.issue.id)).toEqual([issues.c.id, issues.b.id]);
    const second = await artifacts(`groupBy=task&limit=2&cursor=${first.body.nextCursor}`);
    expect([second.body.groups.map((g: any) => g.issue.id), second.body.nextCursor]).toEqual([[issues.a.id], null]);
    // A group cursor is not an artifact cursor, nor one of another grouping.
    for (const query of [`cursor=${first.body.nextCursor}`, `groupBy=parent_task&cursor=${first.body.nextCursor}`]) {
      expect((await artifacts(query)).body.code).toBe('invalid_cursor');
    }
    expect((await artifacts('groupBy=task&kind=image')).body.groups.map((g: any) => [g.issue.id, g.count])).toEqual([[issues.b.id, 2]]);
  });

  it('groups sub-issues under their parent task, and opens one group with its artifacts and selectedGroup', async () => {
    const grouped = (await artifacts('groupBy=parent_task')).body.groups;
    expect(grouped.map((g: any) => [g.id, g.count])).toEqual([[`parent_task:${issues.c.id}`, 4], [`parent_task:${issues.a.id}`, 5]]);
    const opened = await artifacts(`groupBy=parent_task&groupIssueId=${issues.a.id}&limit=2`);
    expect(opened.status, opened.text).toBe(200);
    expect(idsOf(opened)).toEqual([ids.backed, ids.zip]);
    expect(opened.body.selectedGroup).toEqual(grouped[1]);
    const rest = await artifacts(`groupBy=parent_task&groupIssueId=${issues.a.id}&limit=10&cursor=${opened.body.nextCursor}`);
    expect([idsOf(rest), rest.body.nextCursor]).toEqual([[ids.csv, ids.png, ids.doc], null]);
    const task = await artifacts(`groupBy=task&groupIssueId=${issues.b.id}`);
    expect([idsOf(task), task.body.selectedGroup.count]).toEqual([[ids.backed, ids.zip, ids.png], 3]);
    // A sub-issue is no group of its own under parent_task: an empty group.
    const empty = await artifacts(`groupBy=parent_task&groupIssueId=${issues.b.id}`);
    expect(empty.body).toEqual({
      artifacts: [], nextCursor: null,
      selectedGroup: { id: `parent_task:${issues.b.id}`, groupBy: 'parent_task', issue: { id: issues.b.id, identifier: issues.b.identifier, title: 'Hero image' }, title: 'Hero image', count: 0, mediaKinds: [], previewArtifacts: [], updatedAt: null, href: `/issues/${issues.b.identifier}` },
    });
    for (const id of [UNKNOWN_ID, issues.hidden.id]) {
      const res = await artifacts(`groupIssueId=${id}`);
      expect([res.status, res.body.error]).toEqual([404, 'Issue not found']);
    }
  });
});

describe('artifact refusals and scoping', () => {
  it('refuses bad queries with 400', async () => {
    for (const [query, code] of [
      ['limit=0', 'validation_failed'], ['limit=101', 'validation_failed'], ['limit=ten', 'validation_failed'], [`q=${'q'.repeat(161)}`, 'validation_failed'],
      ['kind=audio', 'validation_failed'], ['groupBy=project', 'validation_failed'], ['projectId=website', 'validation_failed'],
      ['groupIssueId=1', 'validation_failed'], ['other=1', 'validation_failed'], ['cursor=zz', 'invalid_cursor'],
      [`cursor=${Buffer.from(`1|issue:${UNKNOWN_ID}`).toString('hex')}`, 'invalid_cursor'],
    ]) {
      const res = await artifacts(query);
      expect([res.status, res.body.code], query).toEqual([400, code]);
    }
    expect((await artifacts(`limit=100&q=${'q'.repeat(160)}`)).status).toBe(200);
  });

  it('serves the board and agents of the company, and refuses an agent of another company with 403', async () => {
    expect(idsOf(await artifacts('', agentApi))).toEqual(newestFirst);
    const res = await artifacts('', outsiderApi);
    expect([res.status, res.body.code]).toEqual([403, 'company_access_denied']);
    expect(res.text).not.toContain('Launch plan');
  });

  it("removes a deleted company's documents, revisions, attachments and work products", async () => {
    const doomed = await createCompany(t.api, { name: 'Doomed Gallery' });
    const issue = await createIssue(t.api, doomed.id, { title: 'Soon gone' });
    const doc = await putDocument(t.api, issue.id, 'plan', { body: 'one' });
    await putDocument(t.api, issue.id, 'plan', { body: 'two', baseRevisionId: doc.latestRevisionId }, 200);
    const file = await attach(t.api, doomed.id, issue.id, 'bytes', 'text/plain', 'f.txt');
    await product(issue.id, { type: 'artifact', title: 'f', attachmentId: file.id });
    const count = async () => (await t.sql.query(
      `select (select count(*) from plugin_work.issue_documents where company_id = $1) + (select count(*) from plugin_work.issue_document_revisions where company_id = $1)
            + (select count(*) from plugin_work.issue_attachments where company_id = $1) + (select count(*) from plugin_work.work_products where company_id = $1)
            + (select count(*) from blobs where company_id = $1) as n`, [doomed.id])).rows[0].n;
    expect(Number(await count())).toBe(6);
    expect((await t.api.delete(`/api/companies/${doomed.id}`)).status).toBe(200);
    const until = Date.now() + 15_000;
    while (Number(await count()) !== 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(Number(await count())).toBe(0);
    expect(idsOf(await artifacts())).toEqual(newestFirst);
  });
});

describe('artifact groups in a company with many artifacts', () => {
  /** Every group of the company, newest artifact first, as SQL over all of its artifacts computes it. */
  async function expectedGroups(companyId: string, groupBy: 'task' | 'parent_task'): Promise<Array<[string, number]>> {
    const group = groupBy === 'task' ? 'i.id' : 'coalesce(p.id, i.id)';
    const { rows } = await t.sql.query(
      `select ${group} as id, count(*)::int as n from plugin_work.issue_documents d
         join plugin_work.issues i on i.id = d.issue_id and i.hidden_at is null
         left join plugin_work.issues p on p.id = i.parent_id and p.hidden_at is null
        where d.company_id = $1 group by 1 order by max(d.updated_at) desc, 1 desc`, [companyId]);
    return rows.map((row: any) => [`${groupBy}:${row.id}`, row.n]);
  }

  async function allGroupPages(companyId: string, groupBy: string, limit: number, filter = ''): Promise<Array<[string, number]>> {
    const out: Array<[string, number]> = [];
    let cursor: string | null = null;
    do {
      const res: any = await artifacts(`groupBy=${groupBy}&limit=${limit}${filter}${cursor ? `&cursor=${cursor}` : ''}`, t.api, companyId);
      expect(res.status, res.text).toBe(200);
      out.push(...res.body.groups.map((g: any) => [g.id, g.count] as [string, number]));
      cursor = res.body.nextCursor;
    } while (cursor);
    return out;
  }

  it('pages groups in order past a group with more artifacts than one walk step, ties included, none repeated or skipped', async () => {
    const busy = await createCompany(t.api, { name: 'Busy Gallery' });
    const parent = await createIssue(t.api, busy.id, { title: 'Parent' });
    const small: any[] = [];
    for (let n = 0; n < 9; n += 1) {
      const issue = await createIssue(t.api, busy.id, { title: `Small ${n}`, ...(n % 3 === 0 ? { parentId: parent.id } : {}) });
      small.push(issue);
      await putDocument(t.api, issue.id, 'one', { body: `first of ${n}` });
      await putDocument(t.api, issue.id, 'two', { body: `second of ${n}` });
    }
    // The newest 230 artifacts all belong to one issue: the groups after it lie beyond the first walk step.
    const big = await createIssue(t.api, busy.id, { title: 'Big' });
    await Promise.all(Array.from({ length: 10 }, async (_, worker) => {
      for (let n = worker; n < 230; n += 10) await putDocument(t.api, big.id, `doc-${n}`, { body: `document ${n}` });
    }));
    // Three groups share their newest artifact's time: their order is their issue id.
    // Set around the plugin, in the documents and in what the list reads (their projection rows and their issues' rollups).
    const tied = [small[1].id, small[2].id, small[4].id];
    await t.sql.query(`update plugin_work.issue_documents set updated_at = '2026-01-01T00:00:00Z' where issue_id = any($1::uuid[]) and key = 'two'`, [tied]);
    await t.sql.query(`update plugin_work.artifacts set updated_at = '2026-01-01T00:00:00Z' where issue_id = any($1::uuid[]) and document_key = 'two'`, [tied]);
    await t.sql.query(
      `update plugin_work.artifact_rollups r set latest_at = (select max(updated_at) from plugin_work.artifacts a where a.issue_id = r.issue_id) where issue_id = any($1::uuid[])`, [tied]);

    for (const groupBy of ['task', 'parent_task'] as const) {
      const expected = await expectedGroups(busy.id, groupBy);
      expect(expected.length).toBeGreaterThan(5);
      for (const limit of [1, 3, 100]) expect(await allGroupPages(busy.id, groupBy, limit), `${groupBy} limit ${limit}`).toEqual(expected);
      // With a filter the walk goes through the matching artifacts themselves, its step growing past the big group (every artifact here is a document).
      for (const limit of [1, 3]) expect(await allGroupPages(busy.id, groupBy, limit, '&kind=document'), `${groupBy} kind=document limit ${limit}`).toEqual(expected);
    }
    const grouped = (await artifacts('groupBy=parent_task', t.api, busy.id)).body.groups;
    expect(grouped.find((g: any) => g.issue.id === parent.id).count).toBe(6);
    expect(grouped.some((g: any) => g.issue.id === small[0].id)).toBe(false);
  });
});

describe('the artifact projection', () => {
  it("is what migration 0013's backfill builds from the artifacts themselves, row for row", async () => {
    const migration = await readFile(new URL('../../../plugins/work/migrations/0013-artifact-projection.sql', import.meta.url), 'utf8');
    // Its statements that fill the projection and the rollups' media kinds.
    const backfill = migration.split('\n').filter((line) => !line.startsWith('--')).join('\n').split(';')
      .map((statement) => statement.trim()).filter((statement) => /^(insert into artifacts|update artifact_rollups)/.test(statement));
    expect(backfill).toHaveLength(2);
    const client = await t.sql.connect();
    try {
      const rows = `select (select coalesce(jsonb_agg(to_jsonb(a) order by artifact_id), '[]') from plugin_work.artifacts a) as artifacts,
                           (select coalesce(jsonb_agg(to_jsonb(r) order by issue_id), '[]') from plugin_work.artifact_rollups r) as rollups`;
      const kept = (await client.query(rows)).rows[0];
      expect(kept.artifacts.length).toBeGreaterThan(5);
      expect(kept.rollups.some((rollup: any) => rollup.media_kinds.length > 1)).toBe(true);
      await client.query('begin');
      await client.query('set local search_path = plugin_work');
      await client.query(`delete from artifacts`);
      await client.query(`update artifact_rollups set media_kinds = '{}'`);
      for (const statement of backfill) await client.query(statement);
      expect((await client.query(rows)).rows[0]).toEqual(kept);
    } finally {
      await client.query('rollback');
      client.release();
    }
  });
});

describe('artifact groups follow every artifact write', () => {
  /** The projection's rows and the rollups as the artifacts themselves compute them (count and newest change per issue). */
  async function rollupsMatchArtifacts(companyId: string) {
    const projection = await t.sql.query(
      `select (select coalesce(jsonb_agg(jsonb_build_array(artifact_id, issue_id, updated_at, media_kind) order by artifact_id), '[]') from plugin_work.artifacts where company_id = $1) as kept,
              (select coalesce(jsonb_agg(jsonb_build_array(artifact_id, issue_id, updated_at, media_kind) order by artifact_id), '[]') from (
                 select 'document:' || id as artifact_id, issue_id, updated_at, 'document' as media_kind from plugin_work.issue_documents where company_id = $1
                 union all select 'attachment:' || id, issue_id, updated_at, case when content_type like 'image/%' then 'image' else 'text' end from plugin_work.issue_attachments where company_id = $1
                 union all select 'work_product:' || id, issue_id, updated_at, '' from plugin_work.work_products where company_id = $1) a) as counted`, [companyId]);
    expect(projection.rows[0].kept).toEqual(projection.rows[0].counted);
    const { rows } = await t.sql.query(
      `select (select coalesce(jsonb_agg(jsonb_build_array(issue_id, artifact_count, latest_at) order by issue_id), '[]') from plugin_work.artifact_rollups where company_id = $1) as kept,
              (select coalesce(jsonb_agg(jsonb_build_array(issue_id, n, latest) order by issue_id), '[]') from (
                 select issue_id, count(*)::int as n, max(updated_at) as latest from (
                   select issue_id, updated_at from plugin_work.issue_documents where company_id = $1
                   union all select issue_id, updated_at from plugin_work.issue_attachments where company_id = $1
                   union all select issue_id, updated_at from plugin_work.work_products where company_id = $1) a group by issue_id) c) as counted`, [companyId]);
    expect(rows[0].kept).toEqual(rows[0].counted);
  }
  const groupIds = async (companyId: string) => (await artifacts('groupBy=task', t.api, companyId)).body.groups.map((g: any) => [g.issue.id, g.count]);

  it('orders groups by the newest change after creates, updates and deletes, also of concurrent writers', async () => {
    const shop = await createCompany(t.api, { name: 'Rollup Gallery' });
    const [x, y, z] = [await createIssue(t.api, shop.id, { title: 'X' }), await createIssue(t.api, shop.id, { title: 'Y' }), await createIssue(t.api, shop.id, { title: 'Z' })];
    const old = await t.api.post(`/api/issues/${x.id}/work-products`, { type: 'pull_request', title: 'Old PR', url: 'https://git.example.com/pr/1' });
    await putDocument(t.api, y.id, 'plan', { body: 'y plan' });
    const file = await attach(t.api, shop.id, z.id, 'z', 'text/plain', 'z.txt');
    expect(await groupIds(shop.id)).toEqual([[z.id, 1], [y.id, 1], [x.id, 1]]);
    // An update moves its group first; deleting a group's only artifact removes the group.
    expect((await t.api.patch(`/api/work-products/${old.body.id}`, { status: 'merged' })).status).toBe(200);
    expect(await groupIds(shop.id)).toEqual([[x.id, 1], [z.id, 1], [y.id, 1]]);
    expect((await t.api.delete(`/api/attachments/${file.id}`)).status).toBe(200);
    expect(await groupIds(shop.id)).toEqual([[x.id, 1], [y.id, 1]]);
    // Writers of one issue and of several at once: every artifact counted, the newest change kept.
    await Promise.all([
      ...Array.from({ length: 6 }, (_, n) => attach(t.api, shop.id, z.id, `z${n}`, 'text/plain', `z${n}.txt`)),
      ...Array.from({ length: 6 }, (_, n) => putDocument(t.api, y.id, `note-${n}`, { body: `note ${n}` })),
    ]);
    await rollupsMatchArtifacts(shop.id);
    const groups = await groupIds(shop.id);
    expect(groups.map((g: any) => g[1]).sort()).toEqual([1, 6, 7]);
    expect(groups[2]).toEqual([x.id, 1]);
    // A hidden issue's group is gone; visible again, it is back.
    await t.sql.query('update plugin_work.issues set hidden_at = now() where id = $1', [x.id]);
    expect((await groupIds(shop.id)).map((g: any) => g[0])).not.toContain(x.id);
    await t.sql.query('update plugin_work.issues set hidden_at = null where id = $1', [x.id]);
    expect((await groupIds(shop.id)).map((g: any) => g[0])).toContain(x.id);
    // A work product's row follows its file: an image while it has one, a plain link once the file is deleted.
    const picture = await attach(t.api, shop.id, z.id, PNG_1X1, 'image/png', 'shot.png');
    const shot = await t.api.post(`/api/issues/${z.id}/work-products`, { type: 'artifact', title: 'Screenshot', attachmentId: picture.id });
    expect(shot.status, shot.text).toBe(201);
    const kindOf = async () => (await artifacts(`q=Screenshot`, t.api, shop.id)).body.artifacts.find((a: any) => a.id === `work_product:${shot.body.id}`);
    expect(await kindOf()).toMatchObject({ mediaKind: 'image', contentType: 'image/png' });
    expect((await t.api.delete(`/api/attachments/${picture.id}`)).status).toBe(200);
    expect(await kindOf()).toMatchObject({ mediaKind: '', contentType: null, contentPath: null });
    await rollupsMatchArtifacts(shop.id);
  });
});
