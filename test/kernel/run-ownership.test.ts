import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startPeerKernel, startTestKernel, type ApiResponse, type TestKernel } from '../support/harness.ts';
import { addMember, boardToken, createAgent, createAgentKey, createCompany, insertUser } from '../support/fixtures.ts';
import { eventsSettled } from '../support/events.ts';
import { installAndEnable } from '../support/plugins.ts';

/**
 * A run id sent as X-Service-Run-Id is the caller's own: agent A's key naming agent B's live run
 * (the attack: checkout recorded B's run, release let A drop B's lock) is refused with 403
 * `run_not_owned` on every route that would use it, and nothing is written. Through HTTP
 * against a real kernel, its first-party plugins and the run ledger in PostgreSQL.
 */
const ECHO = fileURLToPath(new URL('../host/fixtures/echo', import.meta.url));
let t: TestKernel;
let company: any;
let agentA: any;
let agentB: any;
let keyA: string;

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  await installAndEnable(t, ECHO);
  company = await createCompany(t.api, { name: 'Run Owners' });
  agentA = await createAgent(t.api, company.id, { name: 'Agent A' });
  agentB = await createAgent(t.api, company.id, { name: 'Agent B' });
  keyA = await createAgentKey(t.api, agentA.id);
});
afterAll(async () => { await t?.stop(); });

/** Opens a live run in the ledger, as the runtime does when it wakes an agent; answers its id and token. */
async function openRun(agentId: string, companyId = company.id): Promise<{ runId: string; token: string }> {
  const { runs, db } = t.kernel.services;
  const opened = await db.transaction((tx) => runs.open(tx, { agentId, companyId, invocationSource: 'on_demand' }));
  return { runId: opened.run.runId, token: opened.token };
}

async function closeRun(runId: string): Promise<void> {
  const { runs, db } = t.kernel.services;
  await db.transaction((tx) => runs.close(tx, runId, { status: 'succeeded' }));
}

async function createIssue(title: string, companyId = company.id): Promise<any> {
  const res = await t.api.post(`/api/companies/${companyId}/issues`, { title });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

async function issueRow(issueId: string): Promise<{ status: string; assignee_agent_id: string | null; checkout_run_id: string | null; execution_run_id: string | null }> {
  const { rows } = await t.sql.query('select status, assignee_agent_id, checkout_run_id, execution_run_id from plugin_work.issues where id = $1', [issueId]);
  return rows[0];
}

/** Activity written by an agent, or naming a run: what a refused request must not add. */
async function activityOf(agentId: string, runId: string): Promise<number> {
  await eventsSettled(t);
  const { rows } = await t.sql.query('select count(*)::int as n from activity_log where actor_id = $1 or agent_id = $1::uuid or run_id = $2::uuid', [agentId, runId]);
  return rows[0].n;
}

function expectRunNotOwned(res: ApiResponse): void {
  expect(res.status, res.text).toBe(403);
  expect(res.body).toMatchObject({ code: 'run_not_owned', error: expect.any(String) });
  expect(res.requestId).toEqual(expect.any(String));
}

const as = (token: string, runId: string) => ({ token, headers: { 'X-Service-Run-Id': runId } });

describe("agent A's key with agent B's live run id", () => {
  it('checkout is 403 run_not_owned: the issue is not checked out, no activity is written', async () => {
    const runB = await openRun(agentB.id);
    const issue = await createIssue('Not yours to take');
    const before = await issueRow(issue.id);
    const activity = await activityOf(agentA.id, runB.runId);

    expectRunNotOwned(await t.api.post(`/api/issues/${issue.id}/checkout`, { agentId: agentA.id }, as(keyA, runB.runId)));
    expect(await issueRow(issue.id)).toEqual(before);
    expect(before.checkout_run_id).toBeNull();
    expect(await activityOf(agentA.id, runB.runId)).toBe(activity);
  });

  it("release is 403 run_not_owned: B's checkout stays, no activity is written", async () => {
    const runB = await openRun(agentB.id);
    const issue = await createIssue('Held by B');
    const taken = await t.api.post(`/api/issues/${issue.id}/checkout`, { agentId: agentB.id }, { token: runB.token });
    expect(taken.status, taken.text).toBe(200);
    const held = await issueRow(issue.id);
    expect(held).toMatchObject({ status: 'in_progress', assignee_agent_id: agentB.id, checkout_run_id: runB.runId });
    const activity = await activityOf(agentA.id, randomUUID());

    expectRunNotOwned(await t.api.post(`/api/issues/${issue.id}/release`, {}, as(keyA, runB.runId)));
    expect(await issueRow(issue.id)).toEqual(held);
    expect(await activityOf(agentA.id, randomUUID())).toBe(activity);
  });

  it('comment create is 403 run_not_owned: no comment is stored', async () => {
    const runB = await openRun(agentB.id);
    const issue = await createIssue('Commented on');
    const activity = await activityOf(agentA.id, runB.runId);

    expectRunNotOwned(await t.api.post(`/api/issues/${issue.id}/comments`, { body: 'As B' }, as(keyA, runB.runId)));
    const { rows } = await t.sql.query('select count(*)::int as n from plugin_work.issue_comments where issue_id = $1', [issue.id]);
    expect(rows[0].n).toBe(0);
    expect((await t.api.get(`/api/issues/${issue.id}/comments`)).body).toEqual([]);
    expect(await activityOf(agentA.id, runB.runId)).toBe(activity);
  });

  it('cost event create is 403 run_not_owned: no cost event, no spend', async () => {
    const runB = await openRun(agentB.id);
    const activity = await activityOf(agentA.id, runB.runId);
    const body = { agentId: agentA.id, provider: 'alpha', model: 'alpha-large', costCents: 25, occurredAt: new Date().toISOString() };

    expectRunNotOwned(await t.api.post(`/api/companies/${company.id}/cost-events`, body, as(keyA, runB.runId)));
    const { rows } = await t.sql.query('select count(*)::int as n from plugin_costs.cost_events where agent_id = $1', [agentA.id]);
    expect(rows[0].n).toBe(0);
    expect((await t.api.get(`/api/agents/${agentA.id}`)).body.spentMonthlyCents).toBe(0);
    expect(await activityOf(agentA.id, runB.runId)).toBe(activity);
  });

  it('a plugin route is 403 run_not_owned before the plugin is called, and so is /api/mcp', async () => {
    const runB = await openRun(agentB.id);
    expectRunNotOwned(await t.api.get('/api/plugins/echo/whoami', as(keyA, runB.runId)));
    // The MCP endpoint resolves its caller like every route, and its core tools call back as the caller.
    const mcp = await t.api.request('POST', '/api/mcp', {
      ...as(keyA, runB.runId), headers: { 'X-Service-Run-Id': runB.runId, accept: 'application/json, text/event-stream' },
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    });
    expectRunNotOwned(mcp);
  });

  it("an agent JWT bound to A's run naming B's run is refused, not switched to B's run", async () => {
    const runA = await openRun(agentA.id);
    const runB = await openRun(agentB.id);
    const issue = await createIssue('Token and header disagree');
    expectRunNotOwned(await t.api.post(`/api/issues/${issue.id}/checkout`, { agentId: agentA.id }, as(runA.token, runB.runId)));
    expect((await issueRow(issue.id)).checkout_run_id).toBeNull();
    // Naming the token's own run is the same call as naming none.
    const same = await t.api.post(`/api/issues/${issue.id}/checkout`, { agentId: agentA.id }, as(runA.token, runA.runId.toUpperCase()));
    expect(same.status, same.text).toBe(200);
    expect(same.body.checkoutRunId).toBe(runA.runId);
  });
});

describe("the caller's own run, and runs that are not", () => {
  it("A's own live run is accepted and recorded on the checkout, its activity and the plugin invocation", async () => {
    const runA = await openRun(agentA.id);
    const issue = await createIssue('Mine to take');
    const res = await t.api.post(`/api/issues/${issue.id}/checkout`, { agentId: agentA.id }, as(keyA, runA.runId));
    expect(res.status, res.text).toBe(200);
    expect(await issueRow(issue.id)).toMatchObject({ assignee_agent_id: agentA.id, checkout_run_id: runA.runId, execution_run_id: runA.runId });
    const { rows } = await t.sql.query("select run_id, actor_id from activity_log where action = 'issue.checked_out' and entity_id = $1", [issue.id]);
    expect(rows).toEqual([{ run_id: runA.runId, actor_id: agentA.id }]);

    const comment = await t.api.post(`/api/issues/${issue.id}/comments`, { body: 'From my run' }, as(keyA, runA.runId));
    expect(comment.status, comment.text).toBe(201);
    // An agent key naming its run: the run is checked live and its own, but the key has not proved to be that run's process.
    const who = await t.api.get('/api/plugins/echo/whoami', as(keyA, runA.runId));
    expect(who.status, who.text).toBe(200);
    expect(who.body.invocation).toMatchObject({ runId: runA.runId, runVerified: false, actor: { type: 'agent', agentId: agentA.id } });
  });

  it("A's finished run is 403 run_not_owned", async () => {
    const runA = await openRun(agentA.id);
    await closeRun(runA.runId);
    const issue = await createIssue('After the run');
    expectRunNotOwned(await t.api.post(`/api/issues/${issue.id}/checkout`, { agentId: agentA.id }, as(keyA, runA.runId)));
    expectRunNotOwned(await t.api.post(`/api/issues/${issue.id}/comments`, { body: 'Late' }, as(keyA, runA.runId)));
    expect(await issueRow(issue.id)).toMatchObject({ checkout_run_id: null, assignee_agent_id: null });
  });

  it("another company's live run, and a run id the ledger does not know, are 403 run_not_owned", async () => {
    const other = await createCompany(t.api, { name: 'Elsewhere' });
    const foreign = await openRun((await createAgent(t.api, other.id)).id, other.id);
    const issue = await createIssue('Foreign run');
    for (const runId of [foreign.runId, randomUUID()]) {
      expectRunNotOwned(await t.api.post(`/api/issues/${issue.id}/checkout`, { agentId: agentA.id }, as(keyA, runId)));
      expectRunNotOwned(await t.api.patch(`/api/issues/${issue.id}`, { priority: 'low' }, as(keyA, runId)));
    }
    expect(await issueRow(issue.id)).toMatchObject({ checkout_run_id: null, assignee_agent_id: null });
    expect((await t.api.get(`/api/issues/${issue.id}`)).body.priority).not.toBe('low');
  });

  it('a header that is not a uuid names no run: it is ignored, as documented', async () => {
    const issue = await createIssue('Junk header');
    const res = await t.api.post(`/api/issues/${issue.id}/comments`, { body: 'No run' }, as(keyA, 'not-a-uuid'));
    expect(res.status, res.text).toBe(201);
    const { rows } = await t.sql.query('select run_id from plugin_work.issue_comments where id = $1', [res.body.id]);
    expect(rows[0].run_id).toBeNull();
  });
});

describe('cost attribution in the body', () => {
  it("an agent's cost event names only the run the call acts for as heartbeatRunId", async () => {
    const runA = await openRun(agentA.id);
    const runB = await openRun(agentB.id);
    const post = (runId: string, options: { token: string; headers?: Record<string, string> }) => t.api.post(`/api/companies/${company.id}/cost-events`,
      { agentId: agentA.id, provider: 'alpha', model: 'alpha-large', costCents: 7, occurredAt: new Date().toISOString(), heartbeatRunId: runId }, options);
    const stored = async (runId: string) => (await t.sql.query('select count(*)::int as n from plugin_costs.cost_events where heartbeat_run_id = $1', [runId])).rows[0].n;

    // B's run in the body: from A's own run (header or token) and from a bare key alike.
    for (const options of [as(keyA, runA.runId), { token: runA.token }, { token: keyA }]) {
      expectRunNotOwned(await post(runB.runId, options));
    }
    expect(await stored(runB.runId)).toBe(0);
    const accepted = await post(runA.runId, as(keyA, runA.runId));
    expect(accepted.status, accepted.text).toBe(201);
    expect(await stored(runA.runId)).toBe(1);
  });
});

describe('board actors', () => {
  it('the local board names a live run: recorded; a finished one is refused and writes nothing', async () => {
    const run = await openRun(agentB.id);
    const activity = { actorId: 'ops', action: 'test.ran', entityType: 'check', entityId: 'board-run' };
    const res = await t.api.post(`/api/companies/${company.id}/activity`, activity, { headers: { 'X-Service-Run-Id': run.runId } });
    expect(res.status, res.text).toBe(201);
    expect(res.body.runId).toBe(run.runId);

    await closeRun(run.runId);
    const refused = await t.api.post(`/api/companies/${company.id}/activity`, { ...activity, entityId: 'after-close' }, { headers: { 'X-Service-Run-Id': run.runId } });
    expectRunNotOwned(refused);
    const { rows } = await t.sql.query("select count(*)::int as n from activity_log where entity_id = 'after-close'");
    expect(rows[0].n).toBe(0);
  });

  it('a board user names only runs of companies it belongs to', async () => {
    const user = await insertUser(t);
    await addMember(t, company.id, user, 'owner');
    const token = await boardToken(t, user);
    const other = await createCompany(t.api, { name: 'Not a member' });
    const foreign = await openRun((await createAgent(t.api, other.id)).id, other.id);
    const own = await openRun(agentB.id);
    const activity = { actorId: 'ops', action: 'test.ran', entityType: 'check', entityId: 'member-run' };

    expectRunNotOwned(await t.api.post(`/api/companies/${company.id}/activity`, activity, as(token, foreign.runId)));
    const { rows } = await t.sql.query("select count(*)::int as n from activity_log where entity_id = 'member-run'");
    expect(rows[0].n).toBe(0);
    const accepted = await t.api.post(`/api/companies/${company.id}/activity`, activity, as(token, own.runId));
    expect(accepted.status, accepted.text).toBe(201);
    expect(accepted.body.runId).toBe(own.runId);
  });
});

describe('several kernel processes on one database', () => {
  it('a run opened through one process is accepted by another, and refused there once it is closed', async () => {
    const peer = await startPeerKernel(t);
    try {
      const run = await openRun(agentA.id);
      // The peer has never seen the run: it reads the ledger, and now caches the run as live.
      const before = await peer.api.get('/api/agents/me', as(keyA, run.runId));
      expect(before.status, before.text).toBe(200);
      await closeRun(run.runId);
      // The close's notification evicts the peer's cached entry; sync() returns once it is applied.
      await peer.kernel.services.authCache.sync();
      expectRunNotOwned(await peer.api.get('/api/agents/me', as(keyA, run.runId)));
    } finally {
      await peer.stop();
    }
  });
});
