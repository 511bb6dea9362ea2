import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsSettled } from '../../support/events.ts';
import type { TestKernel } from '../../support/harness.ts';
import { alive, processAgent, runWhen, startRuntimeWorld, waitFor, wakeOk } from './helpers.ts';

/** Real agent processes through the runtime: the example agent, failures, timeouts, cancels, pauses and budget stops. */
let t: TestKernel;
let company: any;
let scripts: string;

beforeAll(async () => {
  ({ t, company, scripts } = await startRuntimeWorld('Runtime Co'));
});
afterAll(async () => { await t?.stop(); });

async function createIssue(body: Record<string, unknown>) {
  const res = await t.api.post(`/api/companies/${company.id}/issues`, body);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

const costEventsOf = async (runId: string) =>
  (await t.sql.query('select * from plugin_costs.cost_events where heartbeat_run_id = $1 order by created_at', [runId])).rows;

describe('the example agent', () => {
  it('calls the API back with its run token, works on its issue, reports usage at once and a result, and succeeds', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'agent.mjs'), { timeoutSec: 60 });
    const projectRes = await t.api.post(`/api/companies/${company.id}/projects`, { name: 'Example project' });
    const issue = await createIssue({ title: 'Have a look', projectId: projectRes.body.id });
    const woken = await wakeOk(t.api, agent.id, { reason: 'have a look', payload: { issueId: issue.id }, idempotencyKey: 'example-1' });
    expect(woken).toMatchObject({ status: 'queued', wakeup: { status: 'queued', source: 'on_demand', triggerDetail: 'manual', issueId: issue.id }, run: { status: 'queued', issueId: issue.id, projectId: projectRes.body.id } });

    const run = await runWhen(t, woken.run.id);
    expect(run).toMatchObject({
      status: 'succeeded', exitCode: 0, signal: null, errorCode: null, invocationSource: 'on_demand', triggerDetail: 'manual', wakeReason: 'have a look',
      issueId: issue.id, usageJson: { reports: 1, costCents: 3, inputTokens: 1200, cachedInputTokens: 200, outputTokens: 300 },
      resultJson: { summary: 'done', issueId: issue.id, commentId: expect.any(String), resumedSession: null }, sessionIdAfter: `session-${run.id}`,
    });
    expect(run.logBytes).toBeGreaterThan(0);
    expect(run.startedAt).toEqual(expect.any(String));

    // The usage line became a cost event of the run, attributed to agent, issue and project.
    const costs = await costEventsOf(run.id);
    expect(costs).toEqual([expect.objectContaining({ agent_id: agent.id, issue_id: issue.id, project_id: projectRes.body.id, cost_cents: '3', provider: 'example', source: 'adapter' })]);
    // The comment was made by the agent in its run; the run's end released its checkout.
    const comments = await t.api.get(`/api/issues/${issue.id}/comments`);
    expect(comments.body).toEqual([expect.objectContaining({ body: `Looked at this in run ${run.id}.`, authorAgentId: agent.id })]);
    await eventsSettled(t);
    const after = await t.api.get(`/api/issues/${issue.id}`);
    expect(after.body).toMatchObject({ status: 'todo', assigneeAgentId: agent.id, checkoutRunId: null });
    // The ledger run is closed (its token revoked) with the run.
    const { rows: ledger } = await t.sql.query('select status from runs where id = $1', [run.id]);
    expect(ledger[0].status).toBe('succeeded');

    // The log, by offset: NDJSON lines with the plain output.
    const log = await t.api.get(`/api/heartbeat-runs/${run.id}/log?offset=0`);
    expect(log.status).toBe(200);
    expect(log.body.content).toContain('I am ');
    const lines = log.body.content.trim().split('\n').map((line: string) => JSON.parse(line));
    expect(lines[0]).toMatchObject({ seq: expect.any(Number), stream: expect.any(String), line: expect.any(String) });
    const tail = await t.api.get(`/api/heartbeat-runs/${run.id}/log?offset=${log.body.nextOffset}`);
    expect(tail.body).toMatchObject({ content: '', eof: true });

    // The session comes back on the next run of the same task, unless forceFreshSession.
    const second = await runWhen(t, (await wakeOk(t.api, agent.id, { payload: { issueId: issue.id } })).run.id);
    expect(second).toMatchObject({ status: 'succeeded', sessionIdBefore: `session-${run.id}`, resultJson: { resumedSession: `session-${run.id}` } });
    const fresh = await runWhen(t, (await wakeOk(t.api, agent.id, { payload: { issueId: issue.id }, forceFreshSession: true })).run.id);
    expect(fresh).toMatchObject({ status: 'succeeded', sessionIdBefore: null, resultJson: { resumedSession: null } });

    const sessions = await t.api.get(`/api/agents/${agent.id}/task-sessions`);
    expect(sessions.body).toEqual([expect.objectContaining({ agentId: agent.id, taskKey: issue.id, adapterType: 'process', sessionId: `session-${fresh.id}`, lastRunId: fresh.id })]);
    const state = await t.api.get(`/api/agents/${agent.id}/runtime-state`);
    expect(state.body).toMatchObject({ agentId: agent.id, lastRunId: fresh.id, lastRunStatus: 'succeeded', totals: { runs: 3, succeededRuns: 3, failedRuns: 0, costCents: 9 }, queuedRuns: 0, runningRuns: 0 });
    const reset = await t.api.post(`/api/agents/${agent.id}/runtime-state/reset-session`, { taskKey: issue.id });
    expect(reset.body).toEqual({ agentId: agent.id, taskKey: issue.id, clearedTaskKeys: [issue.id] });
    expect((await t.api.get(`/api/agents/${agent.id}/task-sessions`)).body).toEqual([]);
  });
});

describe('ends of a run', () => {
  it('fails with the exit code; a usage line with a negative cost is not recorded', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'fail.cjs'));
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    expect(run).toMatchObject({ status: 'failed', exitCode: 7, usageJson: { reports: 0, rejectedReports: 1, costCents: 0 } });
    expect(await costEventsOf(run.id)).toEqual([]);
    const state = await t.api.get(`/api/agents/${agent.id}/runtime-state`);
    expect(state.body).toMatchObject({ lastRunStatus: 'failed', lastError: 'exit code 7', totals: { failedRuns: 1 } });
  });

  it('times out at timeoutSec: timed_out, the process killed', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'hang.cjs'), { timeoutSec: 1 });
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    expect(run).toMatchObject({ status: 'timed_out' });
    expect(run.signal ?? run.exitCode).not.toBeNull();
  });

  it('is cancelled by the cancel route: the process is gone, the ledger run closed; cancelling again answers the same, a finished run 409', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'hang.cjs'));
    const { run: queued } = await wakeOk(t.api, agent.id);
    const running = await runWhen(t, queued.id, (run) => run.status === 'running' && run.pid !== null);
    const res = await t.api.post(`/api/heartbeat-runs/${queued.id}/cancel`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: 'cancelled', cancelReason: 'cancelled_by_request' });
    const ended = await runWhen(t, queued.id);
    expect(ended.status).toBe('cancelled');
    await waitFor(async () => !alive(running.pid), 'the process to be gone');
    expect((await t.sql.query('select status from runs where id = $1', [queued.id])).rows[0].status).toBe('cancelled');
    expect((await t.api.post(`/api/heartbeat-runs/${queued.id}/cancel`)).body.status).toBe('cancelled');

    const done = await runWhen(t, (await wakeOk(t.api, (await processAgent(t.api, company.id, join(scripts, 'fail.cjs'))).id)).run.id);
    const refused = await t.api.post(`/api/heartbeat-runs/${done.id}/cancel`);
    expect([refused.status, refused.body]).toEqual([409, { error: 'The run is already failed', code: 'run_not_active', details: { status: 'failed' } }]);
  });

  it('is cancelled when the agent is paused, with its queued runs; waking it then answers 409', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'hang.cjs'), {}, { runtimeConfig: { heartbeat: { maxConcurrentRuns: 1 } } });
    const first = (await wakeOk(t.api, agent.id, { reason: 'first' })).run;
    const second = (await wakeOk(t.api, agent.id, { reason: 'second' })).run;
    const running = await runWhen(t, first.id, (run) => run.status === 'running' && run.pid !== null);
    // One at a time: the second waits queued behind the first.
    expect((await t.api.get(`/api/heartbeat-runs/${second.id}`)).body.status).toBe('queued');
    const paused = await t.api.post(`/api/agents/${agent.id}/pause`, {});
    expect(paused.status, paused.text).toBe(200);
    expect((await runWhen(t, first.id)).status).toBe('cancelled');
    expect((await runWhen(t, second.id)).status).toBe('cancelled');
    await waitFor(async () => !alive(running.pid), 'the process to be gone');
    const wakeups = await t.sql.query('select status from plugin_runtime.wakeups where agent_id = $1', [agent.id]);
    expect(wakeups.rows.map((row: any) => row.status)).toEqual(['cancelled', 'cancelled']);
    const refused = await t.api.post(`/api/agents/${agent.id}/wakeup`, {});
    expect([refused.status, refused.body.code, refused.body.details]).toEqual([409, 'agent_not_invokable', { scopeType: 'agent', scopeId: agent.id, status: 'paused' }]);
  });
});

// A hard stop crosses several asynchronous steps (usage lines read from the log, the costs
// service, the stop, the process's end reported back); on a loaded machine they take longer
// than one test's default 30 s, so these two wait up to 90 s for the run's end.
const HARD_STOP_MS = 90_000;

describe('budget hard stops mid-run', () => {
  it("an agent's hard stop crossed by a usage report ends the run at once and blocks new wakes naming the agent", async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'spender.cjs'), { env: { SPEND_CENTS: '4' } });
    expect((await t.api.patch(`/api/agents/${agent.id}/budgets`, { budgetMonthlyCents: 10 })).status).toBe(200);
    const { run: queued } = await wakeOk(t.api, agent.id);
    const run = await runWhen(t, queued.id, undefined, HARD_STOP_MS);
    expect(run).toMatchObject({ status: 'cancelled' });
    expect(run.cancelReason).toMatch(/budget_hard_stop|agent_paused/);
    // The report that crossed the budget was recorded; the process did not keep spending. Usage
    // recorded before the stop but delivered after it is still metered (after-stop.ts): the
    // count is taken once the deliveries have settled.
    await eventsSettled(t);
    const costs = await costEventsOf(run.id);
    expect(costs.length).toBeGreaterThanOrEqual(3);
    expect(costs.length).toBeLessThan(15);
    const settledCount = costs.length;
    await eventsSettled(t);
    expect((await costEventsOf(run.id)).length).toBe(settledCount);
    const refused = await t.api.post(`/api/agents/${agent.id}/wakeup`, {});
    expect([refused.status, refused.body.code, refused.body.details]).toEqual([409, 'budget_blocked', { scopeType: 'agent', scopeId: agent.id }]);
  }, HARD_STOP_MS + 10_000);

  it("a project's hard stop ends the runs bound to it and refuses wakes on its issues, naming the project", async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'spender.cjs'), { env: { SPEND_CENTS: '5' } });
    const project = (await t.api.post(`/api/companies/${company.id}/projects`, { name: 'Capped' })).body;
    const policy = await t.api.post(`/api/companies/${company.id}/budgets/policies`, { scopeType: 'project', scopeId: project.id, amount: 10 });
    expect(policy.status, policy.text).toBeLessThan(300);
    const issue = await createIssue({ title: 'Spend here', projectId: project.id });
    const { run: queued } = await wakeOk(t.api, agent.id, { payload: { issueId: issue.id } });
    const run = await runWhen(t, queued.id, undefined, HARD_STOP_MS);
    expect(run).toMatchObject({ status: 'cancelled', cancelReason: 'budget_hard_stop_project', projectId: project.id });
    expect(alive(run.pid ?? 0)).toBe(false);
    await eventsSettled(t);
    const refused = await t.api.post(`/api/agents/${agent.id}/wakeup`, { payload: { issueId: issue.id } });
    expect([refused.status, refused.body.code, refused.body.details]).toEqual([409, 'budget_blocked', { scopeType: 'project', scopeId: project.id }]);
    // The agent itself is not stopped: a wake without that issue runs.
    const other = await wakeOk(t.api, agent.id, { reason: 'elsewhere' });
    expect(other.status).toBe('queued');
    await t.api.post(`/api/heartbeat-runs/${other.run.id}/cancel`);
  }, HARD_STOP_MS + 10_000);
});
