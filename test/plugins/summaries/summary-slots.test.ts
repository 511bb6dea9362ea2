import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, boardToken, createAgent, createAgentKey, createCompany, insertUser } from '../../support/fixtures.ts';
import type { TestKernel } from '../../support/harness.ts';
import { startRuntimeWorld, waitFor } from '../runtime/helpers.ts';
import { builtInSummarizer, builtInSummarizers, configureSummarizer, enableSummaries, slotUrl, summarizerWorld, type SummarizerWorld } from './support.ts';

let t: TestKernel;
let company: any;
let project: any;
let world: SummarizerWorld;

beforeAll(async () => {
  ({ t, company } = await startRuntimeWorld('Summaries'));
  world = await summarizerWorld();
  const res = await t.api.post(`/api/companies/${company.id}/projects`, { name: 'Apollo' });
  expect(res.status, res.text).toBe(201);
  project = res.body;
}, 120_000);
afterAll(async () => { await t?.stop(); });

const projectSlot = (rest = '') => slotUrl(company.id, 'project', rest) + (rest.includes('?') ? '' : `?scopeId=${project.id}`);
const activityOf = async (action: string) => (await t.sql.query('select details, entity_type, entity_id from activity_log where action = $1 order by created_at', [action])).rows;

describe('summary slots while enableSummaries is off', () => {
  it('answers 404 "Summaries are not enabled" on every route and writes nothing', async () => {
    const answers = [
      await t.api.get(projectSlot()),
      await t.api.get(slotUrl(company.id, 'project', `/revisions?scopeId=${project.id}`)),
      await t.api.post(slotUrl(company.id, 'project', `/generate?scopeId=${project.id}`), {}),
      await t.api.put(projectSlot(), { markdown: 'x' }),
      await t.api.get(`/api/companies/${company.id}/summarizer`),
    ];
    for (const res of answers) {
      expect(res.status, res.text).toBe(404);
      expect(res.body.error).toBe('Summaries are not enabled');
    }
    expect((await t.sql.query('select count(*)::int as n from plugin_summaries.summary_slots')).rows[0].n).toBe(0);
    // Nothing was made: not even the summarizer.
    expect(await builtInSummarizers(t.api, company.id)).toEqual([]);
  });
});

describe('summary slots', () => {
  let summarizer: any;
  let other: any;
  let generation: any;

  beforeAll(async () => { await enableSummaries(t); other = await createAgent(t.api, company.id, { name: 'Other' }); });

  it('answers a slot never touched with nulls, and no revisions', async () => {
    expect((await t.api.get(projectSlot())).body).toEqual({ slot: null, document: null, generatingIssue: null });
    expect((await t.api.get(slotUrl(company.id, 'workspaces_overview'))).body).toEqual({ slot: null, document: null, generatingIssue: null });
    const res = await t.api.get(slotUrl(company.id, 'project', `/revisions?scopeId=${project.id}`));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ slot: null, revisions: [] });
  });

  it('refuses a bad selector with 422 and its issues', async () => {
    const missing = await t.api.get(slotUrl(company.id, 'project'));
    expect(missing.status).toBe(422);
    expect(missing.body.error).toBe('Invalid summary slot selector');
    expect(missing.body.details.issues[0].path).toEqual(['scopeId']);
    const overview = await t.api.get(slotUrl(company.id, 'workspaces_overview', `?scopeId=${project.id}`));
    expect(overview.status).toBe(422);
    expect(overview.body.details.issues.map((i: any) => i.message)).toContain('workspaces_overview summary slots must not include scopeId');
    expect((await t.api.get(`/api/companies/${company.id}/summary-slots/goal/header?scopeId=${project.id}`)).status).toBe(422);
    expect((await t.api.get(`/api/companies/${company.id}/summary-slots/project/footer?scopeId=${project.id}`)).status).toBe(422);
    expect((await t.api.get(slotUrl(company.id, 'project', '?scopeId=not-a-uuid'))).status).toBe(422);
  });

  it('answers 404 "Summary target not found" for a project or workspace that is not the company\'s', async () => {
    const elsewhere = await createCompany(t.api);
    const foreign = (await t.api.post(`/api/companies/${elsewhere.id}/projects`, { name: 'Foreign' })).body;
    for (const url of [slotUrl(company.id, 'project', `?scopeId=${foreign.id}`), slotUrl(company.id, 'project_workspace', `?scopeId=${foreign.id}`)]) {
      const res = await t.api.get(url);
      expect(res.status, res.text).toBe(404);
      expect(res.body.error).toBe('Summary target not found');
    }
  });

  it('answers 403 to an agent key of another company', async () => {
    const elsewhere = await createCompany(t.api);
    const key = await createAgentKey(t.api, (await createAgent(t.api, elsewhere.id)).id);
    expect((await t.api.as(key).get(projectSlot())).status).toBe(403);
    expect((await t.api.as(key).post(slotUrl(company.id, 'project', `/generate?scopeId=${project.id}`), {})).status).toBe(403);
  });

  it('lets only board operators with tasks:assign generate', async () => {
    const key = await createAgentKey(t.api, other.id);
    const byAgent = await t.api.as(key).post(slotUrl(company.id, 'project', `/generate?scopeId=${project.id}`), {});
    expect(byAgent.status).toBe(403);
    expect(byAgent.body.error).toBe('Only board operators can generate summaries.');
    const user = await insertUser(t);
    await addMember(t, company.id, user, 'member');
    const byMember = await t.api.as(await boardToken(t, user)).post(slotUrl(company.id, 'project', `/generate?scopeId=${project.id}`), {});
    expect(byMember.status, byMember.text).toBe(403);
    expect(byMember.body.error).toBe('Missing permission: tasks:assign');
  });

  it('answers 422 summarizer_not_configured, with its status, until a summarizer is ready; the first generate makes it', async () => {
    // Enabling summaries made no agent: the company has none until it asks for a summary.
    expect(await builtInSummarizers(t.api, company.id)).toEqual([]);
    expect((await t.api.get(`/api/companies/${company.id}/summarizer`)).body).toEqual({ agentId: null, status: 'not_provisioned' });
    const res = await t.api.post(slotUrl(company.id, 'project', '/generate'), { scopeId: project.id });
    expect(res.status, res.text).toBe(422);
    expect(res.body.error).toBe('Summarizer built-in agent is not configured');
    expect(res.body.details).toEqual({ code: 'summarizer_not_configured', status: 'needs_setup' });
    expect((await t.api.post(slotUrl(company.id, 'project', '/generate'), { scopeId: project.id, extra: 1 })).status).toBe(400);
    expect((await t.sql.query('select count(*)::int as n from plugin_summaries.summary_slots')).rows[0].n).toBe(0);
    // The refused generate still made the summarizer (committed on its own), once whatever the number of asks.
    const made = await builtInSummarizer(t.api, company.id);
    expect(made).toMatchObject({ name: 'Summarizer', role: 'summarizer', status: 'paused', pauseReason: 'managed', managedBy: { plugin: 'summaries', key: 'summarizer' } });
    // Resuming is not approving: it waits for the board to configure it.
    const early = await t.api.post(`/api/agents/${made.id}/resume`, {});
    expect([early.status, early.body.code]).toEqual([409, 'invalid_status_transition']);
    await Promise.all([1, 2, 3].map(() => t.api.post(slotUrl(company.id, 'workspaces_overview', '/generate'), {})));
    expect((await builtInSummarizers(t.api, company.id)).map((agent) => agent.id)).toEqual([made.id]);
    expect((await t.api.get(`/api/companies/${company.id}/summarizer`)).body).toEqual({ agentId: made.id, status: 'needs_setup' });
    // Other companies still have none.
    const bystander = await createCompany(t.api, { name: 'No summaries here' });
    expect(await builtInSummarizers(t.api, bystander.id)).toEqual([]);
  });

  it('generates: a hidden task for the summarizer with the scope\'s snapshot, 202; a second request joins it, 200', async () => {
    summarizer = await configureSummarizer(t.api, company.id, world);
    const blocked = (await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Stuck on review', projectId: project.id, status: 'blocked' })).body;
    const res = await t.api.post(slotUrl(company.id, 'project', '/generate'), { scopeId: project.id });
    expect(res.status, res.text).toBe(202);
    generation = res.body.generatingIssue;
    expect(res.body.alreadyGenerating).toBe(false);
    expect(res.body.slot).toMatchObject({ scopeKind: 'project', scopeId: project.id, slotKey: 'header', status: 'generating', generatingIssueId: generation.id, documentId: null, failureReason: null });
    expect(generation).toMatchObject({ status: 'todo', assigneeAgentId: summarizer.id });
    expect(Object.keys(generation).sort()).toEqual(['assigneeAgentId', 'id', 'identifier', 'status', 'title']);

    const issue = (await t.api.get(`/api/issues/${generation.id}`)).body;
    expect(issue.hiddenAt).not.toBeNull();
    expect(issue.description).toContain('### Blocked');
    expect(issue.description).toContain(`${blocked.identifier}: Stuck on review`);
    expect(issue.description).toContain('### Recently done');
    const listed = (await t.api.get(`/api/companies/${company.id}/issues`)).body;
    expect((listed.items ?? listed).map((i: any) => i.id)).not.toContain(generation.id);

    const again = await t.api.post(slotUrl(company.id, 'project', `/generate?scopeId=${project.id}`));
    expect(again.status, again.text).toBe(200);
    expect(again.body.alreadyGenerating).toBe(true);
    expect(again.body.generatingIssue.id).toBe(generation.id);
    const entries = await activityOf('summary_slot.generate_requested');
    expect(entries.map((e: any) => e.details)).toMatchObject([
      { scopeKind: 'project', scopeId: project.id, slotKey: 'header', generatingIssueId: generation.id, alreadyGenerating: false },
      { scopeKind: 'project', scopeId: project.id, slotKey: 'header', generatingIssueId: generation.id, alreadyGenerating: true },
    ]);
    expect(entries[0].entity_type).toBe('summary_slot');
    const read = (await t.api.get(projectSlot())).body;
    expect(read.generatingIssue).toEqual(generation);
  });

  it('wakes the summarizer on its task', async () => {
    await waitFor(async () => {
      const runs = (await t.api.get(`/api/companies/${company.id}/heartbeat-runs`)).body;
      return runs.runs.some((run: any) => run.agentId === summarizer.id && (run.issueId ?? run.contextSnapshot?.issueId) === generation.id);
    }, 'a run on the generation task');
  });

  it('refuses writes that break the rules, in order, and writes nothing', async () => {
    const put = (token: string, body: Record<string, unknown>) => t.api.as(token).put(projectSlot(), { markdown: 'Summary', ...body });
    const otherKey = await createAgentKey(t.api, other.id);
    const summarizerKey = await createAgentKey(t.api, summarizer.id);
    const expectRefused = async (res: any, status: number, error: string) => {
      expect(res.status, res.text).toBe(status);
      expect(res.body.error).toBe(error);
    };
    await expectRefused(await put(otherKey, { generationIssueId: generation.id }), 403, 'Only the Summarizer built-in agent may write summaries');
    await expectRefused(await t.api.put(projectSlot(), { markdown: 'x', generationIssueId: generation.id }), 403, 'Only the Summarizer built-in agent may write summaries');
    await expectRefused(await put(summarizerKey, {}), 403, 'Summary writes must identify the active generation task');
    await expectRefused(await put(summarizerKey, { generationIssueId: '00000000-0000-4000-8000-000000000001' }), 403, 'Summary write does not match the active generation task');
    await expectRefused(await put(summarizerKey, { generationIssueId: generation.id }), 403, 'Summary write must run from the linked generation task');
    // Reassigned to another agent: the summarizer's write is refused before its run is looked at.
    expect((await t.api.patch(`/api/issues/${generation.id}`, { assigneeAgentId: other.id })).status).toBe(200);
    await expectRefused(await put(summarizerKey, { generationIssueId: generation.id }), 403, 'Generation task is not assigned to this agent');
    expect((await put(summarizerKey, { generationIssueId: generation.id, unknown: true })).status).toBe(400);
    expect((await put(summarizerKey, { generationIssueId: generation.id, markdown: '' })).status).toBe(400);
    expect((await put(summarizerKey, { generationIssueId: generation.id, title: 'x'.repeat(201) })).status).toBe(400);
    expect((await put(summarizerKey, { generationIssueId: generation.id, changeSummary: 'x'.repeat(1001) })).status).toBe(400);
    expect((await put(summarizerKey, { generationIssueId: generation.id, model: 'x'.repeat(201) })).status).toBe(400);
    expect((await t.sql.query('select count(*)::int as n from plugin_summaries.summary_revisions')).rows[0].n).toBe(0);
    expect(await activityOf('summary_slot.write')).toEqual([]);
  });

  it('marks the slot failed when its task is cancelled without a summary, and a new request starts another task', async () => {
    expect((await t.api.patch(`/api/issues/${generation.id}`, { status: 'cancelled' })).status).toBe(200);
    const failed = await waitFor(async () => {
      const { slot } = (await t.api.get(projectSlot())).body;
      return slot.status === 'failed' ? slot : undefined;
    }, 'the slot to fail');
    expect(failed.failureReason).toBe(`Summary generation task ${generation.identifier} was cancelled before writing a summary.`);
    expect(failed.generatingIssueId).toBeNull();
    const res = await t.api.post(slotUrl(company.id, 'project', '/generate'), { scopeId: project.id });
    expect(res.status, res.text).toBe(202);
    expect(res.body.generatingIssue.id).not.toBe(generation.id);
    expect(res.body.slot).toMatchObject({ status: 'generating', failureReason: null });
  });

  it('answers "Linked generation task not found" when the task is gone', async () => {
    const res = await t.api.post(slotUrl(company.id, 'workspaces_overview', '/generate'));
    expect(res.status, res.text).toBe(202);
    const task = res.body.generatingIssue;
    await t.sql.query('delete from plugin_work.issues where id = $1', [task.id]);
    const write = await t.api.as(await createAgentKey(t.api, summarizer.id)).put(slotUrl(company.id, 'workspaces_overview'), { markdown: 'x', generationIssueId: task.id });
    expect(write.status, write.text).toBe(403);
    expect(write.body.error).toBe('Linked generation task not found');
    expect((await t.api.get(slotUrl(company.id, 'workspaces_overview'))).body.generatingIssue).toBeNull();
  });
});
