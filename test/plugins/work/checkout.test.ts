import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type Api, type TestKernel } from '../../support/harness.ts';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { eventsSettled } from '../../support/events.ts';

/** Checkout and release of issues by agents' runs, and comments that tell whom to wake. */
let t: TestKernel;
let company: any;
let agent: any;
let rival: any;

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  company = await createCompany(t.api, { name: 'Checkout Co' });
  agent = await createAgent(t.api, company.id, { name: 'Worker One' });
  rival = await createAgent(t.api, company.id, { name: 'Worker Two' });
});
afterAll(async () => { await t?.stop(); });

/** An API client holding a live run token of the agent (what the runtime hands a running agent). */
async function inRun(agentId: string): Promise<{ api: Api; runId: string }> {
  const { runs, db } = t.kernel.services;
  const opened = await db.transaction((tx) => runs.open(tx, { agentId, companyId: company.id, invocationSource: 'on_demand' }));
  return { api: t.api.as(opened.token), runId: opened.run.runId };
}

async function createIssue(body: Record<string, unknown>) {
  const res = await t.api.post(`/api/companies/${company.id}/issues`, body);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

const checkout = (api: Api, issueId: string, body: Record<string, unknown>) => api.post(`/api/issues/${issueId}/checkout`, body);

async function outbox(name: string, issueId: string): Promise<any[]> {
  const { rows } = await t.sql.query('select payload from keel_events.outbox where name = $1 and entity_id = $2 order by seq', [name, issueId]);
  return rows.map((row: any) => row.payload);
}

describe('checkout', () => {
  it('takes the issue for the run: assignee, both run locks, in_progress; the same run again changes nothing', async () => {
    const issue = await createIssue({ title: 'Take me' });
    const { api, runId } = await inRun(agent.id);
    const res = await checkout(api, issue.id, { agentId: agent.id, expectedStatuses: ['backlog', 'todo'] });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: 'in_progress', assigneeAgentId: agent.id, checkoutRunId: runId, executionRunId: runId, startedAt: expect.any(String) });
    const again = await checkout(api, issue.identifier, { agentId: agent.id });
    expect([again.status, again.body.updatedAt]).toEqual([200, res.body.updatedAt]);
    expect(await outbox('work.issue.assigned', issue.id)).toEqual([expect.objectContaining({ agentId: agent.id, previousAgentId: null, status: 'in_progress' })]);
    const { rows } = await t.sql.query("select actor_type, actor_id, run_id, details from activity_log where action = 'issue.checked_out' and entity_id = $1", [issue.id]);
    expect(rows).toEqual([expect.objectContaining({ actor_type: 'agent', run_id: runId, details: expect.objectContaining({ agentId: agent.id, runId }) })]);
  });

  it('answers another run 409 naming the holder, and changes nothing', async () => {
    const issue = await createIssue({ title: 'Contested' });
    const first = await inRun(agent.id);
    expect((await checkout(first.api, issue.id, { agentId: agent.id })).status).toBe(200);
    const second = await inRun(rival.id);
    const res = await checkout(second.api, issue.id, { agentId: rival.id });
    expect([res.status, res.body.code]).toEqual([409, 'checkout_conflict']);
    expect(res.body.details).toEqual({ checkoutRunId: first.runId, assigneeAgentId: agent.id });
    expect((await t.api.get(`/api/issues/${issue.id}`)).body).toMatchObject({ assigneeAgentId: agent.id, checkoutRunId: first.runId });
  });

  it('adopts a lock left by a run that has finished', async () => {
    const issue = await createIssue({ title: 'Left behind' });
    const first = await inRun(agent.id);
    expect((await checkout(first.api, issue.id, { agentId: agent.id })).status).toBe(200);
    const { runs, db } = t.kernel.services;
    await db.transaction((tx) => runs.close(tx, first.runId, { status: 'failed', reason: 'the process died' }));
    const second = await inRun(rival.id);
    const res = await checkout(second.api, issue.id, { agentId: rival.id });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ assigneeAgentId: rival.id, checkoutRunId: second.runId, executionRunId: second.runId });
  });

  it('releases what a run held when the run ends, however it ends, keeping the assignee', async () => {
    const issue = await createIssue({ title: 'Run ends' });
    const held = await inRun(agent.id);
    expect((await checkout(held.api, issue.id, { agentId: agent.id })).status).toBe(200);
    const { runs, db } = t.kernel.services;
    await db.transaction((tx) => runs.close(tx, held.runId, { status: 'timed_out', reason: 'deadline' }));
    await eventsSettled(t);
    expect((await t.api.get(`/api/issues/${issue.id}`)).body).toMatchObject({ status: 'todo', assigneeAgentId: agent.id, checkoutRunId: null, executionRunId: null });
    const { rows } = await t.sql.query("select details from activity_log where action = 'issue.checkout_released' and entity_id = $1", [issue.id]);
    expect(rows).toEqual([{ details: expect.objectContaining({ reason: 'run_closed', runId: held.runId, runStatus: 'timed_out', previousStatus: 'in_progress' }) }]);
  });

  it('lets exactly one of two racing runs win', async () => {
    const issue = await createIssue({ title: 'Raced' });
    const [a, b] = await Promise.all([inRun(agent.id), inRun(rival.id)]);
    const answers = await Promise.all([checkout(a.api, issue.id, { agentId: agent.id }), checkout(b.api, issue.id, { agentId: rival.id })]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409]);
    const winner = answers.find((r) => r.status === 200)!.body;
    expect((await t.api.get(`/api/issues/${issue.id}`)).body.checkoutRunId).toBe(winner.checkoutRunId);
  });

  it('refuses checkout as another agent, without a run, by the board, or from an unexpected status', async () => {
    const issue = await createIssue({ title: 'Guarded', status: 'in_review' });
    const { api } = await inRun(agent.id);
    const asOther = await checkout(api, issue.id, { agentId: rival.id });
    expect([asOther.status, asOther.body.code]).toEqual([403, 'checkout_self_only']);
    const keyOnly = t.api.as(await createAgentKey(t.api, agent.id));
    const noRun = await checkout(keyOnly, issue.id, { agentId: agent.id });
    expect([noRun.status, noRun.body.code]).toEqual([409, 'run_required']);
    const board = await checkout(t.api, issue.id, { agentId: agent.id });
    expect(board.status).toBe(403);
    const unexpected = await checkout(api, issue.id, { agentId: agent.id, expectedStatuses: ['todo'] });
    expect([unexpected.status, unexpected.body.code, unexpected.body.details.status]).toEqual([409, 'unexpected_status', 'in_review']);
    expect((await t.api.get(`/api/issues/${issue.id}`)).body).toMatchObject({ status: 'in_review', checkoutRunId: null, assigneeAgentId: null });
  });

  it('answers a blocked issue 422 listing the unresolved blockers, and takes it once they are done', async () => {
    const blocker = await createIssue({ title: 'First this' });
    const done = await createIssue({ title: 'Already done', status: 'done' });
    const issue = await createIssue({ title: 'Then this', blockedByIssueIds: [blocker.id, done.id] });
    const { api } = await inRun(agent.id);
    const res = await checkout(api, issue.id, { agentId: agent.id });
    expect([res.status, res.body.code]).toEqual([422, 'issue_blocked']);
    expect(res.body.details).toEqual({ unresolvedBlockerIssueIds: [blocker.id] });
    await t.api.patch(`/api/issues/${blocker.id}`, { status: 'done' });
    expect((await checkout(api, issue.id, { agentId: agent.id })).status).toBe(200);
  });
});

describe('release', () => {
  it('returns the issue to todo with the assignee and both locks cleared, by the holder', async () => {
    const issue = await createIssue({ title: 'Let go' });
    const holder = await inRun(agent.id);
    await checkout(holder.api, issue.id, { agentId: agent.id });
    const other = await inRun(rival.id);
    const refused = await other.api.post(`/api/issues/${issue.id}/release`, {});
    expect([refused.status, refused.body.code]).toEqual([403, 'checkout_not_held']);
    const res = await holder.api.post(`/api/issues/${issue.id}/release`, {});
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: 'todo', assigneeAgentId: null, checkoutRunId: null, executionRunId: null });
    // Free again: another run takes it.
    expect((await checkout(other.api, issue.id, { agentId: rival.id })).status).toBe(200);
  });

  it('lets a board user force a release, recorded as forced; a free issue answers 409', async () => {
    const issue = await createIssue({ title: 'Stuck' });
    await checkout((await inRun(agent.id)).api, issue.id, { agentId: agent.id });
    const res = await t.api.post(`/api/issues/${issue.id}/release`, {});
    expect([res.status, res.body.status]).toEqual([200, 'todo']);
    const { rows } = await t.sql.query("select details from activity_log where action = 'issue.released' and entity_id = $1", [issue.id]);
    expect(rows[0].details).toMatchObject({ forced: true, previousAssigneeAgentId: agent.id });
    const again = await t.api.post(`/api/issues/${issue.id}/release`, {});
    expect([again.status, again.body.code]).toEqual([409, 'not_checked_out']);
  });
});

describe('comments', () => {
  it('stores comments oldest first and tells whom to wake: mentioned agents, the answered agent, the assignee', async () => {
    const issue = await createIssue({ title: 'Discuss', assigneeAgentId: agent.id });
    const byBoard = await t.api.post(`/api/issues/${issue.id}/comments`, { body: `Please have a look, @${rival.urlKey}` });
    expect(byBoard.status, byBoard.text).toBe(201);
    expect(byBoard.body).toMatchObject({ authorType: 'user', issueId: issue.id, body: `Please have a look, @${rival.urlKey}` });
    const { api } = await inRun(rival.id);
    const reply = await api.post(`/api/issues/${issue.identifier}/comments`, { body: 'On it', parentCommentId: byBoard.body.id });
    expect(reply.status, reply.text).toBe(201);
    expect(reply.body).toMatchObject({ authorType: 'agent', authorAgentId: rival.id, runId: expect.any(String) });
    const listed = await t.api.get(`/api/issues/${issue.id}/comments`);
    expect(listed.body.map((c: any) => c.id)).toEqual([byBoard.body.id, reply.body.id]);
    const events = await outbox('work.issue.comment_added', issue.id);
    expect(events[0]).toMatchObject({ commentId: byBoard.body.id, mentionedAgentIds: [rival.id], wakeAgentIds: [agent.id, rival.id].sort() });
    // An agent's own comment wakes nobody for itself; the board's comment it answers has no agent author.
    expect(events[1]).toMatchObject({ commentId: reply.body.id, authorAgentId: rival.id, wakeAgentIds: [] });
  });

  it('refuses an empty body and a parent comment of another issue', async () => {
    const a = await createIssue({ title: 'A' });
    const b = await createIssue({ title: 'B' });
    const parent = (await t.api.post(`/api/issues/${a.id}/comments`, { body: 'on A' })).body;
    const empty = await t.api.post(`/api/issues/${b.id}/comments`, { body: '' });
    expect([empty.status, empty.body.code]).toEqual([400, 'validation_failed']);
    const crossed = await t.api.post(`/api/issues/${b.id}/comments`, { body: 'x', parentCommentId: parent.id });
    expect([crossed.status, crossed.body.code]).toEqual([422, 'comment_not_found']);
    expect((await t.api.get(`/api/issues/${b.id}/comments`)).body).toEqual([]);
  });
});
