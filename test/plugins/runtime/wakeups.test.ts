import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsSettled } from '../../support/events.ts';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type Api, type TestKernel } from '../../support/harness.ts';
import { agentScripts, processAgent, runWhen, waitFor, wakeOk } from './helpers.ts';

/** The wakeup route's answers, the run routes, and company scoping. Runs use a process that runs until cancelled. */
let t: TestKernel;
let company: any;
let other: any;
let scripts: string;
let outsider: Api;

beforeAll(async () => {
  scripts = await agentScripts();
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  company = await createCompany(t.api, { name: 'Wake Co' });
  other = await createCompany(t.api, { name: 'Other Co' });
  outsider = t.api.as(await createAgentKey(t.api, (await createAgent(t.api, other.id)).id));
});
afterAll(async () => { await t?.stop(); });

const hanging = () => processAgent(t.api, company.id, join(scripts, 'hang.cjs'));
const cancel = (runId: string) => t.api.post(`/api/heartbeat-runs/${runId}/cancel`);
async function wakeupCount(agentId: string): Promise<number> {
  return (await t.sql.query('select count(*)::int as n from plugin_runtime.wakeups where agent_id = $1', [agentId])).rows[0].n;
}

describe('POST /api/agents/{agentId}/wakeup', () => {
  it('answers 202 with the wakeup and its queued run, defaults filled in, the ledger run opened', async () => {
    const agent = await hanging();
    const body = await wakeOk(t.api, agent.id);
    expect(body).toMatchObject({
      status: 'queued',
      wakeup: { agentId: agent.id, companyId: company.id, source: 'on_demand', triggerDetail: 'manual', reason: null, payload: {}, idempotencyKey: null, forceFreshSession: false, status: 'queued', runId: body.run.id, requestedBy: { type: 'user' } },
      run: { id: body.run.id, agentId: agent.id, status: 'queued', invocationSource: 'on_demand', triggerDetail: 'manual', adapterType: 'process', taskKey: 'default', issueId: null, startedAt: null, finishedAt: null, exitCode: null, logBytes: 0 },
    });
    const { rows } = await t.sql.query('select status, invocation_source, trigger_detail, opened_by_plugin from runs where id = $1', [body.run.id]);
    expect(rows[0]).toMatchObject({ invocation_source: 'on_demand', trigger_detail: 'manual', opened_by_plugin: 'runtime' });
    await runWhen(t, body.run.id, (run) => run.status === 'running');
    await cancel(body.run.id);
  });

  it('enforces the idempotency key: the same key gives back the same wakeup, also under concurrent retries', async () => {
    const agent = await hanging();
    const first = await t.api.post(`/api/agents/${agent.id}/wakeup`, { idempotencyKey: 'once', reason: 'first' });
    expect(first.status).toBe(202);
    const again = await t.api.post(`/api/agents/${agent.id}/wakeup`, { idempotencyKey: 'once', reason: 'second' });
    expect([again.status, again.headers.get('x-idempotent-replayed'), again.body.wakeup.id, again.body.run.id]).toEqual([202, 'true', first.body.wakeup.id, first.body.run.id]);
    const racers = await Promise.all(Array.from({ length: 6 }, () => t.api.post(`/api/agents/${agent.id}/wakeup`, { idempotencyKey: 'race', source: 'automation' })));
    expect(racers.map((res) => res.status)).toEqual(Array(6).fill(202));
    expect(new Set(racers.map((res) => res.body.wakeup.id)).size).toBe(1);
    expect(await wakeupCount(agent.id)).toBe(2);
    for (const id of [first.body.run.id, racers[0]!.body.run.id]) await cancel(id);
  });

  it('skips a wake for an issue the agent already works on, and coalesces a timer wake into the active run', async () => {
    const agent = await hanging();
    const issue = (await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Busy' })).body;
    const first = await wakeOk(t.api, agent.id, { payload: { issueId: issue.id } });
    const skipped = await wakeOk(t.api, agent.id, { payload: { issueId: issue.id }, reason: 'again' });
    expect(skipped).toMatchObject({ status: 'skipped', wakeup: { status: 'skipped', runId: first.run.id }, run: { id: first.run.id } });
    const coalesced = await t.api.post(`/api/agents/${agent.id}/heartbeat/invoke`);
    expect([coalesced.status, coalesced.body.status, coalesced.body.wakeup.source, coalesced.body.run.id]).toEqual([202, 'coalesced', 'timer', first.run.id]);
    const timer = await wakeOk(t.api, agent.id, { source: 'timer', triggerDetail: 'system' });
    expect(timer.status).toBe('coalesced');
    // An on-demand wake without an issue queues behind (maxConcurrentRuns 1).
    const queued = await wakeOk(t.api, agent.id, { reason: 'more' });
    expect(queued.status).toBe('queued');
    await runWhen(t, first.run.id, (run) => run.status === 'running');
    expect((await t.api.get(`/api/heartbeat-runs/${queued.run.id}`)).body.status).toBe('queued');
    await cancel(first.run.id);
    await runWhen(t, queued.run.id, (run) => run.status === 'running');
    await cancel(queued.run.id);
  });

  it('refuses what it cannot run with 409 naming why, writing nothing', async () => {
    const other = await createAgent(t.api, company.id, { adapterType: 'eta_local' });
    const res = await t.api.post(`/api/agents/${other.id}/wakeup`, {});
    expect([res.status, res.body]).toEqual([409, { error: 'This instance cannot run the adapter eta_local: Keel ships no driver for it', code: 'adapter_unavailable', details: { adapterType: 'eta_local' } }]);
    const terminated = await hanging();
    expect((await t.api.post(`/api/agents/${terminated.id}/terminate`, {})).status).toBe(200);
    const refused = await t.api.post(`/api/agents/${terminated.id}/wakeup`, {});
    expect([refused.status, refused.body.code, refused.body.details]).toEqual([409, 'agent_not_invokable', { scopeType: 'agent', scopeId: terminated.id, status: 'terminated' }]);
    const paused = await createCompany(t.api, { name: 'Paused Co' });
    const pausedAgent = await processAgent(t.api, paused.id, join(scripts, 'hang.cjs'));
    expect((await t.api.patch(`/api/companies/${paused.id}`, { status: 'paused' })).status).toBe(200);
    const companyRefused = await t.api.post(`/api/agents/${pausedAgent.id}/wakeup`, {});
    expect([companyRefused.status, companyRefused.body.code, companyRefused.body.details]).toEqual([409, 'company_not_active', { scopeType: 'company', scopeId: paused.id, status: 'paused' }]);
    expect(await wakeupCount(other.id) + await wakeupCount(terminated.id) + await wakeupCount(pausedAgent.id)).toBe(0);
  });

  it('answers 422 for a payload.issueId of another company or no issue, 400 for a bad body, 404 for an unknown agent', async () => {
    const agent = await hanging();
    const foreign = (await t.api.post(`/api/companies/${other.id}/issues`, { title: 'Not yours' })).body;
    const res = await t.api.post(`/api/agents/${agent.id}/wakeup`, { payload: { issueId: foreign.id } });
    expect([res.status, res.body.code, res.body.details]).toEqual([422, 'invalid_issue', { field: 'payload.issueId', issueId: foreign.id }]);
    const garbage = await t.api.post(`/api/agents/${agent.id}/wakeup`, { payload: { issueId: 'ACME-1' } });
    expect([garbage.status, garbage.body.code]).toEqual([422, 'invalid_issue']);
    const bad = await t.api.post(`/api/agents/${agent.id}/wakeup`, { source: 'whenever' });
    expect([bad.status, bad.body.code]).toEqual([400, 'validation_failed']);
    const unknown = await t.api.post('/api/agents/00000000-0000-4000-8000-000000000000/wakeup', {});
    expect(unknown.status).toBe(404);
    expect(await wakeupCount(agent.id)).toBe(0);
  });

  it("refuses another company's agent key (403), and lets an agent of the company wake a colleague", async () => {
    const agent = await hanging();
    const res = await outsider.post(`/api/agents/${agent.id}/wakeup`, {});
    expect(res.status).toBe(403);
    const colleague = t.api.as(await createAgentKey(t.api, (await createAgent(t.api, company.id)).id));
    const woken = await colleague.post(`/api/agents/${agent.id}/wakeup`, { reason: 'your turn' });
    expect([woken.status, woken.body.wakeup.requestedBy.type]).toEqual([202, 'agent']);
    await cancel(woken.body.run.id);
  });

  it('answers alpha-login with a clear 4xx', async () => {
    const agent = await hanging();
    const res = await t.api.post(`/api/agents/${agent.id}/alpha-login`);
    expect([res.status, res.body.code, res.body.details]).toEqual([422, 'login_not_supported', { adapterType: 'process' }]);
    // An alpha_local agent gets Claude Code's login state from the coding-agents plugin (here: the tool is not on PATH).
    const alpha = await createAgent(t.api, company.id, { adapterType: 'alpha_local', adapterConfig: { command: '/nonexistent/claude' } });
    const answered = await t.api.post(`/api/agents/${alpha.id}/alpha-login`);
    expect([answered.status, answered.body.status, answered.body.loggedIn], answered.text).toEqual([200, 'action_required', null]);
    expect(answered.body.error).toContain('npm install -g @anthropic-ai/claude-code');
    // The agent itself may ask (the spec's BA); another agent of the company may not, nor test an environment (board only).
    const own = await t.api.as(await createAgentKey(t.api, alpha.id)).post(`/api/agents/${alpha.id}/alpha-login`, {});
    expect([own.status, own.body.status], own.text).toEqual([200, 'action_required']);
    const peer = t.api.as(await createAgentKey(t.api, agent.id));
    const refused = await peer.post(`/api/agents/${alpha.id}/alpha-login`, {});
    expect([refused.status, refused.body.code]).toEqual([403, 'permission_denied']);
    const test = await peer.post(`/api/agents/${alpha.id}/adapter-test`, {});
    expect([test.status, test.body.code]).toEqual([403, 'board_only']);
    const processTest = await t.api.post(`/api/agents/${agent.id}/adapter-test`, {});
    expect([processTest.status, processTest.body.code]).toEqual([422, 'adapter_test_not_supported']);
  });
});

describe('wakes from work', () => {
  it('wakes an assignee once per assignment, and an agent mentioned in a comment', async () => {
    const agent = await hanging();
    const issue = (await t.api.post(`/api/companies/${company.id}/issues`, { title: 'For you', assigneeAgentId: agent.id })).body;
    const wakeup = await waitFor(async () => (await t.sql.query('select * from plugin_runtime.wakeups where agent_id = $1', [agent.id])).rows[0], 'the assignment wake');
    expect(wakeup).toMatchObject({ source: 'assignment', trigger_detail: 'system', reason: 'issue_assigned', issue_id: issue.id, status: expect.stringMatching(/queued|claimed/) });
    await cancel(wakeup.run_id);
    const mentioned = await hanging();
    const comment = await t.api.post(`/api/issues/${issue.id}/comments`, { body: `@${mentioned.urlKey} please look` });
    expect(comment.status, comment.text).toBe(201);
    const woken = await waitFor(async () => (await t.sql.query('select * from plugin_runtime.wakeups where agent_id = $1', [mentioned.id])).rows[0], 'the mention wake');
    expect(woken).toMatchObject({ source: 'automation', reason: 'issue_comment_mentioned', issue_id: issue.id });
    await cancel(woken.run_id);
    expect((await t.sql.query("select count(*)::int as n from plugin_runtime.wakeups where agent_id = $1 and source = 'assignment'", [agent.id])).rows[0].n).toBe(1);
    // The comment also woke the assignee (a comment by someone else on its issue); stop that run too.
    const assignee = await waitFor(async () => (await t.sql.query("select run_id from plugin_runtime.wakeups where agent_id = $1 and source = 'automation'", [agent.id])).rows[0], 'the assignee wake');
    if (assignee.run_id) await cancel(assignee.run_id);
  });

  it("hears no comment that wakes nobody: an agent's note on its own issue costs the runtime no call", async () => {
    const agent = await hanging();
    const issue = (await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Mine to note on', assigneeAgentId: agent.id })).body;
    const wakeup = await waitFor(async () => (await t.sql.query('select * from plugin_runtime.wakeups where agent_id = $1', [agent.id])).rows[0], 'the assignment wake');
    await cancel(wakeup.run_id);
    const own = await t.api.as(await createAgentKey(t.api, agent.id)).post(`/api/issues/${issue.id}/comments`, { body: 'Noted, nothing new.' });
    expect(own.status, own.text).toBe(201);
    const board = await t.api.post(`/api/issues/${issue.id}/comments`, { body: 'Any news?' });
    expect(board.status, board.text).toBe(201);
    await eventsSettled(t);
    // The runtime subscribes with where { wakeAgentIds: { nonEmpty: true } } (plugins/runtime/plugin.json).
    const deliveries = await t.sql.query(
      `select o.payload ->> 'commentId' as comment, o.payload -> 'wakeAgentIds' as wake from keel_events.outbox o join keel_events.deliveries d on d.event_id = o.id
        where o.name = 'work.issue.comment_added' and o.payload ->> 'issueId' = $1 and d.subscriber = 'runtime' order by o.seq`, [issue.id]);
    expect(deliveries.rows).toEqual([{ comment: board.body.id, wake: [agent.id] }]);
    const appended = await t.sql.query("select count(*)::int as n from keel_events.outbox where name = 'work.issue.comment_added' and payload ->> 'issueId' = $1", [issue.id]);
    expect(appended.rows[0].n).toBe(2);
    const woken = await waitFor(async () => (await t.sql.query("select run_id from plugin_runtime.wakeups where agent_id = $1 and reason = 'issue_comment_mentioned'", [agent.id])).rows[0], 'the board comment\'s wake');
    if (woken.run_id) await cancel(woken.run_id);
  });
});

describe('wakes from blockers and approvals', () => {
  const wakeupsOf = async (agentId: string, reason: string) =>
    (await t.sql.query('select * from plugin_runtime.wakeups where agent_id = $1 and reason = $2 order by created_at', [agentId, reason])).rows;
  const cancelAll = async (agentId: string) => {
    const { rows } = await t.sql.query(`select id from plugin_runtime.runs where agent_id = $1 and status in ('queued', 'running')`, [agentId]);
    for (const row of rows) await cancel(row.id);
  };

  it('wakes the assignee once when the last blocker of its issue is resolved', async () => {
    const agent = await hanging();
    const first = (await t.api.post(`/api/companies/${company.id}/issues`, { title: 'First blocker' })).body;
    const second = (await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Second blocker' })).body;
    const blocked = (await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Waits', assigneeAgentId: agent.id, blockedByIssueIds: [first.id, second.id] })).body;
    await eventsSettled(t);
    await cancelAll(agent.id);
    expect((await t.api.patch(`/api/issues/${first.id}`, { status: 'done' })).status).toBe(200);
    await eventsSettled(t);
    expect(await wakeupsOf(agent.id, 'issue_blockers_resolved')).toEqual([]);
    expect((await t.api.patch(`/api/issues/${second.id}`, { status: 'cancelled' })).status).toBe(200);
    const [wakeup] = await waitFor(async () => { const rows = await wakeupsOf(agent.id, 'issue_blockers_resolved'); return rows.length ? rows : undefined; }, 'the unblocked wake');
    expect(wakeup).toMatchObject({ source: 'automation', trigger_detail: 'system', issue_id: blocked.id, payload: { issueId: blocked.id, resolvedBlockerIssueId: second.id } });
    // Done again (from done) and other edits of a resolved blocker wake nobody; once per event.
    expect((await t.api.patch(`/api/issues/${second.id}`, { title: 'Second blocker, renamed' })).status).toBe(200);
    await eventsSettled(t);
    expect(await wakeupsOf(agent.id, 'issue_blockers_resolved')).toHaveLength(1);
    await cancelAll(agent.id);
  });

  it("wakes the requester and the hired agent once when the board approves an agent's hire", async () => {
    const strict = await createCompany(t.api, { name: 'Strict Co', requireBoardApprovalForNewAgents: true });
    const ceo = await processAgent(t.api, strict.id, join(scripts, 'hang.cjs'), {}, { role: 'ceo' });
    const ceoApi = t.api.as(await createAgentKey(t.api, ceo.id));
    const hire = await ceoApi.post(`/api/companies/${strict.id}/agent-hires`, {
      name: 'New Hire', adapterType: 'process', adapterConfig: { command: process.execPath, args: [join(scripts, 'hang.cjs')], graceSec: 1 },
    });
    expect(hire.status, hire.text).toBe(201);
    expect(hire.body.approval).toMatchObject({ status: 'pending', requestedByAgentId: ceo.id });
    const approved = await t.api.post(`/api/approvals/${hire.body.approval.id}/approve`, {});
    expect(approved.status, approved.text).toBe(200);
    const hiredId = hire.body.agent.id;
    const [requesterWake] = await waitFor(async () => { const rows = await wakeupsOf(ceo.id, 'approval_approved'); return rows.length ? rows : undefined; }, 'the requester wake');
    expect(requesterWake).toMatchObject({ source: 'automation', payload: { approvalId: hire.body.approval.id, approvalStatus: 'approved', hiredAgentId: hiredId } });
    const [hiredWake] = await waitFor(async () => { const rows = await wakeupsOf(hiredId, 'hire_approved'); return rows.length ? rows : undefined; }, 'the hired agent wake');
    expect(hiredWake).toMatchObject({ source: 'automation', payload: { approvalId: hire.body.approval.id }, status: expect.stringMatching(/queued|claimed/) });
    // The hired agent's board-approved configuration runs.
    await runWhen(t, hiredWake.run_id, (run) => run.status === 'running');
    await eventsSettled(t);
    expect(await wakeupsOf(ceo.id, 'approval_approved')).toHaveLength(1);
    expect(await wakeupsOf(hiredId, 'hire_approved')).toHaveLength(1);
    await cancelAll(ceo.id);
    await cancelAll(hiredId);
  });
});

describe('run routes', () => {
  it('lists runs newest first by agent and status, paged by cursor; 404 and 403 as for any entity', async () => {
    const agent = await hanging();
    const runs = [];
    for (let i = 0; i < 3; i++) runs.push((await wakeOk(t.api, agent.id, { reason: `r${i}`, payload: { taskKey: `t${i}` } })).run);
    const page1 = await t.api.get(`/api/companies/${company.id}/heartbeat-runs?agentId=${agent.id}&limit=2`);
    expect(page1.body.runs.map((run: any) => run.id)).toEqual([runs[2].id, runs[1].id]);
    const page2 = await t.api.get(`/api/companies/${company.id}/heartbeat-runs?agentId=${agent.id}&limit=2&cursor=${page1.body.nextCursor}`);
    expect([page2.body.runs.map((run: any) => run.id), page2.body.nextCursor]).toEqual([[runs[0].id], null]);
    await runWhen(t, runs[0].id, (run) => run.status === 'running');
    const queued = await t.api.get(`/api/companies/${company.id}/heartbeat-runs?agentId=${agent.id}&status=queued`);
    expect(queued.body.runs.map((run: any) => run.id)).toEqual([runs[2].id, runs[1].id]);
    expect((await t.api.get(`/api/companies/${company.id}/heartbeat-runs?cursor=zz`)).body.code).toBe('invalid_cursor');
    expect((await t.api.get(`/api/companies/${company.id}/heartbeat-runs?status=sleeping`)).status).toBe(400);

    expect((await t.api.get('/api/heartbeat-runs/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await outsider.get(`/api/heartbeat-runs/${runs[0].id}`)).status).toBe(403);
    expect((await outsider.post(`/api/heartbeat-runs/${runs[0].id}/cancel`)).status).toBe(403);
    expect((await outsider.get(`/api/companies/${company.id}/heartbeat-runs`)).status).toBe(403);
    for (const run of runs) await cancel(run.id);
    const state = await waitFor(async () => {
      const res = await t.api.get(`/api/agents/${agent.id}/runtime-state`);
      return res.body.runningRuns === 0 && res.body.queuedRuns === 0 ? res.body : undefined;
    }, 'no active runs');
    expect(state.lastRunStatus).toBe('cancelled');
  });

  it('streams a run: the run and its log so far, then its status changes and its log as it is written', async () => {
    const agent = await hanging();
    const { run } = await wakeOk(t.api, agent.id);
    await runWhen(t, run.id, (r) => r.status === 'running' && r.logBytes > 0);
    const controller = new AbortController();
    const res = await fetch(`${t.url}/api/heartbeat-runs/${run.id}/stream`, { signal: controller.signal });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.getReader();
    let text = '';
    const readUntil = async (needle: string) => {
      while (!text.includes(needle)) text += new TextDecoder().decode((await reader.read()).value);
    };
    await readUntil('event: log');
    expect(text).toContain('event: run');
    expect(text).toContain('working');
    await cancel(run.id);
    await readUntil('"status":"cancelled"');
    // A plain line the process prints now (on SIGTERM) arrives live, as a log batch with its offsets.
    await readUntil('ignoring SIGTERM');
    expect(text).toMatch(/"event":"log","offset":\d+,"nextOffset":\d+,"content":".*ignoring SIGTERM/);
    controller.abort();
    const ended = await fetch(`${t.url}/api/heartbeat-runs/${run.id}/stream`);
    const body = await ended.text();
    expect(body).toContain('event: end');
  });
});
