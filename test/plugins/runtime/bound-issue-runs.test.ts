import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type Api, type TestKernel } from '../../support/harness.ts';
import { agentScripts, processAgent, runWhen, waitFor, wakeOk } from './helpers.ts';

/**
 * GET /api/issues/{issueId}/runs finds the runs bound to the issue by their context snapshot
 * (a wakeup's payload.issueId, kept with the run in the ledger), before the run has checked the
 * issue out or written anything about it, once each, and in the issue's company only.
 */
let t: TestKernel;
let company: any;
let other: any;
let scripts: string;
let tokens: string;
let outsider: Api;

beforeAll(async () => {
  scripts = await agentScripts();
  tokens = await mkdtemp(join(tmpdir(), 'keel-bound-runs-'));
  // The agent runs as the unprivileged agent user and leaves its token here.
  await chmod(tokens, 0o777);
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  company = await createCompany(t.api, { name: 'Bound Runs Co' });
  other = await createCompany(t.api, { name: 'Other Runs Co' });
  outsider = t.api.as(await createAgentKey(t.api, (await createAgent(t.api, other.id)).id));
});
afterAll(async () => {
  await t?.stop();
  if (tokens) await rm(tokens, { recursive: true, force: true });
});

const runsOf = async (issueId: string, api: Api = t.api) => {
  const res = await api.get(`/api/issues/${issueId}/runs`);
  expect(res.status, res.text).toBe(200);
  return res.body as Array<{ runId: string }>;
};

describe('runs bound to an issue by payload.issueId', () => {
  it('lists the run at once, before any checkout or activity, and once after it checks the issue out', async () => {
    const tokenFile = join(tokens, 'token');
    const agent = await processAgent(t.api, company.id, join(scripts, 'checkout-hang.cjs'), { env: { TOKEN_FILE: tokenFile } });
    const issue = (await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Bound work' })).body;
    const unrelated = (await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Unrelated' })).body;
    const woken = await wakeOk(t.api, agent.id, { payload: { issueId: issue.id } });
    const runId = woken.run.id;

    const listed = await runsOf(issue.id);
    // Found through the binding alone unless the agent was quicker: then checkout or activity name it too.
    expect(listed.map((run) => run.runId)).toEqual([runId]);
    expect(listed[0]).toMatchObject({ runId, agentId: agent.id, invocationSource: 'on_demand' });
    expect(await runsOf(unrelated.id)).toEqual([]);

    await waitFor(async () => existsSync(tokenFile) && (await t.api.get(`/api/issues/${issue.id}`)).body.checkoutRunId === runId, 'the agent to check out its issue');
    expect((await runsOf(issue.id)).map((run) => run.runId)).toEqual([runId]);
    await t.api.post(`/api/heartbeat-runs/${runId}/cancel`);
    await runWhen(t, runId);
    expect((await runsOf(issue.id)).map((run) => run.runId)).toEqual([runId]);
  });

  it('lists a bound run that never checked the issue out nor wrote activity on it, newest first with the others', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'hang.cjs'));
    const issue = (await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Quiet work' })).body;
    const first = await wakeOk(t.api, agent.id, { payload: { issueId: issue.id } });
    await t.api.post(`/api/heartbeat-runs/${first.run.id}/cancel`);
    await runWhen(t, first.run.id);
    // The longest reason a wakeup takes: the snapshot holds ids and keys only, so it never outgrows the ledger's bound.
    const second = await wakeOk(t.api, agent.id, { payload: { issueId: issue.id }, reason: 'é'.repeat(2000) });
    expect(second.status).toBe('queued');
    // Neither run touched the issue: no checkout, no activity entry of the issue names them.
    const touched = await t.sql.query(`select count(*)::int as n from activity_log where entity_type = 'issue' and entity_id = $1 and run_id is not null`, [issue.id]);
    expect(touched.rows[0].n).toBe(0);
    expect((await t.api.get(`/api/issues/${issue.id}`)).body.checkoutRunId).toBeNull();
    expect((await runsOf(issue.id)).map((run) => run.runId)).toEqual([second.run.id, first.run.id]);
    await t.api.post(`/api/heartbeat-runs/${second.run.id}/cancel`);
    await runWhen(t, second.run.id);
  });

  it("answers a run's usage, result and log size from the runtime, as its heartbeat run has them", async () => {
    // Reports usage and a result, then ends: the runtime meters the one and keeps the other; the ledger keeps neither.
    const script = join(scripts, 'outcome.cjs');
    await writeFile(script, `console.log(JSON.stringify({ type: 'service.usage', provider: 'example', model: 'outcome', inputTokens: 12, outputTokens: 3, costCents: 2 }));
      console.log(JSON.stringify({ type: 'service.result', result: { answer: 42 } }));`, { mode: 0o644 });
    const agent = await processAgent(t.api, company.id, script);
    const issue = (await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Measured work' })).body;
    const woken = await wakeOk(t.api, agent.id, { payload: { issueId: issue.id } });
    const run = await runWhen(t, woken.run.id);
    expect(run).toMatchObject({ status: 'succeeded', resultJson: { answer: 42 }, usageJson: expect.objectContaining({ inputTokens: 12, outputTokens: 3, costCents: 2 }) });
    expect(run.logBytes).toBeGreaterThan(0);
    const [listed] = await runsOf(issue.id) as any[];
    expect(listed).toMatchObject({ runId: woken.run.id, status: 'succeeded', resultJson: run.resultJson, usageJson: run.usageJson, logBytes: run.logBytes });
    // The process facts are the executor's, read from the execution, not copied into the runtime's row.
    const { rows: [execution] } = await t.sql.query('select pid, exit_code, signal, log_bytes, log_sha256 from executions where id = $1', [run.executionId]);
    expect(run).toMatchObject({ pid: execution.pid, exitCode: 0, signal: null, logBytes: Number(execution.log_bytes), logSha256: execution.log_sha256 });
    expect(run.pid).toEqual(expect.any(Number));
    expect(run.logSha256).toEqual(expect.any(String));
    const { rows: [copied] } = await t.sql.query('select pid, exit_code, signal, http_status, log_bytes, log_sha256 from plugin_runtime.runs where id = $1', [run.id]);
    expect(copied).toEqual({ pid: null, exit_code: null, signal: null, http_status: null, log_bytes: '0', log_sha256: null });
    const listedRun = (await t.api.get(`/api/companies/${company.id}/heartbeat-runs?agentId=${agent.id}`)).body.runs[0];
    expect(listedRun).toMatchObject({ id: run.id, pid: run.pid, exitCode: 0, logBytes: run.logBytes, logSha256: run.logSha256 });
    // The ledger keeps no outcome of its own.
    const columns = await t.sql.query(`select column_name from information_schema.columns where table_schema = 'public' and table_name = 'runs' and column_name in ('usage_json', 'result_json')`);
    expect(columns.rows).toEqual([]);
  });

  it('answers the runs without usage, result and log size while the runtime plugin is disabled, as before', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'quick.cjs'));
    const issue = (await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Work while the runtime is off' })).body;
    const woken = await wakeOk(t.api, agent.id, { payload: { issueId: issue.id } });
    const run = await runWhen(t, woken.run.id);
    expect(run.logBytes).toBeGreaterThan(0);
    expect((await t.api.post('/api/plugins/runtime/disable', {})).status).toBe(200);
    try {
      const [listed] = await runsOf(issue.id) as any[];
      expect(listed).toMatchObject({ runId: woken.run.id, status: 'succeeded', usageJson: null, resultJson: null, logBytes: null });
    } finally {
      expect((await t.api.post('/api/plugins/runtime/enable', {})).status).toBe(200);
    }
  });

  it("keeps a run of another company out, even one whose context names this company's issue", async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'hang.cjs'));
    const issue = (await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Private work' })).body;
    const woken = await wakeOk(t.api, agent.id, { payload: { issueId: issue.id } });
    // A ledger run of the other company naming this issue in its context (no route can write
    // one: a wakeup's issue must be of the agent's company) is still not this issue's.
    const foreignAgent = await createAgent(t.api, other.id);
    const { rows: [foreign] } = await t.sql.query(
      `insert into runs (company_id, agent_id, status, context) values ($1, $2, 'succeeded', $3::jsonb) returning id`,
      [other.id, foreignAgent.id, JSON.stringify({ issueId: issue.id })]);
    expect((await runsOf(issue.id)).map((run) => run.runId)).toEqual([woken.run.id]);
    expect((await runsOf(issue.id)).map((run) => run.runId)).not.toContain(foreign.id);
    // The other company's agent cannot read the issue's runs at all.
    expect((await outsider.get(`/api/issues/${issue.id}/runs`)).status).toBe(403);
    await t.api.post(`/api/heartbeat-runs/${woken.run.id}/cancel`);
    await runWhen(t, woken.run.id);
  });
});
