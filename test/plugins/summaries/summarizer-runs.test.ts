import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestKernel } from '../../support/harness.ts';
import { startRuntimeWorld, waitFor } from '../runtime/helpers.ts';
import { configureSummarizer, enableSummaries, slotUrl, summarizerWorld, type SummarizerWorld } from './support.ts';

/**
 * Summaries end to end: a real summarizer process, woken by the generation task, reads its task,
 * takes it and writes the slot through the API with its run token.
 */
let t: TestKernel;
let company: any;
let project: any;
let summarizer: any;
let world: SummarizerWorld;

beforeAll(async () => {
  ({ t, company } = await startRuntimeWorld('Summaries end to end'));
  world = await summarizerWorld();
  await enableSummaries(t);
  project = (await t.api.post(`/api/companies/${company.id}/projects`, { name: 'Gemini' })).body;
  summarizer = await configureSummarizer(t.api, company.id, world);
}, 120_000);
afterAll(async () => { await t?.stop(); });

const slot = () => slotUrl(company.id, 'project', `?scopeId=${project.id}`);
const generate = async (expected = 202) => {
  const res = await t.api.post(slotUrl(company.id, 'project', `/generate?scopeId=${project.id}`));
  expect(res.status, res.text).toBe(expected);
  return res.body.generatingIssue;
};
const slotWhen = (accept: (body: any) => boolean, what: string) => waitFor(async () => {
  const body = (await t.api.get(slot())).body;
  return accept(body) ? body : undefined;
}, what, 60_000);

describe('a summarizer run', () => {
  it('writes the slot from its run of the task: revision 1, the slot idle and stamped, the task done', async () => {
    await world.setMode('write');
    const task = await generate();
    const answers = await world.answers(task.id);
    const write = answers.answers.find((a: any) => a.step === 'write');
    expect(write.status, JSON.stringify(write.body)).toBe(200);
    expect(write.body.revision).toMatchObject({ revisionNumber: 1, format: 'markdown', createdByAgentId: summarizer.id, createdByRunId: answers.runId, title: 'Status' });
    const body = await slotWhen((b) => b.slot.status === 'idle', 'the slot to settle');
    expect(body.slot).toMatchObject({ status: 'idle', failureReason: null, generatingIssueId: null, lastGeneratedByAgentId: summarizer.id, lastModel: 'test-model' });
    expect(body.slot.lastGeneratedAt).not.toBeNull();
    expect(body.document).toMatchObject({ body: `**Nothing to decide right now.** Summary from ${task.identifier}.`, latestRevisionNumber: 1, latestRevisionId: write.body.revision.id, format: 'markdown' });
    expect(body.generatingIssue).toBeNull();
    expect((await t.api.get(`/api/issues/${task.id}`)).body.status).toBe('done');
    const entries = (await t.sql.query("select entity_id, details, run_id from activity_log where action = 'summary_slot.write'")).rows;
    expect(entries).toHaveLength(1);
    expect(entries[0].details).toMatchObject({ scopeKind: 'project', scopeId: project.id, slotKey: 'header', documentId: body.document.id, revisionId: write.body.revision.id, revisionNumber: 1 });
  });

  it('is refused on a stale baseRevisionId with 409 and currentRevisionId, then writes on the current one', async () => {
    const before = (await t.api.get(slot())).body.document.latestRevisionId;
    await world.setMode('stale');
    const task = await generate();
    const { answers } = await world.answers(task.id);
    const [stale, fresh] = answers.filter((a: any) => a.step === 'write');
    expect(stale.status).toBe(409);
    expect(stale.body.error).toBe('Summary was updated by someone else');
    expect(stale.body.details.currentRevisionId).toBe(before);
    expect(fresh.status, JSON.stringify(fresh.body)).toBe(200);
    expect(fresh.body.revision.revisionNumber).toBe(2);
    const revisions = (await t.api.get(slotUrl(company.id, 'project', `/revisions?scopeId=${project.id}`))).body.revisions;
    expect(revisions.map((r: any) => r.revisionNumber)).toEqual([2, 1]);
  });

  it('that closes its task without writing leaves the slot failed with the reason', async () => {
    await world.setMode('finish');
    const task = await generate();
    const { answers } = await world.answers(task.id);
    expect(answers.find((a: any) => a.step === 'close').status).toBe(200);
    const body = await slotWhen((b) => b.slot.status === 'failed', 'the slot to fail');
    expect(body.slot.failureReason).toBe(`Summary generation task ${task.identifier} finished without writing a summary.`);
    expect(body.document.latestRevisionNumber).toBe(2);
  });

  it('whose task was superseded by a newer generation is refused with 409; the newer run writes', async () => {
    await world.setMode('superseded');
    const first = await generate();
    // The first run has taken its task; the board cancels it and asks again.
    await waitFor(async () => (await t.api.get(`/api/issues/${first.id}`)).body.checkoutRunId, 'the first run to take its task', 60_000);
    expect((await t.api.patch(`/api/issues/${first.id}`, { status: 'cancelled' })).status).toBe(200);
    await slotWhen((b) => b.slot.status === 'failed', 'the slot to fail');
    await world.setMode('write');
    const second = await generate();
    const { answers } = await world.answers(first.id);
    const refused = answers.find((a: any) => a.step === 'write');
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body.error).toBe('Summary generation was superseded by a newer task');
    const newer = await world.answers(second.id);
    expect(newer.answers.find((a: any) => a.step === 'write').status).toBe(200);
    const body = await slotWhen((b) => b.slot.status === 'idle', 'the newer write');
    expect(body.document.latestRevisionNumber).toBe(3);
  });

  it('lists up to 20 revisions, newest first', async () => {
    const { document } = (await t.api.get(slot())).body;
    // Older revisions of the same document (the summarizer's own writes made three so far).
    await t.sql.query(
      `insert into plugin_summaries.summary_revisions (company_id, document_id, revision_number, body)
       select $1, $2, n, 'older' from generate_series(-21, 0) n`, [company.id, document.id]);
    const { revisions } = (await t.api.get(slotUrl(company.id, 'project', `/revisions?scopeId=${project.id}`))).body;
    expect(revisions).toHaveLength(20);
    expect(revisions.slice(0, 4).map((r: any) => r.revisionNumber)).toEqual([3, 2, 1, 0]);
  });
});
