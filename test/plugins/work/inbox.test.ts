import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type Api, type TestKernel } from '../../support/harness.ts';
import { addMember, boardToken, createAgent, createAgentKey, createCompany, insertUser } from '../../support/fixtures.ts';
import { eventsSettled } from '../../support/events.ts';

/**
 * Inboxes, issue activity and runs, the issues of a run, and what a terminated agent's issues
 * become, through HTTP against a real kernel and worker.
 */
let t: TestKernel;
let company: any;
let agent: any;
let rival: any;
const ITEM_KEYS = ['id', 'identifier', 'title', 'status', 'priority', 'projectId', 'goalId', 'parentId', 'updatedAt', 'activeRun',
  'dependencyReady', 'unresolvedBlockerCount', 'unresolvedBlockerIssueIds'].sort();
const RUN_KEYS = ['runId', 'status', 'agentId', 'adapterType', 'startedAt', 'finishedAt', 'createdAt', 'invocationSource', 'usageJson', 'resultJson', 'logBytes'].sort();

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  company = await createCompany(t.api, { name: 'Inbox Co' });
  agent = await createAgent(t.api, company.id, { name: 'Inbox Worker' });
  rival = await createAgent(t.api, company.id, { name: 'Inbox Rival' });
});
afterAll(async () => { await t?.stop(); });

/** An API client holding a live run token of the agent (what the runtime hands a running agent). */
async function inRun(agentId: string, companyId = company.id): Promise<{ api: Api; runId: string }> {
  const { runs, db } = t.kernel.services;
  const opened = await db.transaction((tx) => runs.open(tx, { agentId, companyId, invocationSource: 'on_demand' }));
  return { api: t.api.as(opened.token), runId: opened.run.runId };
}

/** Closes the run as the runtime ends one it ran: the ledger closes it, the runtime's own row keeps its result. */
async function closeRun(runId: string): Promise<void> {
  const { runs, db } = t.kernel.services;
  const closed = await db.transaction((tx) => runs.close(tx, runId, { status: 'succeeded' }));
  const { rows: [wakeup] } = await t.sql.query(
    `insert into plugin_runtime.wakeups (company_id, agent_id, source, trigger_detail, status, run_id, requested_by_type, requested_by_id)
     values ($1, $2, 'on_demand', 'manual', 'completed', $3, 'system', 'test') returning id`, [closed.companyId, closed.agentId, runId]);
  await t.sql.query(
    `insert into plugin_runtime.runs (id, company_id, agent_id, wakeup_id, status, invocation_source, trigger_detail, task_key, adapter_type, result_json, finished_at)
     values ($1, $2, $3, $4, 'succeeded', 'on_demand', 'manual', 'test', 'process', $5::jsonb, now())`,
    [runId, closed.companyId, closed.agentId, wakeup!.id, JSON.stringify({ ok: true })]);
}

async function createIssue(body: Record<string, unknown>, companyId = company.id, api = t.api) {
  const res = await api.post(`/api/companies/${companyId}/issues`, body);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

/** No route hides issues yet: a hidden issue is one whose hidden_at is set. */
const hide = (issueId: string) => t.sql.query('update plugin_work.issues set hidden_at = now() where id = $1', [issueId]);

describe('GET /api/agents/me/inbox-lite', () => {
  it("answers the agent's todo, in_progress and blocked issues as compact items, by priority then most recently updated", async () => {
    const fresh = await createCompany(t.api);
    const me = await createAgent(t.api, fresh.id);
    const other = await createAgent(t.api, fresh.id);
    const mine = (fields: Record<string, unknown>) => createIssue({ assigneeAgentId: me.id, ...fields }, fresh.id);
    const lowOld = await mine({ title: 'Low old', priority: 'low' });
    const blocker = await createIssue({ title: 'Blocker' }, fresh.id);
    const done = await createIssue({ title: 'Done blocker', status: 'done' }, fresh.id);
    const blocked = await mine({ title: 'Waiting', status: 'blocked', priority: 'high', blockedByIssueIds: [blocker.id, done.id] });
    const critical = await mine({ title: 'Fire', priority: 'critical' });
    const lowNew = await mine({ title: 'Low new', priority: 'low' });
    const working = await mine({ title: 'Working', priority: 'high' });
    for (const status of ['backlog', 'in_review', 'done', 'cancelled']) await mine({ title: `Not in inbox: ${status}`, status });
    await createIssue({ title: 'Someone else', assigneeAgentId: other.id }, fresh.id);
    await hide((await mine({ title: 'Hidden' })).id);
    const run = await inRun(me.id, fresh.id);
    expect((await run.api.post(`/api/issues/${working.id}/checkout`, { agentId: me.id })).status).toBe(200);

    const res = await run.api.get('/api/agents/me/inbox-lite');
    expect(res.status, res.text).toBe(200);
    // high: the checkout made Working the most recently updated.
    expect(res.body.map((item: any) => item.title)).toEqual(['Fire', 'Working', 'Waiting', 'Low new', 'Low old']);
    for (const item of res.body) expect(Object.keys(item).sort()).toEqual(ITEM_KEYS);
    const byId = new Map(res.body.map((item: any) => [item.id, item]));
    expect(byId.get(critical.id)).toEqual({
      id: critical.id, identifier: critical.identifier, title: 'Fire', status: 'todo', priority: 'critical', projectId: null, goalId: null,
      parentId: null, updatedAt: critical.updatedAt, activeRun: null, dependencyReady: true, unresolvedBlockerCount: 0, unresolvedBlockerIssueIds: [],
    });
    expect(byId.get(blocked.id)).toMatchObject({ status: 'blocked', dependencyReady: false, unresolvedBlockerCount: 1, unresolvedBlockerIssueIds: [blocker.id] });
    expect(byId.get(working.id)).toMatchObject({ status: 'in_progress', activeRun: { runId: run.runId, status: 'running', agentId: me.id, startedAt: expect.any(String) } });
    expect([lowNew.id, lowOld.id].every((id) => byId.has(id))).toBe(true);

    // A run that ends releases what it held (run.closed): the issue is back in todo for the agent, with no active run.
    await closeRun(run.runId);
    await eventsSettled(t);
    const key = t.api.as(await createAgentKey(t.api, me.id));
    const after = await key.get('/api/agents/me/inbox-lite');
    expect(after.body.find((item: any) => item.id === working.id)).toMatchObject({ status: 'todo', activeRun: null });
  });

  it('is for agents only, of their own company, and takes no query parameters', async () => {
    const board = await t.api.get('/api/agents/me/inbox-lite');
    expect([board.status, board.body.code]).toEqual([403, 'agent_required']);
    const other = await createCompany(t.api);
    const outsider = t.api.as(await createAgentKey(t.api, (await createAgent(t.api, other.id)).id));
    await createIssue({ title: 'Not yours', assigneeAgentId: agent.id });
    expect((await outsider.get('/api/agents/me/inbox-lite')).body).toEqual([]);
    const extra = await outsider.get('/api/agents/me/inbox-lite?all=true');
    expect([extra.status, extra.body.code]).toEqual([400, 'validation_failed']);
  });
});

describe('GET /api/agents/me/inbox/mine', () => {
  it('answers the issues a board user created, is assigned to or commented on, filtered by status, newest first', async () => {
    const fresh = await createCompany(t.api);
    const me = await createAgent(t.api, fresh.id);
    const userId = await insertUser(t);
    await addMember(t, fresh.id, userId);
    const user = t.api.as(await boardToken(t, userId));
    const created = await createIssue({ title: 'Created by the user' }, fresh.id, user);
    const assigned = await createIssue({ title: 'Assigned to the user', assigneeUserId: userId }, fresh.id);
    const commented = await createIssue({ title: 'Commented on', status: 'done' }, fresh.id);
    expect((await user.post(`/api/issues/${commented.id}/comments`, { body: 'Looks good' })).status).toBe(201);
    const cancelled = await createIssue({ title: 'Cancelled', status: 'cancelled' }, fresh.id, user);
    await createIssue({ title: 'Untouched' }, fresh.id);
    await hide((await createIssue({ title: 'Hidden' }, fresh.id, user)).id);
    const api = t.api.as(await createAgentKey(t.api, me.id));

    const res = await api.get(`/api/agents/me/inbox/mine?userId=${userId}`);
    expect(res.status, res.text).toBe(200);
    // A comment leaves the issue's updatedAt as it was: the last created is the most recently updated here.
    expect(res.body.map((item: any) => item.id)).toEqual([commented.id, assigned.id, created.id]);
    for (const item of res.body) expect(Object.keys(item).sort()).toEqual(ITEM_KEYS);
    const filtered = await api.get(`/api/agents/me/inbox/mine?userId=${userId}&status=backlog,todo,cancelled`);
    expect(filtered.body.map((item: any) => item.id)).toEqual([cancelled.id, assigned.id, created.id]);
    expect((await api.get(`/api/agents/me/inbox/mine?userId=${userId}&limit=1`)).body.map((item: any) => item.id)).toEqual([commented.id]);
    expect((await api.get('/api/agents/me/inbox/mine?userId=nobody')).body).toEqual([]);
    // An agent of another company sees none of it.
    const elsewhere = t.api.as(await createAgentKey(t.api, agent.id));
    expect((await elsewhere.get(`/api/agents/me/inbox/mine?userId=${userId}`)).body).toEqual([]);
  });

  it('needs userId, a known status list and a limit within 1-500, and an agent caller', async () => {
    const api = t.api.as(await createAgentKey(t.api, agent.id));
    for (const query of ['', '?userId=', '?userId=u&status=open', '?userId=u&status=todo,', '?userId=u&limit=0', '?userId=u&limit=501']) {
      const res = await api.get(`/api/agents/me/inbox/mine${query}`);
      expect([res.status, res.body.code], query).toEqual([400, 'validation_failed']);
    }
    const board = await t.api.get('/api/agents/me/inbox/mine?userId=u');
    expect([board.status, board.body.code]).toEqual([403, 'agent_required']);
  });
});

describe('GET /api/issues/{issueId}/activity', () => {
  it("answers the issue's entries newest first, in the kernel's shape, by id or identifier, with a limit", async () => {
    const issue = await createIssue({ title: 'Tracked' });
    await t.api.patch(`/api/issues/${issue.id}`, { priority: 'high' });
    await t.api.post(`/api/issues/${issue.id}/comments`, { body: 'Noted' });
    const res = await t.api.get(`/api/issues/${issue.identifier}/activity`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.map((entry: any) => entry.action)).toEqual(['issue.comment_added', 'issue.updated', 'issue.created']);
    expect(Object.keys(res.body[0]).sort()).toEqual(['action', 'actorId', 'actorType', 'agentId', 'companyId', 'createdAt', 'details', 'entityId', 'entityType', 'id', 'runId']);
    expect(res.body[2]).toMatchObject({ companyId: company.id, actorType: 'user', entityType: 'issue', entityId: issue.id, details: { identifier: issue.identifier } });
    expect((await t.api.get(`/api/issues/${issue.id}/activity?limit=1`)).body.map((entry: any) => entry.action)).toEqual(['issue.comment_added']);
    const bad = await t.api.get(`/api/issues/${issue.id}/activity?limit=1001`);
    expect([bad.status, bad.body.code]).toEqual([400, 'validation_failed']);
  });

  it('answers 404 for an unknown issue and 403 to another company, and still serves a hidden issue', async () => {
    const issue = await createIssue({ title: 'Quiet' });
    const unknown = await t.api.get(`/api/issues/${randomUUID()}/activity`);
    expect([unknown.status, unknown.body.error]).toEqual([404, 'Issue not found']);
    const outsider = t.api.as(await createAgentKey(t.api, (await createAgent(t.api, (await createCompany(t.api)).id)).id));
    for (const path of [`/api/issues/${issue.id}/activity`, `/api/issues/${issue.id}/runs`]) expect((await outsider.get(path)).status, path).toBe(403);
    await hide(issue.id);
    expect((await t.api.get(`/api/issues/${issue.id}/activity`)).body.map((entry: any) => entry.action)).toEqual(['issue.created']);
  });

  it("leaves hidden issues' entries out of the company feed", async () => {
    const fresh = await createCompany(t.api);
    const shown = await createIssue({ title: 'Shown' }, fresh.id);
    const hidden = await createIssue({ title: 'Hidden' }, fresh.id);
    await hide(hidden.id);
    const feed = await t.api.get(`/api/companies/${fresh.id}/activity`);
    expect(feed.status, feed.text).toBe(200);
    const about = feed.body.map((entry: any) => entry.entityId);
    expect(about).toContain(shown.id);
    expect(about).not.toContain(hidden.id);
    expect(about).toContain(fresh.id);
    expect((await t.api.get(`/api/companies/${fresh.id}/activity?entityId=${hidden.id}`)).body).toEqual([]);
    expect((await t.api.get(`/api/companies/${fresh.id}/activity?entityType=issue`)).body.map((entry: any) => entry.entityId)).toEqual([shown.id]);
  });
});

describe('GET /api/issues/{issueId}/runs', () => {
  it('answers the runs that worked on the issue, newest first, from its locks, activity and comments', async () => {
    const issue = await createIssue({ title: 'Worked on' });
    const first = await inRun(agent.id);
    await first.api.post(`/api/issues/${issue.id}/checkout`, { agentId: agent.id });
    await first.api.post(`/api/issues/${issue.id}/release`, {});
    await closeRun(first.runId);
    const second = await inRun(rival.id);
    await second.api.post(`/api/issues/${issue.id}/comments`, { body: 'Having a look' });
    const third = await inRun(agent.id);
    await third.api.post(`/api/issues/${issue.id}/checkout`, { agentId: agent.id });
    // A run id the ledger does not know, and another company's run, are refused by the kernel
    // (403 run_not_owned) before anything is recorded under them, so neither is listed.
    const key = await createAgentKey(t.api, agent.id);
    const unknown = await t.api.as(key).post(`/api/issues/${issue.id}/comments`, { body: 'Unknown run' }, { headers: { 'X-Service-Run-Id': randomUUID() } });
    expect(unknown.body.code).toBe('run_not_owned');
    const other = await createCompany(t.api);
    const foreign = await inRun((await createAgent(t.api, other.id)).id, other.id);
    const crossed = await t.api.as(key).patch(`/api/issues/${issue.id}`, { priority: 'low' }, { headers: { 'X-Service-Run-Id': foreign.runId } });
    expect(crossed.body.code).toBe('run_not_owned');

    const res = await t.api.get(`/api/issues/${issue.id}/runs`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.map((run: any) => run.runId)).toEqual([third.runId, second.runId, first.runId]);
    for (const run of res.body) expect(Object.keys(run).sort()).toEqual(RUN_KEYS);
    expect(res.body[2]).toMatchObject({ status: 'succeeded', agentId: agent.id, invocationSource: 'on_demand', finishedAt: expect.any(String), resultJson: { ok: true }, logBytes: null });
    expect(res.body[0]).toMatchObject({ status: 'running', finishedAt: null, usageJson: null });
    expect((await t.api.get(`/api/issues/${(await createIssue({ title: 'Never worked' })).id}/runs`)).body).toEqual([]);
  });
});

describe('GET /api/heartbeat-runs/{runId}/issues', () => {
  it('answers summaries of the issues the run checked out, changed or commented on, hidden ones left out', async () => {
    const run = await inRun(agent.id);
    const taken = await createIssue({ title: 'Taken', priority: 'high' });
    const changed = await createIssue({ title: 'Changed' });
    const discussed = await createIssue({ title: 'Discussed' });
    const hidden = await createIssue({ title: 'Hidden' });
    await createIssue({ title: 'Not touched' });
    await run.api.post(`/api/issues/${taken.id}/checkout`, { agentId: agent.id });
    await run.api.patch(`/api/issues/${changed.id}`, { description: 'by the run' });
    await run.api.post(`/api/issues/${discussed.id}/comments`, { body: 'From the run' });
    await run.api.patch(`/api/issues/${hidden.id}`, { description: 'by the run' });
    await hide(hidden.id);

    const res = await t.api.get(`/api/heartbeat-runs/${run.runId}/issues`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.map((issue: any) => issue.id).sort()).toEqual([taken.id, changed.id, discussed.id].sort());
    expect(res.body.find((issue: any) => issue.id === taken.id)).toEqual({
      id: taken.id, identifier: taken.identifier, title: 'Taken', status: 'in_progress', priority: 'high', projectId: null, goalId: null,
      parentId: null, assigneeAgentId: agent.id, updatedAt: expect.any(String),
    });
    // The agent's own run, through its run token.
    expect((await run.api.get(`/api/heartbeat-runs/${run.runId.toUpperCase()}/issues`)).body).toHaveLength(3);
  });

  it('answers an empty list for an unknown run, a malformed id, and a run of a company the caller cannot reach', async () => {
    const run = await inRun(agent.id);
    await run.api.patch(`/api/issues/${(await createIssue({ title: 'Secret work' })).id}`, { description: 'x' });
    for (const id of [randomUUID(), 'not-a-run']) {
      const res = await t.api.get(`/api/heartbeat-runs/${id}/issues`);
      expect([res.status, res.body], id).toEqual([200, []]);
    }
    const outsider = t.api.as(await createAgentKey(t.api, (await createAgent(t.api, (await createCompany(t.api)).id)).id));
    expect((await outsider.get(`/api/heartbeat-runs/${run.runId}/issues`)).body).toEqual([]);
    const userId = await insertUser(t);
    const stranger = t.api.as(await boardToken(t, userId));
    expect((await stranger.get(`/api/heartbeat-runs/${run.runId}/issues`)).body).toEqual([]);
    await addMember(t, company.id, userId);
    const member = t.api.as(await boardToken(t, userId));
    expect((await member.get(`/api/heartbeat-runs/${run.runId}/issues`)).body.map((issue: any) => issue.title)).toEqual(['Secret work']);
    expect((await t.api.as('svc_not_a_key').get(`/api/heartbeat-runs/${run.runId}/issues`)).status).toBe(401);
  });
});

describe('agent termination and company archive', () => {
  it("unassigns a terminated agent's open issues, clears their run locks and sends in_progress back to todo, once", async () => {
    const fresh = await createCompany(t.api);
    const leaving = await createAgent(t.api, fresh.id);
    const staying = await createAgent(t.api, fresh.id);
    const todo = await createIssue({ title: 'To do', assigneeAgentId: leaving.id }, fresh.id);
    const working = await createIssue({ title: 'Working' }, fresh.id);
    const run = await inRun(leaving.id, fresh.id);
    await run.api.post(`/api/issues/${working.id}/checkout`, { agentId: leaving.id });
    const review = await createIssue({ title: 'In review', assigneeAgentId: leaving.id, status: 'in_review' }, fresh.id);
    const done = await createIssue({ title: 'Done', assigneeAgentId: leaving.id, status: 'done' }, fresh.id);
    const others = await createIssue({ title: "Someone else's", assigneeAgentId: staying.id }, fresh.id);

    const res = await t.api.post(`/api/agents/${leaving.id}/terminate`, {});
    expect(res.status, res.text).toBe(200);
    await eventsSettled(t);
    const read = async (id: string) => (await t.api.get(`/api/issues/${id}`)).body;
    expect(await read(todo.id)).toMatchObject({ status: 'todo', assigneeAgentId: null });
    expect(await read(working.id)).toMatchObject({ status: 'todo', assigneeAgentId: null, checkoutRunId: null, executionRunId: null });
    expect(await read(review.id)).toMatchObject({ status: 'in_review', assigneeAgentId: null });
    expect(await read(done.id)).toMatchObject({ status: 'done', assigneeAgentId: leaving.id });
    expect(await read(others.id)).toMatchObject({ assigneeAgentId: staying.id });
    const entries = async () => (await t.sql.query(
      "select entity_id, actor_type, details from activity_log where company_id = $1 and action = 'issue.unassigned' order by seq", [fresh.id])).rows;
    const first = await entries();
    expect(first.map((row: any) => row.entity_id).sort()).toEqual([todo.id, working.id, review.id].sort());
    expect(first.find((row: any) => row.entity_id === working.id)).toMatchObject({
      actor_type: 'system', details: { reason: 'agent_terminated', previousAssigneeAgentId: leaving.id, previousStatus: 'in_progress', status: 'todo', previousCheckoutRunId: run.runId },
    });
    // The same event delivered again changes nothing.
    const attempts = async (eventId: string) => (await t.sql.query("select state, attempts from keel_events.deliveries where event_id = $1 and subscriber = 'work'", [eventId])).rows[0];
    const { rows: [delivery] } = await t.sql.query(
      `update keel_events.deliveries d set state = 'pending', available_at = now(), finished_at = null, lease_until = null
         from keel_events.outbox o where o.id = d.event_id and d.subscriber = 'work' and o.name = 'agent.status_changed' and o.entity_id = $1
       returning d.event_id, d.attempts`, [leaving.id]);
    // Its attempts as reset, in the same statement: a round of claims may take it before a later read.
    const firstDelivery = { attempts: delivery.attempts as number };
    await t.sql.query("select pg_notify('keel_events', '')");
    await eventsSettled(t);
    expect(await attempts(delivery.event_id)).toEqual({ state: 'delivered', attempts: firstDelivery.attempts + 1 });
    expect(await entries()).toEqual(first);
  });

  it("leaves a paused agent's issues with it, including the archive's pause", async () => {
    const fresh = await createCompany(t.api);
    const sleeper = await createAgent(t.api, fresh.id);
    const issue = await createIssue({ title: 'Kept', assigneeAgentId: sleeper.id }, fresh.id);
    expect((await t.api.post(`/api/companies/${fresh.id}/archive`, {})).status).toBe(200);
    await eventsSettled(t);
    expect((await t.api.get(`/api/agents/${sleeper.id}`)).body.status).toBe('paused');
    expect((await t.api.get(`/api/issues/${issue.id}`)).body).toMatchObject({ status: 'todo', assigneeAgentId: sleeper.id });
    const { rows } = await t.sql.query("select count(*)::int as n from activity_log where company_id = $1 and action = 'issue.unassigned'", [fresh.id]);
    expect(rows[0].n).toBe(0);
  });
});
