import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';

const BASE = '/api/instance/settings/experimental/issue-graph-liveness-auto-recovery';

let t: TestKernel;
beforeAll(async () => { t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS }); });
afterAll(async () => { await t?.stop(); });

async function issue(companyId: string, body: Record<string, unknown>): Promise<{ id: string; identifier: string }> {
  const res = await t.api.post(`/api/companies/${companyId}/issues`, body);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

async function issueCount(): Promise<number> {
  return (await t.sql.query('select count(*)::int as n from plugin_work.issues')).rows[0].n;
}

/** One company with a stalled issue of every kind, one healthy and one finished; ids by name. */
async function stalledCompany() {
  const company = await createCompany(t.api);
  const ceo = await createAgent(t.api, company.id, { name: 'Chief', role: 'ceo' });
  const manager = await createAgent(t.api, company.id, { name: 'Manager', reportsTo: ceo.id });
  const worker = await createAgent(t.api, company.id, { name: 'Worker', reportsTo: manager.id });
  const sleeper = await createAgent(t.api, company.id, { name: 'Sleeper', reportsTo: manager.id });
  const unassigned = await issue(company.id, { title: 'Nobody does this', status: 'todo' });
  const backlog = await issue(company.id, { title: 'Someday', status: 'backlog', assigneeAgentId: worker.id });
  const cancelled = await issue(company.id, { title: 'Dropped', assigneeAgentId: sleeper.id });
  expect((await t.api.patch(`/api/issues/${cancelled.id}`, { status: 'cancelled' })).status).toBe(200);
  const asleep = await issue(company.id, { title: 'Waits for the sleeper', assigneeAgentId: sleeper.id });
  const moving = await issue(company.id, { title: 'In hand', status: 'in_progress', assigneeAgentId: worker.id });
  const stalled = {
    unassigned: await issue(company.id, { title: 'A', assigneeAgentId: worker.id, blockedByIssueIds: [unassigned.id] }),
    backlog: await issue(company.id, { title: 'B', assigneeAgentId: worker.id, blockedByIssueIds: [backlog.id] }),
    cancelled: await issue(company.id, { title: 'C', assigneeAgentId: worker.id, blockedByIssueIds: [cancelled.id] }),
    asleep: await issue(company.id, { title: 'D', assigneeAgentId: worker.id, blockedByIssueIds: [asleep.id] }),
  };
  await issue(company.id, { title: 'Healthy', assigneeAgentId: worker.id, blockedByIssueIds: [moving.id] });
  await issue(company.id, { title: 'Finished', status: 'done', blockedByIssueIds: [unassigned.id] });
  expect((await t.api.post(`/api/agents/${sleeper.id}/pause`, {})).status).toBe(200);
  return { company, agents: { ceo, manager, worker, sleeper }, blockers: { unassigned, backlog, cancelled, asleep }, stalled };
}

let first: Awaited<ReturnType<typeof stalledCompany>>;
let second: Awaited<ReturnType<typeof stalledCompany>>;

describe('issue-graph liveness auto-recovery', () => {
  it('previews every finding with its owner across companies and changes nothing', async () => {
    first = await stalledCompany();
    second = await stalledCompany();
    const before = await issueCount();
    // Entries the board's own calls write: the runtime's wakes on the setup's assignments write theirs on their own time.
    const boardEntries = async () => (await t.sql.query("select count(*)::int as n from activity_log where actor_type = 'user'")).rows[0].n;
    const activity = await boardEntries();
    const res = await t.api.post(`${BASE}/preview`, {});
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ dryRun: true, lookbackHours: 24, counts: { findings: 8, escalationsCreated: 8, escalationsExisting: 0 } });
    const mine = res.body.findings.filter((f: { companyId: string }) => f.companyId === first.company.id);
    const { agents, blockers, stalled } = first;
    expect(mine.map((f: Record<string, unknown>) => [f.kind, f.issueId, f.blockerIssueId, f.ownerAgentId, f.outcome, f.escalationIssueId])).toEqual([
      ['blocked_by_unassigned_issue', stalled.unassigned.id, blockers.unassigned.id, agents.ceo.id, 'would_create', null],
      ['blocked_by_backlog_issue', stalled.backlog.id, blockers.backlog.id, agents.worker.id, 'would_create', null],
      ['blocked_by_cancelled_issue', stalled.cancelled.id, blockers.cancelled.id, agents.manager.id, 'would_create', null],
      ['blocked_by_uninvokable_assignee', stalled.asleep.id, blockers.asleep.id, agents.manager.id, 'would_create', null],
    ]);
    expect(await issueCount()).toBe(before);
    expect(await boardEntries()).toBe(activity);
  });

  it('runs with the same counts and findings as the preview, one escalation per finding for its owner; a second run creates nothing', async () => {
    const preview = await t.api.post(`${BASE}/preview`, {});
    const before = await issueCount();
    const run = await t.api.post(`${BASE}/run`, {});
    expect(run.status, run.text).toBe(200);
    expect(run.body.dryRun).toBe(false);
    expect(run.body.counts).toEqual(preview.body.counts);
    const ids = (body: { findings: Array<Record<string, unknown>> }) => body.findings.map((f) => [f.companyId, f.kind, f.issueId, f.blockerIssueId, f.ownerAgentId]);
    expect(ids(run.body)).toEqual(ids(preview.body));
    expect(await issueCount()).toBe(before + 8);
    for (const finding of run.body.findings) {
      expect(finding.outcome).toBe('created');
      const { rows } = await t.sql.query('select * from plugin_work.issues where id = $1', [finding.escalationIssueId]);
      expect(rows[0]).toMatchObject({ company_id: finding.companyId, assignee_agent_id: finding.ownerAgentId, status: 'todo', priority: 'high', origin_kind: 'liveness_escalation', identifier: finding.escalationIdentifier });
      expect(rows[0].title).toContain(finding.blockerIdentifier);
    }
    const created = (await t.sql.query(`select count(*)::int as n from activity_log where action = 'issue.created' and details ? 'liveness'`)).rows[0].n;
    expect(created).toBe(8);

    const again = await t.api.post(`${BASE}/run`, {});
    expect(again.status).toBe(200);
    expect(again.body.counts).toEqual({ findings: 8, escalationsCreated: 0, escalationsExisting: 8 });
    expect(again.body.findings.map((f: Record<string, unknown>) => f.escalationIssueId)).toEqual(run.body.findings.map((f: Record<string, unknown>) => f.escalationIssueId));
    expect(await issueCount()).toBe(before + 8);
    const previewAfter = await t.api.post(`${BASE}/preview`, {});
    expect(previewAfter.body.counts).toEqual(again.body.counts);
    expect(previewAfter.body.findings.every((f: Record<string, unknown>) => f.outcome === 'existing')).toBe(true);
  });

  it('answers 8 concurrent previews alike, and 8 concurrent runs make each escalation once', async () => {
    const third = await stalledCompany();
    const mine = (body: { findings: Array<Record<string, unknown>> }) => body.findings.filter((f) => f.companyId === third.company.id);
    const previews = await Promise.all(Array.from({ length: 8 }, () => t.api.post(`${BASE}/preview`, {})));
    for (const res of previews) {
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual(previews[0]!.body);
    }
    expect(mine(previews[0]!.body).map((f) => f.outcome)).toEqual(['would_create', 'would_create', 'would_create', 'would_create']);
    const before = await issueCount();
    const runs = await Promise.all(Array.from({ length: 8 }, () => t.api.post(`${BASE}/run`, {})));
    for (const res of runs) expect(res.status, res.text).toBe(200);
    // Runs of one company take turns: the first makes the 4 escalations, the others find them.
    const outcomes = runs.flatMap((res) => mine(res.body).map((f) => f.outcome));
    expect(outcomes.filter((o) => o === 'created')).toHaveLength(4);
    expect(outcomes.filter((o) => o === 'existing')).toHaveLength(28);
    expect(runs.reduce((n, res) => n + res.body.counts.escalationsCreated, 0)).toBe(4);
    const escalationIds = (res: { body: { findings: Array<Record<string, unknown>> } }) => mine(res.body).map((f) => f.escalationIssueId);
    for (const res of runs) {
      expect(escalationIds(res)).toEqual(escalationIds(runs[0]!));
      expect(res.body.counts.findings).toBe(runs[0]!.body.counts.findings);
    }
    expect(await issueCount()).toBe(before + 4);
  });

  it('calls the plugin only in companies with a candidate: an idle company gets no call and no entry from a run', async () => {
    const idle = await createCompany(t.api);
    const busy = await stalledCompany();
    const runEntries = async (companyId: string) => (await t.sql.query(
      `select count(*)::int as n from activity_log where company_id = $1 and action = 'plugin.work.liveness-recovery-run'`, [companyId])).rows[0].n;
    const preview = await t.api.post(`${BASE}/preview`, {});
    const run = await t.api.post(`${BASE}/run`, {});
    expect(run.status, run.text).toBe(200);
    expect(run.body.counts).toEqual(preview.body.counts);
    expect(run.body.findings.filter((f: { companyId: string }) => f.companyId === busy.company.id)).toHaveLength(4);
    // The second run finds the escalations and writes nothing of its own: the host's entry records it where it ran.
    expect((await t.api.post(`${BASE}/run`, {})).status).toBe(200);
    expect(await runEntries(busy.company.id)).toBe(1);
    expect(await runEntries(idle.id)).toBe(0);
  });

  it('leaves out an archived company with findings: the plugin\'s selection narrows the companies, never widens them', async () => {
    const archived = await stalledCompany();
    const archiving = await t.api.patch(`/api/companies/${archived.company.id}`, { status: 'archived' });
    expect(archiving.status, archiving.text).toBe(200);
    const before = await issueCount();
    for (const path of [`${BASE}/preview`, `${BASE}/run`]) {
      const res = await t.api.post(path, {});
      expect(res.status, res.text).toBe(200);
      expect(res.body.findings.some((f: { companyId: string }) => f.companyId === archived.company.id)).toBe(false);
    }
    expect(await issueCount()).toBe(before);
  });

  it('looks back lookbackHours, by default the experimental setting', async () => {
    const company = await createCompany(t.api);
    const blocker = await issue(company.id, { title: 'Old and unowned', status: 'todo' });
    const waiting = await issue(company.id, { title: 'Old and waiting', blockedByIssueIds: [blocker.id], status: 'todo' });
    await t.sql.query(`update plugin_work.issues set updated_at = now() - interval '48 hours' where id = any($1)`, [[blocker.id, waiting.id]]);
    await t.sql.query(`update plugin_work.issue_blockers set created_at = now() - interval '48 hours' where issue_id = $1`, [waiting.id]);
    const isOld = (body: { findings: Array<{ issueId: string }> }) => body.findings.some((f) => f.issueId === waiting.id);
    expect(isOld((await t.api.post(`${BASE}/preview`, {})).body)).toBe(false);
    expect(isOld((await t.api.post(`${BASE}/preview`, { lookbackHours: 72 })).body)).toBe(true);
    expect((await t.api.patch('/api/instance/settings/experimental', { issueGraphLivenessAutoRecoveryLookbackHours: 100 })).status).toBe(200);
    const byDefault = await t.api.post(`${BASE}/preview`);
    expect(byDefault.status, byDefault.text).toBe(200);
    expect(byDefault.body.lookbackHours).toBe(100);
    expect(isOld(byDefault.body)).toBe(true);
    await t.api.patch('/api/instance/settings/experimental', { issueGraphLivenessAutoRecoveryLookbackHours: 24 });
  });

  it('runs by itself as a scheduled job in every company, only while the experimental setting is on', async () => {
    const company = await createCompany(t.api);
    const blocker = await issue(company.id, { title: 'Unowned', status: 'todo' });
    const waiting = await issue(company.id, { title: 'Waiting', status: 'todo', blockedByIssueIds: [blocker.id] });
    const escalations = async () => (await t.sql.query(
      `select * from plugin_work.issues where company_id = $1 and origin_kind = 'liveness_escalation'`, [company.id])).rows;
    const trigger = async () => {
      const res = await t.api.post('/api/plugins/work/jobs/liveness-auto-recovery/trigger', {});
      expect(res.status, res.text).toBe(202);
      for (const deadline = Date.now() + 30_000; ;) {
        const runs = await t.api.get('/api/plugins/work/jobs/liveness-auto-recovery/runs');
        const run = runs.body.find((r: { id: string }) => r.id === res.body.id);
        if (run && run.status !== 'running') return run;
        if (Date.now() > deadline) throw new Error('the job run did not finish');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    expect(await trigger()).toMatchObject({ status: 'succeeded' });
    expect(await escalations()).toHaveLength(0);
    expect((await t.api.patch('/api/instance/settings/experimental', { enableIssueGraphLivenessAutoRecovery: true })).status).toBe(200);
    try {
      expect(await trigger()).toMatchObject({ status: 'succeeded' });
      const made = await escalations();
      expect(made).toHaveLength(1);
      expect(made[0].origin_id).toBe(`blocked_by_unassigned_issue:${waiting.id}:${blocker.id}`);
      expect(await trigger()).toMatchObject({ status: 'succeeded' });
      expect(await escalations()).toHaveLength(1);
    } finally {
      await t.api.patch('/api/instance/settings/experimental', { enableIssueGraphLivenessAutoRecovery: false });
    }
  });

  it('refuses bad bodies with 400 on both routes, writing nothing', async () => {
    const before = await issueCount();
    for (const path of [`${BASE}/preview`, `${BASE}/run`]) {
      for (const body of [{ lookbackHours: 0 }, { lookbackHours: 721 }, { lookbackHours: 1.5 }, { lookbackHours: '24' }, { lookbackHours: 24, apply: true }]) {
        const res = await t.api.post(path, body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body.code).toBe('validation_failed');
      }
    }
    expect(await issueCount()).toBe(before);
  });

  it('refuses agents with 403, even of a company with findings', async () => {
    const key = await createAgentKey(t.api, first.agents.ceo.id);
    const before = await issueCount();
    for (const path of [`${BASE}/preview`, `${BASE}/run`]) {
      const res = await t.api.post(path, {}, { token: key });
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('board_required');
    }
    expect(await issueCount()).toBe(before);
  });
});
