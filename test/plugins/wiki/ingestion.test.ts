import { existsSync } from 'node:fs';
import { readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsSettled } from '../../support/events.ts';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { base, installWiki, mountWiki, tool } from './helpers.ts';

/**
 * Event ingestion: the work plugin's issue, comment and document events become source files
 * (raw/issues/<identifier>.md) of a company's default space when, and only when, the company
 * turned ingestion on; capped per issue, handed to the maintainer in cursor windows capped per
 * window and per run; each event once; each company only into its own wiki.
 */
const MARKER = '[truncated: an ingested issue source is capped at 12,000 characters]';

let t: TestKernel;
let companyA: any;
let companyB: any;
let companyC: any;
let rootA: string;
let rootB: string;
let keyA: string;
let keyB: string;

async function ok(res: { status: number; text: string; body: any }, status = 200) {
  expect(res.status, res.text).toBe(status);
  return res.body;
}

async function createIssue(companyId: string, fields: Record<string, unknown>) {
  return ok(await t.api.post(`/api/companies/${companyId}/issues`, fields), 201);
}

async function operationsOf(companyId: string) {
  return (await ok(await t.api.get(`${base}/operations?companyId=${companyId}&limit=500`))).operations as any[];
}

const ingested = async (companyId: string) => (await operationsOf(companyId)).filter((op) => op.kind === 'ingest_source');
const setIngestion = (companyId: string, enabled: boolean) => t.api.put(`${base}/ingestion`, { companyId, enabled });
const sourceFile = (root: string, identifier: string) => join(root, 'raw', 'issues', `${identifier}.md`);
const window = (companyId: string, headers?: Record<string, string>) =>
  t.api.post('/api/plugins/tools/execute', { tool: 'llm-wiki.wiki_next_cursor_window', companyId, input: { companyId, wikiId: 'default' } }, { headers });

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  await installWiki(t);
  companyA = await createCompany(t.api);
  companyB = await createCompany(t.api);
  companyC = await createCompany(t.api);
  rootA = await mountWiki(t, companyA.id, 'ingest-a');
  rootB = await mountWiki(t, companyB.id, 'ingest-b');
  keyA = await createAgentKey(t.api, (await createAgent(t.api, companyA.id)).id);
  keyB = await createAgentKey(t.api, (await createAgent(t.api, companyB.id)).id);
});

afterAll(async () => {
  await t?.stop();
  for (const root of [rootA, rootB]) if (root) await rm(root, { recursive: true, force: true });
});

describe('the setting', () => {
  it('is off by default: an issue, its comment and document write nothing', async () => {
    const state = await ok(await t.api.get(`${base}/ingestion?companyId=${companyA.id}`));
    expect(state).toMatchObject({ companyId: companyA.id, enabled: false, spaceSlug: 'default', folder: 'raw/issues',
      caps: { perIssueSource: 12_000, perCursorWindow: 60_000, perRoutineRun: 120_000 }, cursor: { position: '0', pendingSources: 0 }, sources: 0 });
    const issue = await createIssue(companyA.id, { title: 'Written while off', description: 'Nobody listens yet' });
    await ok(await t.api.post(`/api/issues/${issue.id}/comments`, { body: 'still off' }), 201);
    await eventsSettled(t);
    expect(existsSync(join(rootA, 'raw'))).toBe(false);
    expect(await ingested(companyA.id)).toEqual([]);
    expect((await ok(await t.api.get(`${base}/overview?companyId=${companyA.id}`))).ingestion).toEqual({ enabled: false });
  });

  it('is turned on and off by a board user of the company only', async () => {
    const asAgent = await t.api.as(keyA).put(`${base}/ingestion`, { enabled: true });
    expect(asAgent.status, asAgent.text).toBe(403);
    const otherCompany = await t.api.as(keyB).get(`${base}/ingestion?companyId=${companyA.id}`);
    expect(otherCompany.status, otherCompany.text).toBe(403);
    const otherPut = await t.api.as(keyB).put(`${base}/ingestion`, { companyId: companyA.id, enabled: true });
    expect(otherPut.status, otherPut.text).toBe(403);
    const unnamed = await t.api.put(`${base}/ingestion`, { enabled: true });
    expect(unnamed.status, unnamed.text).toBe(400);
    expect(unnamed.body.code).toBe('company_required');
    const bad = await t.api.put(`${base}/ingestion`, { companyId: companyA.id, enabled: 'yes' });
    expect(bad.status, bad.text).toBe(400);
    expect(bad.body.code).toBe('validation_failed');
    const missing = await t.api.put(`${base}/ingestion`, { companyId: companyA.id });
    expect(missing.status, missing.text).toBe(400);
    expect((await ok(await t.api.get(`${base}/ingestion?companyId=${companyA.id}`))).enabled).toBe(false);
    expect((await operationsOf(companyA.id)).some((op) => op.kind === 'enable_ingestion')).toBe(false);

    expect((await ok(await setIngestion(companyA.id, true))).enabled).toBe(true);
    // Turning it on again is no change: one operation.
    expect((await ok(await setIngestion(companyA.id, true))).enabled).toBe(true);
    expect((await operationsOf(companyA.id)).filter((op) => op.kind === 'enable_ingestion')).toHaveLength(1);
    // An agent of the company reads it.
    expect((await ok(await t.api.as(keyA).get(`${base}/ingestion`))).enabled).toBe(true);
    expect((await ok(await t.api.get(`${base}/overview?companyId=${companyA.id}`))).ingestion).toEqual({ enabled: true });
    // The issue written while it was off is not ingested by turning it on.
    await eventsSettled(t);
    expect(await ingested(companyA.id)).toEqual([]);
  });
});

describe('ingestion on', () => {
  let issue: any;

  it('writes an issue, its comments and documents into raw/issues/<identifier>.md of the default space', async () => {
    issue = await createIssue(companyA.id, { title: 'Tide tables', description: 'We need the **tide tables** for the harbour.' });
    await ok(await t.api.post(`/api/issues/${issue.id}/comments`, { body: 'The harbour master has them.' }), 201);
    const doc = await t.api.put(`/api/issues/${issue.id}/documents/plan`, { title: 'Plan', body: 'Ask the harbour master on Monday.' });
    expect([200, 201]).toContain(doc.status);
    await eventsSettled(t);
    const content = await readFile(sourceFile(rootA, issue.identifier), 'utf8');
    expect(content).toContain(`# ${issue.identifier}: Tide tables`);
    expect(content).toContain('We need the **tide tables** for the harbour.');
    expect(content).toContain('## Document: plan (Plan), revision 1');
    expect(content).toContain('Ask the harbour master on Monday.');
    expect(content).toContain('The harbour master has them.');
    expect(content).not.toContain(MARKER);

    const sources = (await ok(await tool(t, 'wiki_list_sources', { companyId: companyA.id, wikiId: 'default' }))).result.sources;
    expect(sources).toContainEqual({ path: `issues/${issue.identifier}.md` });
    const read = (await ok(await tool(t, 'wiki_read_source', { companyId: companyA.id, wikiId: 'default', path: `issues/${issue.identifier}.md` }))).result;
    expect(read.content).toBe(content);
    // An agent of the company lists it too.
    const asAgent = (await ok(await tool(t, 'wiki_list_sources', { companyId: companyA.id, wikiId: 'default' }, keyA))).result.sources;
    expect(asAgent).toContainEqual({ path: `issues/${issue.identifier}.md` });

    const ops = await ingested(companyA.id);
    expect(ops.length).toBeGreaterThanOrEqual(1);
    expect(ops.every((op) => op.path === `issues/${issue.identifier}.md`)).toBe(true);
    expect(ops[0]).toMatchObject({ spaceSlug: 'default', summary: `${issue.identifier}: Tide tables`, details: { issueId: issue.id, identifier: issue.identifier, truncated: false, characters: content.length } });
    expect(ops.map((op) => op.details.event)).toContain('work.issue.created');
    const activity = await t.sql.query("select count(*)::int as n from activity_log where company_id = $1 and action = 'wiki.ingest_source'", [companyA.id]);
    expect(activity.rows[0].n).toBe(ops.length);
  });

  it('writes once for an event delivered twice, and not at all for a change that leaves the text as it is', async () => {
    const file = sourceFile(rootA, issue.identifier);
    const before = { ops: (await ingested(companyA.id)).length, mtime: (await stat(file)).mtimeMs, text: await readFile(file, 'utf8') };
    const { rows: [delivery] } = await t.sql.query(
      `update keel_events.deliveries d set state = 'pending', available_at = now(), finished_at = null, lease_until = null
         from keel_events.outbox o where o.id = d.event_id and d.subscriber = 'llm-wiki' and o.name = 'work.issue.comment_added' and o.entity_id = $1
       returning d.event_id, d.attempts`, [issue.id]);
    expect(delivery).toBeTruthy();
    await t.sql.query("select pg_notify('keel_events', '')");
    await eventsSettled(t);
    const { rows: [again] } = await t.sql.query("select state, attempts from keel_events.deliveries where event_id = $1 and subscriber = 'llm-wiki'", [delivery.event_id]);
    // One attempt more than it had (its first delivery may itself have been retried under load).
    expect(again).toMatchObject({ state: 'delivered', attempts: delivery.attempts + 1 });
    // Priority is not part of the source: the update event writes nothing.
    await ok(await t.api.patch(`/api/issues/${issue.id}`, { priority: 'high' }));
    await eventsSettled(t);
    expect((await ingested(companyA.id)).length).toBe(before.ops);
    expect((await stat(file)).mtimeMs).toBe(before.mtime);
    expect(await readFile(file, 'utf8')).toBe(before.text);
    // A change that is part of it writes again.
    await ok(await t.api.patch(`/api/issues/${issue.id}`, { title: 'Tide tables of the harbour' }));
    await eventsSettled(t);
    expect(await readFile(file, 'utf8')).toContain(`# ${issue.identifier}: Tide tables of the harbour`);
    expect((await ingested(companyA.id)).length).toBe(before.ops + 1);
  });

  it('caps an issue source at 12,000 characters and marks the truncation', async () => {
    const long = await createIssue(companyA.id, { title: 'A very long issue', description: 'tide '.repeat(20_000) });
    await ok(await t.api.post(`/api/issues/${long.id}/comments`, { body: 'a comment that no longer fits' }), 201);
    await eventsSettled(t);
    const content = await readFile(sourceFile(rootA, long.identifier), 'utf8');
    expect(content.length).toBeLessThanOrEqual(12_000);
    expect(content.length).toBeGreaterThan(11_000);
    expect(content.trimEnd().endsWith(MARKER)).toBe(true);
    expect(content).not.toContain('a comment that no longer fits');
    const op = (await ingested(companyA.id)).find((entry) => entry.details.identifier === long.identifier);
    expect(op.details).toMatchObject({ truncated: true, characters: content.length });
  });
});

describe('cursor windows', () => {
  it('hands out at most 60,000 characters per window, and moves only when told', async () => {
    for (let n = 0; n < 6; n += 1) await createIssue(companyA.id, { title: `Bulk ${n}`, description: `bulk${n} `.repeat(1_400) });
    await eventsSettled(t);
    const state = await ok(await t.api.get(`${base}/ingestion?companyId=${companyA.id}`));
    expect(state.cursor.pendingSources).toBe(state.sources);
    expect(state.cursor.pendingCharacters).toBeGreaterThan(60_000);

    const first = (await ok(await window(companyA.id))).result;
    expect(first.from).toBe('0');
    expect(first.run).toBeNull();
    expect(first.characters).toBeLessThanOrEqual(60_000);
    expect(first.characters).toBe(first.sources.reduce((sum: number, s: any) => sum + s.content.length, 0));
    expect(first.sources.length).toBeGreaterThan(0);
    expect(first.remainingSources).toBeGreaterThan(0);
    // Oldest change first: the tide issue (changed before the bulk ones) leads.
    const positions = first.sources.map((s: any) => BigInt(s.position));
    expect([...positions].sort((a, b) => (a < b ? -1 : 1))).toEqual(positions);
    // Reading moves nothing.
    expect((await ok(await window(companyA.id))).result.to).toBe(first.to);

    const moved = (await ok(await tool(t, 'wiki_advance_cursor', { companyId: companyA.id, wikiId: 'default', to: first.to }))).result;
    expect(moved).toEqual({ spaceSlug: 'default', position: first.to, moved: true });
    const second = (await ok(await window(companyA.id))).result;
    expect(second.from).toBe(first.to);
    const firstPaths = new Set(first.sources.map((s: any) => s.path));
    expect(second.sources.some((s: any) => firstPaths.has(s.path))).toBe(false);
    expect(second.sources.length + first.sources.length).toBe(state.sources);
    // Never backwards; never past what was ingested.
    expect((await ok(await tool(t, 'wiki_advance_cursor', { companyId: companyA.id, wikiId: 'default', to: '0' }))).result).toEqual({ spaceSlug: 'default', position: first.to, moved: false });
    const ahead = await tool(t, 'wiki_advance_cursor', { companyId: companyA.id, wikiId: 'default', to: '999999999' });
    expect(ahead.status, ahead.text).toBe(409);
    expect(ahead.body.code).toBe('cursor_ahead');
    const otherSpace = await tool(t, 'wiki_next_cursor_window', { companyId: companyA.id, wikiId: 'default', spaceSlug: 'research' });
    expect(otherSpace.status, otherSpace.text).toBe(400);
    expect(otherSpace.body.code).toBe('default_space_only');
    const badTo = await tool(t, 'wiki_advance_cursor', { companyId: companyA.id, wikiId: 'default', to: '-1' });
    expect(badTo.status, badTo.text).toBe(400);
    expect((await operationsOf(companyA.id)).filter((op) => op.kind === 'advance_cursor')).toHaveLength(1);
    expect((await ok(await t.api.get(`${base}/ingestion?companyId=${companyA.id}`))).cursor.position).toBe(first.to);
    // Another company's agent cannot read A's window.
    const cross = await tool(t, 'wiki_next_cursor_window', { companyId: companyA.id, wikiId: 'default' }, keyB);
    expect(cross.status, cross.text).toBe(403);
  });

  it('hands one run at most 120,000 characters in all; an agent reads only from a run the kernel vouches for', async () => {
    // Windows read again and again without moving the cursor: each counts against the run.
    for (let n = 0; n < 6; n += 1) await createIssue(companyA.id, { title: `More ${n}`, description: `more${n} `.repeat(1_400) });
    await eventsSettled(t);
    const reader = await createAgent(t.api, companyA.id, { name: 'Cursor reader' });
    const openRun = async () => (await t.kernel.services.db.transaction((tx) => t.kernel.services.runs.open(tx, { agentId: reader.id, companyId: companyA.id }))).token;
    const agentWindow = (token: string, headers?: Record<string, string>) =>
      t.api.as(token).post('/api/plugins/tools/execute', { tool: 'llm-wiki.wiki_next_cursor_window', input: { companyId: companyA.id, wikiId: 'default' } }, { headers });
    const runToken = await openRun();
    let total = 0;
    let last: any;
    for (let n = 0; n < 5; n += 1) {
      last = (await ok(await agentWindow(runToken))).result;
      total += last.characters;
      expect(last.characters).toBeLessThanOrEqual(60_000);
      expect(last.run.characters).toBe(total);
    }
    expect(total).toBeLessThanOrEqual(120_000);
    expect(total).toBeGreaterThan(100_000);
    expect(last).toMatchObject({ characters: 0, sources: [] });
    expect(last.run.exhausted || 120_000 - total < 12_000).toBe(true);
    // Naming a run of one's own making does not start afresh: the kernel refuses a run id the
    // ledger does not hold as the agent's live run, and an agent key reads no window at all, even
    // naming a live run of its agent (the key has not proved to be that run's process).
    const readerKey = await createAgentKey(t.api, reader.id);
    const madeUp = await agentWindow(readerKey, { 'x-service-run-id': randomUUID() });
    expect(madeUp.status, madeUp.text).toBe(403);
    expect(madeUp.body.code).toBe('run_not_owned');
    const liveRunId = (await t.kernel.services.db.transaction((tx) => t.kernel.services.runs.open(tx, { agentId: reader.id, companyId: companyA.id }))).run.runId;
    for (const headers of [{ 'x-service-run-id': liveRunId }, undefined]) {
      const refused = await agentWindow(readerKey, headers);
      expect(refused.status, refused.text).toBe(403);
      expect(refused.body.code).toBe('run_required');
    }
    // Another real run starts afresh.
    expect((await ok(await agentWindow(await openRun()))).result.characters).toBeGreaterThan(0);
    // A board user has the window cap only: a header names no run it is counted against.
    const byBoard = (await ok(await window(companyA.id, { 'x-service-run-id': liveRunId }))).result;
    expect(byBoard.run).toBeNull();
    expect(byBoard.characters).toBeGreaterThan(0);
  });
});

describe('companies', () => {
  it("writes a company's events into its own wiki only", async () => {
    const offInB = await createIssue(companyB.id, { title: 'B while off' });
    await eventsSettled(t);
    expect(existsSync(sourceFile(rootB, offInB.identifier))).toBe(false);
    await ok(await setIngestion(companyB.id, true));
    const inB = await createIssue(companyB.id, { title: 'Only for B', description: 'secret of B' });
    await ok(await t.api.post(`/api/issues/${inB.id}/comments`, { body: 'B comment' }), 201);
    await eventsSettled(t);
    expect(await readFile(sourceFile(rootB, inB.identifier), 'utf8')).toContain('secret of B');
    expect(existsSync(sourceFile(rootA, inB.identifier))).toBe(false);
    expect((await ingested(companyA.id)).some((op) => op.details.issueId === inB.id)).toBe(false);
    expect((await ingested(companyB.id)).every((op) => op.details.issueId === inB.id)).toBe(true);
    const windowB = (await ok(await window(companyB.id))).result;
    expect(windowB.sources.map((s: any) => s.issueId)).toEqual([inB.id]);
    const listB = (await ok(await tool(t, 'wiki_list_sources', { companyId: companyB.id, wikiId: 'default' }, keyB))).result.sources;
    expect(listB).toEqual([{ path: `issues/${inB.identifier}.md` }]);
    // B turning it off stops B, and leaves A on.
    await ok(await setIngestion(companyB.id, false));
    const afterOff = await createIssue(companyB.id, { title: 'B after off' });
    await eventsSettled(t);
    expect(existsSync(sourceFile(rootB, afterOff.identifier))).toBe(false);
    expect((await ok(await t.api.get(`${base}/ingestion?companyId=${companyA.id}`))).enabled).toBe(true);
  });

  it('skips the events of a company with ingestion on but no folder mounted, without retrying', async () => {
    await ok(await setIngestion(companyC.id, true));
    const issue = await createIssue(companyC.id, { title: 'No folder here' });
    await eventsSettled(t);
    const { rows } = await t.sql.query(
      `select d.state, d.attempts from keel_events.deliveries d join keel_events.outbox o on o.id = d.event_id
        where d.subscriber = 'llm-wiki' and o.entity_id = $1`, [issue.id]);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((row: any) => row.state === 'delivered' && row.attempts === 1)).toBe(true);
    expect(await ingested(companyC.id)).toEqual([]);
    expect((await ok(await t.api.get(`${base}/ingestion?companyId=${companyC.id}`))).sources).toBe(0);
  });
});
