import { rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyActivityChains } from '../../kernel/activity/verify-chain.ts';
import { createAgent, createAgentKey, createCompany } from '../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable, pluginVariant } from '../support/plugins.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/kernel-rows', import.meta.url));
const ALL = ['http.routes', 'database.namespace.write', 'database.namespace.migrate', 'activity.write', 'agents.pause', 'companies.pause', 'budgets.write'];
let t: TestKernel;
let company: any;
let other: any;
let agent: any;
let foreignAgent: any;

const rows = (body: Record<string, unknown>, companyId = company.id) => t.api.post(`/api/plugins/kernel-rows/companies/${companyId}/rows`, body);
const statusEvents = async (agentId: string) =>
  (await t.sql.query("select payload from keel_events.outbox where name = 'agent.status_changed' and entity_id = $1 order by seq", [agentId])).rows.map((r: any) => r.payload);
const holds = async (scopeId: string) =>
  (await t.sql.query('select holder, reason from scope_holds where scope_id = $1 order by created_at, reason', [scopeId])).rows;
const activityCount = async (action: string, entityId: string) =>
  (await t.sql.query('select count(*)::int as n from activity_log where action = $1 and entity_id = $2', [action, entityId])).rows[0].n;

beforeAll(async () => {
  t = await startTestKernel();
  company = await createCompany(t.api);
  other = await createCompany(t.api);
  agent = await createAgent(t.api, company.id);
  foreignAgent = await createAgent(t.api, other.id);
  await installAndEnable(t, FIXTURE, ALL);
});
afterAll(async () => { await t?.stop(); });

describe('batch handlers', () => {
  it('answer every call of a group commit in one pass, each with its own answer and activity', async () => {
    const amounts = Array.from({ length: 150 }, (_, i) => (i % 30 === 5 ? 13 : i + 1));
    const responses = await Promise.all(amounts.map((amount) => t.api.post(`/api/plugins/kernel-rows/companies/${company.id}/entries`, { amount })));
    responses.forEach((res, i) => {
      if (amounts[i] === 13) expect([res.status, res.body.code]).toEqual([422, 'unlucky']);
      else expect([res.status, res.body.amount]).toEqual([201, amounts[i]]);
    });
    const good = amounts.filter((a) => a !== 13);
    const stats = (await t.api.get(`/api/plugins/kernel-rows/companies/${company.id}/stats`)).body;
    expect(stats.entries).toBe(good.length);
    expect(stats.total).toBe(good.reduce((a, b) => a + b, 0));
    expect(stats.transactions).toBeLessThan(good.length);
    expect(stats.largest).toBeGreaterThan(1);
    const logged = await t.sql.query("select count(*)::int as n from activity_log where company_id = $1 and action = 'entry.added'", [company.id]);
    expect(logged.rows[0].n).toBe(good.length);
    // Appended in bulk, each entry still carries its caller's identity and an unbroken chain.
    const actors = await t.sql.query("select distinct actor_type, details->>'plugin' as plugin, details->>'by' as by from activity_log where company_id = $1 and action = 'entry.added'", [company.id]);
    expect(actors.rows).toEqual([{ actor_type: 'user', plugin: 'kernel-rows', by: 'user' }]);
    const report = await verifyActivityChains(t.kernel.services.db, company.id);
    expect(report.firstBreak).toBeNull();
    expect(report.entries).toBeGreaterThan(good.length);
  });

  it('fall back to one call at a time when the handler throws, so one poisoned call fails alone', async () => {
    const target = await createCompany(t.api);
    const amounts = [...Array.from({ length: 40 }, (_, i) => i + 20), 666, ...Array.from({ length: 40 }, (_, i) => i + 100)];
    const responses = await Promise.all(amounts.map((amount) => t.api.post(`/api/plugins/kernel-rows/companies/${target.id}/entries`, { amount })));
    responses.forEach((res, i) => {
      if (amounts[i] === 666) expect([res.status, res.body.code]).toEqual([422, 'poison']);
      else expect(res.status, res.text).toBe(201);
    });
    const stats = (await t.api.get(`/api/plugins/kernel-rows/companies/${target.id}/stats`)).body;
    expect(stats.entries).toBe(80);
    expect(stats.total).toBe(amounts.filter((a) => a !== 666).reduce((a, b) => a + b, 0));
  });

  it('check a body field naming an agent against the route company before the plugin runs', async () => {
    const path = `/api/plugins/kernel-rows/companies/${company.id}/entries`;
    const foreign = await t.api.post(path, { amount: 1, agentId: foreignAgent.id });
    expect([foreign.status, foreign.body.code]).toEqual([404, 'agent_not_found']);
    const unknown = await t.api.post(path, { amount: 1, agentId: '00000000-0000-4000-8000-000000000000' });
    expect([unknown.status, unknown.body.code]).toEqual([404, 'agent_not_found']);
    const malformed = await t.api.post(path, { amount: 1, agentId: 'nope' });
    expect([malformed.status, malformed.body.code]).toEqual([404, 'agent_not_found']);
    expect((await t.api.post(path, { amount: 1, agentId: agent.id })).status).toBe(201);
  });

  it('resolve an agent path parameter to its company, with company scoping', async () => {
    const own = await t.api.get(`/api/plugins/kernel-rows/agents/${agent.id}/info`);
    expect(own.body).toEqual({ agentId: agent.id, companyId: company.id });
    expect((await t.api.get('/api/plugins/kernel-rows/agents/00000000-0000-4000-8000-000000000000/info')).status).toBe(404);
    const key = await createAgentKey(t.api, agent.id);
    const crossing = await t.api.as(key).get(`/api/plugins/kernel-rows/agents/${foreignAgent.id}/info`);
    expect(crossing.status).toBe(403);
  });
});

describe('the kernel\'s caches after a plugin\'s commit', () => {
  /** Counts the kernel's waits for its caches (the notifications of a commit) while `act` runs. */
  async function cacheWaits(act: () => Promise<void>): Promise<number> {
    const db = t.kernel.services.db;
    const wait = db.afterEveryCommit!;
    let waits = 0;
    db.afterEveryCommit = () => { waits++; return wait(); };
    try {
      await act();
    } finally {
      db.afterEveryCommit = wait;
    }
    return waits;
  }
  const entries = (body: Record<string, unknown>) => t.api.post(`/api/plugins/kernel-rows/companies/${company.id}/entries`, body);

  it('are waited for before the answer when the call wrote kernel rows', async () => {
    const subject = await createAgent(t.api, company.id);
    expect(await cacheWaits(async () => {
      expect((await rows({ op: 'pause-agent', agentId: subject.id, reason: 'budget_hard_stop' })).body).toEqual({ changed: true });
    })).toBe(1);
    expect(await cacheWaits(async () => {
      expect((await rows({ op: 'budget-agent', agentId: subject.id, cents: 900 })).body).toEqual({ updated: true });
    })).toBe(1);
    // A batch handler's call that pauses: the hold is written through the call's own ctx.
    const other = await createAgent(t.api, company.id);
    expect(await cacheWaits(async () => {
      expect((await entries({ amount: 77, agentId: other.id })).status).toBe(201);
    })).toBe(1);
    expect((await t.api.get(`/api/agents/${other.id}`)).body.status).toBe('paused');
  });

  it('are not waited for when the call wrote none: its own rows and activity only, or a failure', async () => {
    expect(await cacheWaits(async () => {
      const answers = await Promise.all([1, 2, 3].map((amount) => entries({ amount })));
      expect(answers.map((res) => res.status)).toEqual([201, 201, 201]);
    })).toBe(0);
    const subject = await createAgent(t.api, company.id);
    expect(await cacheWaits(async () => {
      expect((await rows({ op: 'pause-agent', agentId: subject.id, reason: 'budget_hard_stop', fail: true })).status).toBe(409);
    })).toBe(0);
    expect((await t.api.get(`/api/agents/${subject.id}`)).body.status).toBe('idle');
  });
});

describe('kernel rows from the plugin transaction', () => {
  it('sets monthly budgets of the company and of its own agents only', async () => {
    expect((await rows({ op: 'budget-company', cents: 4200 })).body).toEqual({ updated: true });
    expect((await t.api.get(`/api/companies/${company.id}`)).body.budgetMonthlyCents).toBe(4200);
    expect((await rows({ op: 'budget-agent', agentId: agent.id, cents: 700 })).body).toEqual({ updated: true });
    expect((await t.api.get(`/api/agents/${agent.id}`)).body.budgetMonthlyCents).toBe(700);
    expect((await rows({ op: 'budget-agent', agentId: foreignAgent.id, cents: 1 })).body).toEqual({ updated: false });
    expect((await t.api.get(`/api/agents/${foreignAgent.id}`)).body.budgetMonthlyCents).toBe(0);
  });

  it('pauses and resumes in the same transaction: a failing call leaves the agent as it was', async () => {
    const subject = await createAgent(t.api, company.id);
    const failed = await rows({ op: 'pause-agent', agentId: subject.id, reason: 'budget_hard_stop', fail: true });
    expect(failed.status).toBe(409);
    expect((await t.api.get(`/api/agents/${subject.id}`)).body.status).toBe('idle');
    expect(await activityCount('agent.paused', subject.id)).toBe(0);
    expect(await statusEvents(subject.id)).toEqual([]);
    expect(await holds(subject.id)).toEqual([]);

    expect((await rows({ op: 'pause-agent', agentId: subject.id, reason: 'budget_hard_stop' })).body).toEqual({ changed: true });
    const paused = (await t.api.get(`/api/agents/${subject.id}`)).body;
    expect([paused.status, paused.pauseReason]).toEqual(['paused', 'budget_hard_stop']);
    expect(await activityCount('agent.paused', subject.id)).toBe(1);
    expect(await holds(subject.id)).toEqual([{ holder: 'plugin:kernel-rows', reason: 'budget_hard_stop' }]);
    expect((await rows({ op: 'pause-agent', agentId: subject.id, reason: 'budget_hard_stop' })).body).toEqual({ changed: false });

    expect((await rows({ op: 'resume-agent', agentId: subject.id, reason: 'other_reason' })).body).toEqual({ changed: false });
    expect((await rows({ op: 'resume-agent', agentId: subject.id, reason: 'budget_hard_stop' })).body).toEqual({ changed: true });
    expect((await t.api.get(`/api/agents/${subject.id}`)).body.status).toBe('idle');
    // The status events were written to the outbox in the plugin's own transaction, as the kernel writes its own.
    const actor = { actorType: 'system', actorId: 'plugin:kernel-rows' };
    expect(await statusEvents(subject.id)).toEqual([
      { companyId: company.id, agentId: subject.id, from: 'idle', to: 'paused', reason: 'budget_hard_stop', actor },
      { companyId: company.id, agentId: subject.id, from: 'paused', to: 'idle', reason: null, actor },
    ]);
  });

  it('answers another company\'s agent as an unknown one, without failing the call\'s transaction', async () => {
    for (const agentId of [foreignAgent.id, '00000000-0000-4000-8000-000000000000']) {
      for (const op of ['pause-agent', 'resume-agent']) {
        const res = await rows({ op, agentId, reason: 'budget_hard_stop', catch: true });
        expect(res.status, res.text).toBe(200);
        expect(res.body).toEqual({ caught: { status: 404, code: 'not_found', message: 'Agent not found' }, spend: 'written' });
      }
    }
    expect((await t.api.get(`/api/agents/${foreignAgent.id}`)).body.status).toBe('idle');
    expect(await holds(foreignAgent.id)).toEqual([]);
  });

  it('keeps the board\'s pause when the plugin lifts its own, and the board\'s resume lifts every hold', async () => {
    const subject = await createAgent(t.api, company.id);
    expect((await t.api.post(`/api/agents/${subject.id}/pause`, { reason: 'maintenance' })).status).toBe(200);
    // Already paused: the plugin's hold is added, the status does not change.
    expect((await rows({ op: 'pause-agent', agentId: subject.id, reason: 'budget_hard_stop' })).body).toEqual({ changed: false });
    expect(await holds(subject.id)).toEqual([{ holder: 'operator', reason: 'maintenance' }, { holder: 'plugin:kernel-rows', reason: 'budget_hard_stop' }]);
    // A plugin cannot lift the board's hold, even naming its reason.
    expect((await rows({ op: 'resume-agent', agentId: subject.id, reason: 'maintenance' })).body).toEqual({ changed: false });
    expect((await rows({ op: 'resume-agent', agentId: subject.id, reason: 'budget_hard_stop' })).body).toEqual({ changed: false });
    expect((await t.api.get(`/api/agents/${subject.id}`)).body).toMatchObject({ status: 'paused', pauseReason: 'maintenance' });

    // The plugin holds it again; the board's resume is its decision over both, and says so.
    await rows({ op: 'pause-agent', agentId: subject.id, reason: 'budget_hard_stop' });
    const resumed = await t.api.post(`/api/agents/${subject.id}/resume`, {});
    expect([resumed.status, resumed.body.status]).toEqual([200, 'idle']);
    expect(await holds(subject.id)).toEqual([]);
    const { rows: entries } = await t.sql.query("select details from activity_log where action = 'agent.resumed' and entity_id = $1 order by seq desc limit 1", [subject.id]);
    expect(entries[0].details.liftedHolds).toEqual([{ holder: 'plugin:kernel-rows', reason: 'budget_hard_stop' }]);
  });

  it('pauses the company and lifts only its own pause', async () => {
    const target = await createCompany(t.api);
    expect((await rows({ op: 'pause-company', reason: 'budget_hard_stop' }, target.id)).body).toEqual({ changed: true });
    const paused = (await t.api.get(`/api/companies/${target.id}`)).body;
    expect(paused.status).toBe('paused');
    expect(await activityCount('company.paused', target.id)).toBe(1);
    expect((await rows({ op: 'resume-company', reason: 'manual' }, target.id)).body).toEqual({ changed: false });
    expect((await rows({ op: 'resume-company', reason: 'budget_hard_stop' }, target.id)).body).toEqual({ changed: true });
    expect((await t.api.get(`/api/companies/${target.id}`)).body.status).toBe('active');
    const { rows: events } = await t.sql.query("select payload from keel_events.outbox where name = 'company.status_changed' and entity_id = $1 order by seq", [target.id]);
    expect(events.map((e: any) => [e.payload.from, e.payload.to, e.payload.reason])).toEqual([['active', 'paused', 'budget_hard_stop'], ['paused', 'active', null]]);
  });

  it('keeps a company the board paused paused when the plugin lifts its own hold', async () => {
    const target = await createCompany(t.api);
    expect((await t.api.patch(`/api/companies/${target.id}`, { status: 'paused' })).status).toBe(200);
    expect((await rows({ op: 'pause-company', reason: 'budget_hard_stop' }, target.id)).body).toEqual({ changed: false });
    expect((await rows({ op: 'resume-company', reason: 'budget_hard_stop' }, target.id)).body).toEqual({ changed: false });
    expect((await t.api.get(`/api/companies/${target.id}`)).body.status).toBe('paused');
    expect((await t.api.patch(`/api/companies/${target.id}`, { status: 'active' })).body.status).toBe('active');
  });

  it('are refused by the database itself to a plugin without the grant', async () => {
    const dir = await pluginVariant(FIXTURE, (manifest: any) => ({
      ...manifest, key: 'kernel-rows-bare', database: { ...manifest.database, namespace: 'kernel_rows_bare' },
      capabilities: manifest.capabilities.filter((c: { id: string }) => !['budgets.write', 'agents.pause', 'companies.pause'].includes(c.id)),
    }));
    try {
      await installAndEnable(t, dir);
      // Through SQL, bypassing the SDK: the function is not executable by this plugin's role.
      const raw = await t.api.post(`/api/plugins/kernel-rows-bare/companies/${company.id}/rows`, { op: 'raw-budget' });
      expect([raw.status, raw.body.code]).toEqual([403, 'sql_42501']);
      // This instance's role: roles are the cluster's, and other tests' instances have one of the same key.
      const role = t.kernel.host.databases.roles({ key: 'kernel-rows-bare' }).runtime;
      const granted = await t.sql.query("select has_function_privilege($1, 'keel_bridge.hold_agent(text, text, uuid, boolean, text)', 'execute') as ok", [role]);
      expect(granted.rows[0].ok).toBe(false);
      // Activity of a batch is verified entry by entry: a forged identity writes nothing.
      const signatureRefused = async () => ((await t.api.get('/api/plugins/kernel-rows-bare/logs')).body.logs as Array<{ message: string }>)
        .filter((line) => line.message.includes('invalid invocation signature')).length;
      const forgedActivity = await t.api.post(`/api/plugins/kernel-rows-bare/companies/${company.id}/rows`, { op: 'raw-activities' });
      expect([forgedActivity.status, forgedActivity.body.code]).toEqual([403, 'sql_42501']);
      // The database's own reason reaches the plugin's logs, not the caller.
      expect(await signatureRefused()).toBe(1);
      expect((await t.sql.query("select count(*)::int as n from activity_log where action = 'forged.entry'")).rows[0].n).toBe(0);
      // With the grant, the same raw call gets past the privilege check and fails on the forged signature instead.
      const forged = await rows({ op: 'raw-budget' });
      expect([forged.status, forged.body.code]).toEqual([403, 'sql_42501']);
      const logs = (await t.api.get('/api/plugins/kernel-rows/logs')).body.logs as Array<{ message: string }>;
      expect(logs.some((line) => line.message.includes('invalid invocation signature'))).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
