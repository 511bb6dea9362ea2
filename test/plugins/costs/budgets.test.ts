import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { activityCount, addCost, agentRow, companyRow, createProject, event, eventsSettled, incidents, ISO, UUID, settling } from './helpers.ts';

let t: TestKernel;
beforeAll(async () => { t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS }); });
afterAll(async () => { await t?.stop(); });

const overview = async (companyId: string) => {
  const res = await t.api.get(`/api/companies/${companyId}/budgets/overview`);
  expect(res.status, res.text).toBe(200);
  return res.body;
};
const policyOf = async (companyId: string, scopeType: string, scopeId: string) =>
  (await overview(companyId)).policies.find((p: any) => p.scopeType === scopeType && p.scopeId === scopeId);
const upsert = (companyId: string, body: Record<string, unknown>) => t.api.post(`/api/companies/${companyId}/budgets/policies`, body);
const resolve = (companyId: string, incidentId: string, body: Record<string, unknown>) =>
  t.api.post(`/api/companies/${companyId}/budget-incidents/${incidentId}/resolve`, body);
const summarise = (rows: Awaited<ReturnType<typeof incidents>>) => rows.map((i) => `${i.scope_type}:${i.threshold_type}:${i.amount_limit}:${i.amount_observed}:${i.status}`);

const defaults = (companyId: string, scopeType: string, scopeId: string, amount: number, observed = 0) => ({
  id: expect.stringMatching(UUID), companyId, scopeType, scopeId, metric: 'billed_cents', windowKind: 'calendar_month_utc', amount,
  warnPercent: 80, hardStopEnabled: true, notifyEnabled: true, isActive: true, createdAt: expect.stringMatching(ISO), updatedAt: expect.stringMatching(ISO),
  observedAmount: observed, remainingAmount: Math.max(amount - observed, 0), utilizationPercent: amount > 0 ? Math.round((observed / amount) * 10_000) / 100 : 0,
});

describe('policies that follow budgetMonthlyCents', () => {
  it('a company created with a budget has its monthly policy at once, with the documented defaults', async () => {
    const company = await createCompany(settling(t), { budgetMonthlyCents: 5000 });
    const body = await overview(company.id);
    expect(body).toEqual({
      companyId: company.id, policies: [defaults(company.id, 'company', company.id, 5000)],
      activeIncidents: [], pausedAgentCount: 0, pausedProjectCount: 0, pendingApprovalCount: 0, monthSpendBySource: [],
    });
  });

  it('a company and an agent without a budget have no policy', async () => {
    const company = await createCompany(settling(t));
    await createAgent(settling(t), company.id);
    expect((await overview(company.id)).policies).toEqual([]);
  });

  it('an agent created with a budget has its monthly policy at once', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id, { budgetMonthlyCents: 1500 });
    expect((await overview(company.id)).policies).toEqual([defaults(company.id, 'agent', agent.id, 1500)]);
  });

  it('PATCH /api/companies/{id}/budgets updates the policy and the kernel budget', async () => {
    const company = await createCompany(settling(t), { budgetMonthlyCents: 5000 });
    const res = await settling(t).patch(`/api/companies/${company.id}/budgets`, { budgetMonthlyCents: 2500 });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ scopeType: 'company', scopeId: company.id, budgetMonthlyCents: 2500, policy: expect.objectContaining({ scopeType: 'company', amount: 2500, windowKind: 'calendar_month_utc' }) });
    expect((await companyRow(t, company.id)).budget).toBe(2500);
    expect((await t.api.get(`/api/companies/${company.id}`)).body.budgetMonthlyCents).toBe(2500);
    expect(await policyOf(company.id, 'company', company.id)).toMatchObject({ amount: 2500, warnPercent: 80 });
    const summary = await t.api.get(`/api/companies/${company.id}/costs/summary`);
    expect(summary.body.budgetCents).toBe(2500);
    expect(await activityCount(t, company.id, 'budget.updated', company.id)).toBe(1);
  });

  it('PATCH /api/companies/{id}/budgets creates the policy of a company that had none; 0 creates none', async () => {
    const none = await createCompany(settling(t));
    const zero = await settling(t).patch(`/api/companies/${none.id}/budgets`, { budgetMonthlyCents: 0 });
    expect(zero.status).toBe(200);
    expect(zero.body).toEqual({ scopeType: 'company', scopeId: none.id, budgetMonthlyCents: 0, policy: null });
    expect((await overview(none.id)).policies).toEqual([]);
    const set = await settling(t).patch(`/api/companies/${none.id}/budgets`, { budgetMonthlyCents: 900 });
    expect(set.body.policy).toMatchObject({ amount: 900, warnPercent: 80, hardStopEnabled: true });
    expect((await overview(none.id)).policies).toEqual([defaults(none.id, 'company', none.id, 900)]);
  });

  it('PATCH /api/agents/{id}/budgets updates the agent policy and the kernel budget', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id, { budgetMonthlyCents: 1000 });
    const res = await settling(t).patch(`/api/agents/${agent.id}/budgets`, { budgetMonthlyCents: 1200 });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ scopeType: 'agent', scopeId: agent.id, budgetMonthlyCents: 1200, policy: expect.objectContaining({ scopeType: 'agent', scopeId: agent.id, amount: 1200 }) });
    expect((await t.api.get(`/api/agents/${agent.id}`)).body.budgetMonthlyCents).toBe(1200);
    expect((await overview(company.id)).policies).toEqual([defaults(company.id, 'agent', agent.id, 1200)]);
    // An agent without a policy gets one.
    const plain = await createAgent(settling(t), company.id);
    const created = await settling(t).patch(`/api/agents/${plain.id}/budgets`, { budgetMonthlyCents: 300 });
    expect(created.status).toBe(200);
    expect(await policyOf(company.id, 'agent', plain.id)).toMatchObject({ amount: 300 });
    expect((await agentRow(t, plain.id)).budget).toBe(300);
  });

  it('a budget set after the agent was created is not set back when the create\'s event arrives (again) later', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id, { budgetMonthlyCents: 500 });
    expect((await settling(t).patch(`/api/agents/${agent.id}/budgets`, { budgetMonthlyCents: 10 })).status).toBe(200);
    // Events arrive at least once: the agent's created event (budget 500) delivered once more, after the route set 10.
    const again = await t.sql.query(
      `update keel_events.deliveries d set state = 'pending', attempts = 0, available_at = now(), finished_at = null
         from keel_events.outbox o where o.seq = d.event_seq and d.subscriber = 'costs' and o.name = 'agent.created' and o.entity_id = $1
       returning d.event_seq`, [agent.id]);
    expect(again.rowCount).toBe(1);
    await t.sql.query("select pg_notify('keel_events', '')");
    await eventsSettled(t);
    expect(await policyOf(company.id, 'agent', agent.id)).toMatchObject({ amount: 10 });
    expect((await agentRow(t, agent.id)).budget).toBe(10);
  });

  it('PATCH /api/agents/{id} (kernel route) with budgetMonthlyCents syncs the policy', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id, { budgetMonthlyCents: 1000 });
    const res = await settling(t).patch(`/api/agents/${agent.id}`, { budgetMonthlyCents: 700 });
    expect(res.status, res.text).toBe(200);
    expect(res.body.budgetMonthlyCents).toBe(700);
    expect(await policyOf(company.id, 'agent', agent.id)).toMatchObject({ amount: 700 });
    const fresh = await createAgent(settling(t), company.id);
    expect((await settling(t).patch(`/api/agents/${fresh.id}`, { budgetMonthlyCents: 450 })).status).toBe(200);
    expect(await policyOf(company.id, 'agent', fresh.id)).toMatchObject({ amount: 450, windowKind: 'calendar_month_utc' });
  });

  it('PATCH /api/companies/{id} (kernel route) with budgetMonthlyCents syncs the policy', async () => {
    const company = await createCompany(settling(t), { budgetMonthlyCents: 100 });
    const res = await settling(t).patch(`/api/companies/${company.id}`, { budgetMonthlyCents: 4200 });
    expect(res.status, res.text).toBe(200);
    expect(await policyOf(company.id, 'company', company.id)).toMatchObject({ amount: 4200 });
    expect((await settling(t).patch(`/api/companies/${company.id}`, { budgetMonthlyCents: 0 })).status).toBe(200);
    expect(await policyOf(company.id, 'company', company.id)).toMatchObject({ amount: 0 });
    expect((await t.api.get(`/api/companies/${company.id}/costs/summary`)).body.budgetCents).toBe(0);
  });

  it('refuses bad budget bodies with 400 validation_failed and an unknown agent with 404', async () => {
    const company = await createCompany(settling(t), { budgetMonthlyCents: 100 });
    const agent = await createAgent(settling(t), company.id, { budgetMonthlyCents: 100 });
    for (const body of [{}, { budgetMonthlyCents: -1 }, { budgetMonthlyCents: 1.5 }, { budgetMonthlyCents: '100' }, { budgetMonthlyCents: 100_000_000_001 }]) {
      const c = await settling(t).patch(`/api/companies/${company.id}/budgets`, body);
      expect({ body, status: c.status, code: c.body.code }).toEqual({ body, status: 400, code: 'validation_failed' });
      const a = await settling(t).patch(`/api/agents/${agent.id}/budgets`, body);
      expect({ body, status: a.status, code: a.body.code }).toEqual({ body, status: 400, code: 'validation_failed' });
    }
    expect((await companyRow(t, company.id)).budget).toBe(100);
    expect((await agentRow(t, agent.id)).budget).toBe(100);
    expect((await settling(t).patch(`/api/agents/${randomUUID()}/budgets`, { budgetMonthlyCents: 5 })).status).toBe(404);
    expect((await settling(t).patch(`/api/companies/${randomUUID()}/budgets`, { budgetMonthlyCents: 5 })).status).toBe(404);
  });

  it('board-only budget routes refuse agent keys with 403 and change nothing', async () => {
    const company = await createCompany(settling(t), { budgetMonthlyCents: 100 });
    const agent = await createAgent(settling(t), company.id, { budgetMonthlyCents: 100 });
    const key = await createAgentKey(t.api, agent.id);
    const as = t.api.as(key);
    const calls = [
      () => as.patch(`/api/companies/${company.id}/budgets`, { budgetMonthlyCents: 99_999 }),
      () => as.patch(`/api/agents/${agent.id}/budgets`, { budgetMonthlyCents: 99_999 }),
      () => as.get(`/api/companies/${company.id}/budgets/overview`),
      () => as.post(`/api/companies/${company.id}/budgets/policies`, { scopeType: 'agent', scopeId: agent.id, amount: 99_999 }),
      () => as.post(`/api/companies/${company.id}/budget-incidents/${randomUUID()}/resolve`, { action: 'keep_paused' }),
    ];
    for (const call of calls) {
      const res = await call();
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 403, code: 'board_required' });
    }
    expect((await companyRow(t, company.id)).budget).toBe(100);
    expect((await agentRow(t, agent.id)).budget).toBe(100);
    expect((await overview(company.id)).policies.map((p: any) => p.amount)).toEqual([100, 100]);
  });
});

describe('POST /api/companies/{companyId}/budgets/policies', () => {
  it('creates a project policy (201) with windowKind lifetime and defaults; an update (200) keeps omitted fields', async () => {
    const company = await createCompany(settling(t));
    const projectId = await createProject(t.api, company.id);
    const created = await upsert(company.id, { scopeType: 'project', scopeId: projectId, amount: 1000, warnPercent: 50, notifyEnabled: false });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(UUID), companyId: company.id, scopeType: 'project', scopeId: projectId, metric: 'billed_cents', windowKind: 'lifetime',
      amount: 1000, warnPercent: 50, hardStopEnabled: true, notifyEnabled: false, isActive: true, createdAt: expect.stringMatching(ISO), updatedAt: expect.stringMatching(ISO),
    });
    const updated = await upsert(company.id, { scopeType: 'project', scopeId: projectId, amount: 2000 });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body).toMatchObject({ id: created.body.id, amount: 2000, warnPercent: 50, notifyEnabled: false, hardStopEnabled: true, isActive: true, windowKind: 'lifetime' });
    const again = await upsert(company.id, { scopeType: 'project', scopeId: projectId, amount: 2000, hardStopEnabled: false, isActive: false });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: created.body.id, warnPercent: 50, notifyEnabled: false, hardStopEnabled: false, isActive: false });
    const { rows } = await t.sql.query('select count(*)::int as n from plugin_costs.budget_policies where company_id = $1', [company.id]);
    expect(rows[0].n).toBe(1);
    expect(await activityCount(t, company.id, 'budget.policy_created')).toBe(1);
    expect(await activityCount(t, company.id, 'budget.policy_updated')).toBe(2);
  });

  it('a monthly agent policy sets the kernel budget; a lifetime one is a separate policy and does not', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const monthly = await upsert(company.id, { scopeType: 'agent', scopeId: agent.id.toUpperCase(), amount: 800 });
    expect(monthly.status, monthly.text).toBe(201);
    expect(monthly.body).toMatchObject({ scopeId: agent.id, windowKind: 'calendar_month_utc', amount: 800 });
    expect((await t.api.get(`/api/agents/${agent.id}`)).body.budgetMonthlyCents).toBe(800);
    const lifetime = await upsert(company.id, { scopeType: 'agent', scopeId: agent.id, amount: 50_000, windowKind: 'lifetime' });
    expect(lifetime.status).toBe(201);
    expect(lifetime.body.id).not.toBe(monthly.body.id);
    expect((await agentRow(t, agent.id)).budget).toBe(800);
  });

  it('a company policy targets the company itself; another scopeId is 422 invalid_scope', async () => {
    const company = await createCompany(settling(t));
    const res = await upsert(company.id, { scopeType: 'company', amount: 600 });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ scopeType: 'company', scopeId: company.id, windowKind: 'calendar_month_utc', amount: 600 });
    expect((await companyRow(t, company.id)).budget).toBe(600);
    const bad = await upsert(company.id, { scopeType: 'company', scopeId: randomUUID(), amount: 700 });
    expect(bad.status).toBe(422);
    expect(bad.body.code).toBe('invalid_scope');
    expect((await companyRow(t, company.id)).budget).toBe(600);
  });

  it('scopeId is required for agent and project policies (400 validation_failed)', async () => {
    const company = await createCompany(settling(t));
    for (const scopeType of ['agent', 'project']) {
      for (const body of [{ scopeType, amount: 10 }, { scopeType, scopeId: null, amount: 10 }]) {
        const res = await upsert(company.id, body);
        expect({ body, status: res.status, code: res.body.code }).toEqual({ body, status: 400, code: 'validation_failed' });
      }
    }
    expect((await overview(company.id)).policies).toEqual([]);
  });

  it('an agent of another company, or an unknown agent, is 404 agent_not_found', async () => {
    const company = await createCompany(settling(t));
    const other = await createCompany(settling(t));
    const stranger = await createAgent(settling(t), other.id);
    for (const scopeId of [stranger.id, randomUUID()]) {
      const res = await upsert(company.id, { scopeType: 'agent', scopeId, amount: 10 });
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 404, code: 'agent_not_found' });
    }
    expect((await overview(company.id)).policies).toEqual([]);
    expect((await agentRow(t, stranger.id)).budget).toBe(0);
  });

  it('a project of another company, or an unknown project, is 404 project_not_found', async () => {
    const company = await createCompany(settling(t));
    const other = await createCompany(settling(t));
    const foreign = await createProject(t.api, other.id);
    for (const scopeId of [foreign, randomUUID()]) {
      const res = await upsert(company.id, { scopeType: 'project', scopeId, amount: 10 });
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 404, code: 'project_not_found' });
    }
    expect((await overview(company.id)).policies).toEqual([]);
  });

  it('refuses schema violations with 400 validation_failed', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const bodies = [
      { scopeType: 'team', scopeId: agent.id, amount: 10 }, { scopeType: 'agent', scopeId: agent.id }, { scopeType: 'agent', scopeId: agent.id, amount: -1 },
      { scopeType: 'agent', scopeId: agent.id, amount: 10, warnPercent: 0 }, { scopeType: 'agent', scopeId: agent.id, amount: 10, warnPercent: 101 },
      { scopeType: 'agent', scopeId: agent.id, amount: 10, windowKind: 'weekly' }, { scopeType: 'agent', scopeId: agent.id, amount: 10, metric: 'tokens' },
      { scopeType: 'agent', scopeId: 'not-a-uuid', amount: 10 }, { scopeType: 'agent', scopeId: agent.id, amount: 10, hardStopEnabled: 'yes' },
    ];
    for (const body of bodies) {
      const res = await upsert(company.id, body);
      expect({ body, status: res.status, code: res.body.code }).toEqual({ body, status: 400, code: 'validation_failed' });
    }
    expect((await overview(company.id)).policies).toEqual([]);
  });
});

describe('incidents opened by spend', () => {
  it('soft at the warn threshold, hard at 100% which pauses the agent; each opens once per window', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id, { budgetMonthlyCents: 1000 });
    await addCost(t.api, company.id, event(agent.id, 799));
    expect(await incidents(t, company.id)).toEqual([]);
    await addCost(t.api, company.id, event(agent.id, 1));
    expect(summarise(await incidents(t, company.id))).toEqual(['agent:soft:1000:800:open']);
    expect(await agentRow(t, agent.id)).toMatchObject({ status: 'idle', pause_reason: null });
    await addCost(t.api, company.id, event(agent.id, 150));
    expect(summarise(await incidents(t, company.id))).toEqual(['agent:soft:1000:800:open']);
    await addCost(t.api, company.id, event(agent.id, 50));
    expect(summarise(await incidents(t, company.id))).toEqual(['agent:soft:1000:800:open', 'agent:hard:1000:1000:open']);
    const shown = await t.api.get(`/api/agents/${agent.id}`);
    expect(shown.body).toMatchObject({ status: 'paused', pauseReason: 'budget_hard_stop', spentMonthlyCents: 1000 });
    for (let i = 0; i < 3; i++) await addCost(t.api, company.id, event(agent.id, 100));
    expect(summarise(await incidents(t, company.id))).toEqual(['agent:soft:1000:800:open', 'agent:hard:1000:1000:open']);
    expect(await activityCount(t, company.id, 'budget.incident_opened')).toBe(2);
    expect(await activityCount(t, company.id, 'agent.paused', agent.id)).toBe(1);

    const body = await overview(company.id);
    expect(body.pausedAgentCount).toBe(1);
    expect(body.policies).toEqual([defaults(company.id, 'agent', agent.id, 1000, 1300)]);
    expect(body.activeIncidents.map((i: any) => [i.thresholdType, i.status, i.amountLimit, i.amountObserved, i.scopeType, i.scopeId, i.windowKind])).toEqual([
      ['hard', 'open', 1000, 1000, 'agent', agent.id, 'calendar_month_utc'], ['soft', 'open', 1000, 800, 'agent', agent.id, 'calendar_month_utc'],
    ]);
    const now = new Date();
    expect(body.activeIncidents[0].windowStart).toBe(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString());
    expect(body.activeIncidents[0].windowEnd).toBe(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString());
  });

  it('one event that jumps past both thresholds opens both incidents', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id, { budgetMonthlyCents: 100 });
    await addCost(t.api, company.id, event(agent.id, 250));
    expect(summarise(await incidents(t, company.id))).toEqual(['agent:soft:100:250:open', 'agent:hard:100:250:open']);
    expect((await agentRow(t, agent.id)).status).toBe('paused');
  });

  it('no soft incident when notifications are off; no hard incident and no pause when hard stop is off', async () => {
    const company = await createCompany(settling(t));
    const quiet = await createAgent(settling(t), company.id);
    const soft = await createAgent(settling(t), company.id);
    expect((await upsert(company.id, { scopeType: 'agent', scopeId: quiet.id, amount: 100, notifyEnabled: false })).status).toBe(201);
    expect((await upsert(company.id, { scopeType: 'agent', scopeId: soft.id, amount: 100, hardStopEnabled: false })).status).toBe(201);
    await addCost(t.api, company.id, event(quiet.id, 90));
    await addCost(t.api, company.id, event(soft.id, 90));
    expect(summarise(await incidents(t, company.id))).toEqual(['agent:soft:100:90:open']);
    expect((await incidents(t, company.id))[0]!.scope_id).toBe(soft.id);
    await addCost(t.api, company.id, event(quiet.id, 20));
    await addCost(t.api, company.id, event(soft.id, 500));
    const rows = await incidents(t, company.id);
    expect(rows.map((i) => [i.scope_id, i.threshold_type])).toEqual([[soft.id, 'soft'], [quiet.id, 'hard']]);
    expect((await agentRow(t, quiet.id)).status).toBe('paused');
    expect((await agentRow(t, soft.id)).status).toBe('idle');
  });

  it('an inactive policy opens nothing', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    expect((await upsert(company.id, { scopeType: 'agent', scopeId: agent.id, amount: 10, isActive: false })).status).toBe(201);
    await addCost(t.api, company.id, event(agent.id, 100));
    expect(await incidents(t, company.id)).toEqual([]);
    expect((await agentRow(t, agent.id)).status).toBe('idle');
  });

  it('a custom warnPercent moves the soft threshold', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    expect((await upsert(company.id, { scopeType: 'agent', scopeId: agent.id, amount: 1000, warnPercent: 25 })).status).toBe(201);
    await addCost(t.api, company.id, event(agent.id, 249));
    expect(await incidents(t, company.id)).toEqual([]);
    await addCost(t.api, company.id, event(agent.id, 1));
    expect(summarise(await incidents(t, company.id))).toEqual(['agent:soft:1000:250:open']);
  });

  it('the company hard stop pauses the company, not its agents', async () => {
    const company = await createCompany(settling(t), { budgetMonthlyCents: 300 });
    const agent = await createAgent(settling(t), company.id);
    await addCost(t.api, company.id, event(agent.id, 240));
    expect(summarise(await incidents(t, company.id))).toEqual(['company:soft:300:240:open']);
    expect((await companyRow(t, company.id)).status).toBe('active');
    await addCost(t.api, company.id, event(agent.id, 60));
    expect(summarise(await incidents(t, company.id))).toEqual(['company:soft:300:240:open', 'company:hard:300:300:open']);
    expect(await companyRow(t, company.id)).toMatchObject({ status: 'paused', pause_reason: 'budget_hard_stop' });
    expect((await t.api.get(`/api/companies/${company.id}`)).body.status).toBe('paused');
    expect((await agentRow(t, agent.id)).status).toBe('idle');
    expect(await activityCount(t, company.id, 'company.paused')).toBe(1);
    expect((await overview(company.id)).pausedAgentCount).toBe(0);
  });

  it('a project hard stop counts as a paused project in the overview', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const p1 = await createProject(t.api, company.id);
    const p2 = await createProject(t.api, company.id);
    for (const scopeId of [p1, p2]) expect((await upsert(company.id, { scopeType: 'project', scopeId, amount: 100 })).status).toBe(201);
    await addCost(t.api, company.id, event(agent.id, 100, { projectId: p1 }));
    await addCost(t.api, company.id, event(agent.id, 99, { projectId: p2 }));
    const body = await overview(company.id);
    expect(body.pausedProjectCount).toBe(1);
    expect(body.pausedAgentCount).toBe(0);
    expect(body.activeIncidents.map((i: any) => [i.scopeId, i.thresholdType])).toEqual(expect.arrayContaining([[p1, 'hard'], [p1, 'soft'], [p2, 'soft']]));
    expect(body.activeIncidents).toHaveLength(3);
    expect((await agentRow(t, agent.id)).status).toBe('idle');
  });

  it('overview counts paused agents of any reason and the approvals waiting for the board', async () => {
    const company = await createCompany(settling(t), { requireBoardApprovalForNewAgents: true });
    const a = await createAgent(settling(t), company.id);
    const b = await createAgent(settling(t), company.id);
    await createAgent(settling(t), company.id);
    await t.sql.query(`update agents set status = 'paused', pause_reason = 'manual', paused_at = now() where id = $1`, [a.id]);
    // An agent pending approval without an approval is not an approval waiting.
    await t.sql.query(`update agents set status = 'pending_approval' where id = $1`, [b.id]);
    const hire = async (name: string) => {
      const res = await settling(t).post(`/api/companies/${company.id}/agent-hires`, { name });
      expect(res.status, res.text).toBe(201);
      return res.body.approval.id as string;
    };
    const [waiting, sentBack, approved, rejected] = [await hire('Waiting'), await hire('Sent back'), await hire('Approved'), await hire('Rejected')];
    expect((await overview(company.id)).pendingApprovalCount).toBe(4);
    expect((await settling(t).post(`/api/approvals/${sentBack}/request-revision`, { decisionNote: 'Smaller budget' })).status).toBe(200);
    expect((await settling(t).post(`/api/approvals/${approved}/approve`, {})).status).toBe(200);
    expect((await settling(t).post(`/api/approvals/${rejected}/reject`, {})).status).toBe(200);
    const body = await overview(company.id);
    expect([body.pausedAgentCount, body.pendingApprovalCount, body.pausedProjectCount]).toEqual([1, 1, 0]);
    expect((await t.sql.query('select status from approvals where id = $1', [waiting])).rows[0].status).toBe('pending');
    // Another company's approvals are its own.
    const other = await createCompany(settling(t));
    expect((await overview(other.id)).pendingApprovalCount).toBe(0);
  });

  it('lowering a budget below current spend opens the hard incident at once', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id, { budgetMonthlyCents: 1000 });
    await addCost(t.api, company.id, event(agent.id, 500));
    expect(await incidents(t, company.id)).toEqual([]);
    const res = await settling(t).patch(`/api/agents/${agent.id}/budgets`, { budgetMonthlyCents: 400 });
    expect(res.status, res.text).toBe(200);
    expect(summarise(await incidents(t, company.id))).toEqual(['agent:soft:400:500:open', 'agent:hard:400:500:open']);
    expect(await agentRow(t, agent.id)).toMatchObject({ status: 'paused', pause_reason: 'budget_hard_stop', budget: 400 });

    const co = await createCompany(settling(t), { budgetMonthlyCents: 10_000 });
    const worker = await createAgent(settling(t), co.id);
    await addCost(t.api, co.id, event(worker.id, 850));
    expect((await settling(t).patch(`/api/companies/${co.id}/budgets`, { budgetMonthlyCents: 1000 })).status).toBe(200);
    expect(summarise(await incidents(t, co.id))).toEqual(['company:soft:1000:850:open']);
    expect((await companyRow(t, co.id)).status).toBe('active');
    expect((await settling(t).patch(`/api/companies/${co.id}/budgets`, { budgetMonthlyCents: 850 })).status).toBe(200);
    expect(summarise(await incidents(t, co.id))).toEqual(['company:soft:1000:850:open', 'company:soft:850:850:open', 'company:hard:850:850:open']);
    expect((await companyRow(t, co.id)).status).toBe('paused');
  });

  it('a budget lowered below spend through the kernel route stops the agent at its next cost event', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id, { budgetMonthlyCents: 1000 });
    await addCost(t.api, company.id, event(agent.id, 500));
    expect((await settling(t).patch(`/api/agents/${agent.id}`, { budgetMonthlyCents: 450 })).status).toBe(200);
    expect(await policyOf(company.id, 'agent', agent.id)).toMatchObject({ amount: 450, observedAmount: 500, remainingAmount: 0 });
    await addCost(t.api, company.id, event(agent.id, 0));
    expect(summarise(await incidents(t, company.id))).toEqual(['agent:soft:450:500:open', 'agent:hard:450:500:open']);
    expect(await agentRow(t, agent.id)).toMatchObject({ status: 'paused', pause_reason: 'budget_hard_stop' });
  });

  it('a policy upsert below current spend opens the hard incident at once', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    await addCost(t.api, company.id, event(agent.id, 500));
    const res = await upsert(company.id, { scopeType: 'agent', scopeId: agent.id, amount: 300, notifyEnabled: false });
    expect(res.status).toBe(201);
    expect(summarise(await incidents(t, company.id))).toEqual(['agent:hard:300:500:open']);
    expect((await agentRow(t, agent.id)).status).toBe('paused');
  });
});

describe('POST budget-incidents/{incidentId}/resolve', () => {
  async function stoppedAgent(budget = 100, spend = 100) {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id, { budgetMonthlyCents: budget });
    await addCost(t.api, company.id, event(agent.id, spend));
    const all = await incidents(t, company.id);
    const hard = all.find((i) => i.threshold_type === 'hard')!;
    const soft = all.find((i) => i.threshold_type === 'soft')!;
    expect((await agentRow(t, agent.id)).status).toBe('paused');
    return { company, agent, hard, soft };
  }

  it('keep_paused resolves the incident; the agent stays paused', async () => {
    const { company, agent, hard, soft } = await stoppedAgent();
    const res = await resolve(company.id, hard.id, { action: 'keep_paused', note: 'until next month' });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      id: hard.id, status: 'resolved', resolution: 'keep_paused', resolutionNote: 'until next month', thresholdType: 'hard',
      resolvedAt: expect.stringMatching(ISO), resumed: false, policy: expect.objectContaining({ amount: 100 }),
    });
    expect(await agentRow(t, agent.id)).toMatchObject({ status: 'paused', pause_reason: 'budget_hard_stop', budget: 100 });
    expect(summarise(await incidents(t, company.id))).toEqual(['agent:soft:100:100:open', 'agent:hard:100:100:resolved']);
    expect((await overview(company.id)).activeIncidents.map((i: any) => i.id)).toEqual([soft.id]);
    expect(await activityCount(t, company.id, 'budget.incident_resolved', hard.id)).toBe(1);
  });

  it('raise_budget_and_resume with an amount not above spend is 422 budget_not_above_spend and changes nothing', async () => {
    const { company, agent, hard } = await stoppedAgent(100, 150);
    for (const amount of [150, 149, 0]) {
      const res = await resolve(company.id, hard.id, { action: 'raise_budget_and_resume', amount });
      expect({ amount, status: res.status, code: res.body.code }).toEqual({ amount, status: 422, code: 'budget_not_above_spend' });
    }
    expect(summarise(await incidents(t, company.id))).toEqual(['agent:soft:100:150:open', 'agent:hard:100:150:open']);
    expect(await agentRow(t, agent.id)).toMatchObject({ status: 'paused', budget: 100 });
    expect(await policyOf(company.id, 'agent', agent.id)).toMatchObject({ amount: 100 });
  });

  it('raise_budget_and_resume without an amount is 400', async () => {
    const { company, agent, hard } = await stoppedAgent();
    const res = await resolve(company.id, hard.id, { action: 'raise_budget_and_resume' });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect((await incidents(t, company.id)).every((i) => i.status === 'open')).toBe(true);
    expect((await agentRow(t, agent.id)).status).toBe('paused');
  });

  it('refuses a bad resolve body with 400 validation_failed', async () => {
    const { company, hard } = await stoppedAgent();
    for (const body of [{}, { action: 'resume' }, { action: 'raise_budget_and_resume', amount: -5 }, { action: 'raise_budget_and_resume', amount: 2.5 }, { action: 'keep_paused', note: 'x'.repeat(2001) }]) {
      const res = await resolve(company.id, hard.id, body);
      expect({ body, status: res.status, code: res.body.code }).toEqual({ body, status: 400, code: 'validation_failed' });
    }
    expect((await incidents(t, company.id)).every((i) => i.status === 'open')).toBe(true);
  });

  it('raise_budget_and_resume above spend raises the policy and kernel budget, resumes the agent and settles the window', async () => {
    const { company, agent, hard, soft } = await stoppedAgent(100, 120);
    const res = await resolve(company.id, hard.id, { action: 'raise_budget_and_resume', amount: 500, note: 'approved' });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: hard.id, status: 'resolved', resolution: 'raise_budget_and_resume', resolutionNote: 'approved', resumed: true, policy: expect.objectContaining({ amount: 500, scopeId: agent.id }) });
    const shown = (await t.api.get(`/api/agents/${agent.id}`)).body;
    expect([shown.status, shown.pauseReason, shown.budgetMonthlyCents, shown.spentMonthlyCents]).toEqual(['idle', null, 500, 120]);
    expect(await policyOf(company.id, 'agent', agent.id)).toMatchObject({ amount: 500, observedAmount: 120, remainingAmount: 380 });
    expect(summarise(await incidents(t, company.id))).toEqual(['agent:soft:100:120:resolved', 'agent:hard:100:120:resolved']);
    expect((await overview(company.id)).activeIncidents).toEqual([]);
    expect(await activityCount(t, company.id, 'agent.resumed', agent.id)).toBe(1);

    const again = await resolve(company.id, hard.id, { action: 'keep_paused' });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('incident_not_open');
    const softAgain = await resolve(company.id, soft.id, { action: 'keep_paused' });
    expect(softAgain.status).toBe(409);
    expect(softAgain.body.code).toBe('incident_not_open');
  });

  it('after a raise, crossing the new budget opens new incidents and pauses again', async () => {
    const { company, agent, hard } = await stoppedAgent(100, 100);
    expect((await resolve(company.id, hard.id, { action: 'raise_budget_and_resume', amount: 150 })).status).toBe(200);
    expect((await agentRow(t, agent.id)).status).toBe('idle');
    await addCost(t.api, company.id, event(agent.id, 49));
    expect((await agentRow(t, agent.id)).status).toBe('idle');
    await addCost(t.api, company.id, event(agent.id, 1));
    const rows = await incidents(t, company.id);
    expect(summarise(rows)).toEqual(['agent:soft:100:100:resolved', 'agent:hard:100:100:resolved', 'agent:soft:150:149:open', 'agent:hard:150:150:open']);
    expect(await agentRow(t, agent.id)).toMatchObject({ status: 'paused', pause_reason: 'budget_hard_stop' });
    expect(await activityCount(t, company.id, 'agent.paused', agent.id)).toBe(2);
  });

  it('a budget set back to an amount already stopped at this month stops the agent again', async () => {
    const { company, agent, hard } = await stoppedAgent(100, 100);
    expect((await resolve(company.id, hard.id, { action: 'raise_budget_and_resume', amount: 200 })).status).toBe(200);
    await addCost(t.api, company.id, event(agent.id, 50));
    expect((await agentRow(t, agent.id)).status).toBe('idle');
    // The operator lowers the budget back to 100 while 150 is already spent: that is a hard stop now.
    expect((await settling(t).patch(`/api/agents/${agent.id}/budgets`, { budgetMonthlyCents: 100 })).status).toBe(200);
    await addCost(t.api, company.id, event(agent.id, 50));
    expect(await agentRow(t, agent.id)).toMatchObject({ status: 'paused', pause_reason: 'budget_hard_stop', spent: 200, budget: 100 });
    const open = (await overview(company.id)).activeIncidents.map((i: any) => [i.thresholdType, i.amountLimit]);
    expect(open).toContainEqual(['hard', 100]);
  });

  it('an agent paused by the operator for another reason is not resumed by the resolve', async () => {
    const { company, agent, hard } = await stoppedAgent(100, 100);
    // The board pauses it too: its hold stays when the budget's is lifted.
    expect((await t.api.post(`/api/agents/${agent.id}/pause`, { reason: 'manual' })).status).toBe(200);
    const res = await resolve(company.id, hard.id, { action: 'raise_budget_and_resume', amount: 1000 });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: 'resolved', resumed: false, policy: expect.objectContaining({ amount: 1000 }) });
    expect(await agentRow(t, agent.id)).toMatchObject({ status: 'paused', pause_reason: 'manual', budget: 1000 });
    expect(await activityCount(t, company.id, 'agent.resumed', agent.id)).toBe(0);
  });

  it('the company hard stop: raise_budget_and_resume sets the company active again', async () => {
    const company = await createCompany(settling(t), { budgetMonthlyCents: 200 });
    const agent = await createAgent(settling(t), company.id);
    await addCost(t.api, company.id, event(agent.id, 200));
    const hard = (await incidents(t, company.id)).find((i) => i.threshold_type === 'hard')!;
    expect((await companyRow(t, company.id)).status).toBe('paused');
    const res = await resolve(company.id, hard.id, { action: 'raise_budget_and_resume', amount: 201 });
    expect(res.status, res.text).toBe(200);
    expect(res.body.resumed).toBe(true);
    expect(await companyRow(t, company.id)).toMatchObject({ status: 'active', pause_reason: null, budget: 201 });
    const shown = (await t.api.get(`/api/companies/${company.id}`)).body;
    expect([shown.status, shown.budgetMonthlyCents]).toEqual(['active', 201]);
    expect((await t.api.get(`/api/companies/${company.id}/costs/summary`)).body.budgetCents).toBe(201);
  });

  it('a project incident raise resolves it and frees the project', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const projectId = await createProject(t.api, company.id);
    expect((await upsert(company.id, { scopeType: 'project', scopeId: projectId, amount: 50 })).status).toBe(201);
    await addCost(t.api, company.id, event(agent.id, 60, { projectId }));
    const hard = (await incidents(t, company.id)).find((i) => i.threshold_type === 'hard')!;
    expect((await overview(company.id)).pausedProjectCount).toBe(1);
    const res = await resolve(company.id, hard.id, { action: 'raise_budget_and_resume', amount: 61 });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ resumed: true, windowStart: null, policy: expect.objectContaining({ amount: 61, windowKind: 'lifetime' }) });
    const body = await overview(company.id);
    expect([body.pausedProjectCount, body.activeIncidents.length]).toEqual([0, 0]);
  });

  it('a project hard stop pauses the project in the work plugin: no new issue in it until the budget is raised', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const projectId = await createProject(t.api, company.id);
    expect((await upsert(company.id, { scopeType: 'project', scopeId: projectId, amount: 50 })).status).toBe(201);
    await addCost(settling(t), company.id, event(agent.id, 60, { projectId }));
    expect((await t.api.get(`/api/projects/${projectId}`)).body).toMatchObject({ pausedAt: expect.stringMatching(ISO), pauseReason: 'budget_hard_stop' });
    const refused = await t.api.post(`/api/companies/${company.id}/issues`, { title: 'More work', projectId });
    expect([refused.status, refused.body.code]).toEqual([409, 'project_paused']);
    const hard = (await incidents(t, company.id)).find((i) => i.threshold_type === 'hard')!;
    expect((await settling(t).post(`/api/companies/${company.id}/budget-incidents/${hard.id}/resolve`, { action: 'raise_budget_and_resume', amount: 100 })).status).toBe(200);
    expect((await t.api.get(`/api/projects/${projectId}`)).body).toMatchObject({ pausedAt: null, pauseReason: null });
    expect((await t.api.post(`/api/companies/${company.id}/issues`, { title: 'More work', projectId })).status).toBe(201);
  });

  it('an unknown incident, a malformed id and an incident of another company are 404', async () => {
    const { company, hard } = await stoppedAgent();
    const other = await createCompany(settling(t));
    for (const [companyId, incidentId] of [[company.id, randomUUID()], [company.id, 'not-an-id'], [other.id, hard.id]] as const) {
      const res = await resolve(companyId, incidentId, { action: 'keep_paused' });
      expect({ incidentId, status: res.status, code: res.body.code }).toEqual({ incidentId, status: 404, code: 'incident_not_found' });
    }
    expect((await incidents(t, company.id)).find((i) => i.id === hard.id)!.status).toBe('open');
  });
});

describe('a deleted company', () => {
  it('takes its cost data with it', async () => {
    const company = await createCompany(settling(t), { budgetMonthlyCents: 100 });
    const agent = await createAgent(settling(t), company.id, { budgetMonthlyCents: 50 });
    await addCost(t.api, company.id, event(agent.id, 120, { projectId: randomUUID() }));
    expect((await t.api.post(`/api/companies/${company.id}/finance-events`, { kind: 'fee', direction: 'debit', amountCents: 5 })).status).toBe(201);
    const keep = await createCompany(settling(t), { budgetMonthlyCents: 100 });
    const keeper = await createAgent(settling(t), keep.id);
    await addCost(t.api, keep.id, event(keeper.id, 10));
    const tables = ['cost_events', 'cost_rollups', 'spend_totals', 'budget_policies', 'budget_incidents', 'finance_events'];
    const counts = async (companyId: string) => {
      const out: Record<string, number> = {};
      for (const table of tables) out[table] = (await t.sql.query(`select count(*)::int as n from plugin_costs.${table} where company_id = $1`, [companyId])).rows[0].n;
      return out;
    };
    expect(await counts(company.id)).toEqual({ cost_events: 1, cost_rollups: 1, spend_totals: 6, budget_policies: 2, budget_incidents: 4, finance_events: 1 });
    const res = await t.api.delete(`/api/companies/${company.id}`);
    expect(res.status, res.text).toBeLessThan(300);
    await expect.poll(() => counts(company.id)).toEqual(Object.fromEntries(tables.map((x) => [x, 0])));
    expect(await counts(keep.id)).toMatchObject({ cost_events: 1, spend_totals: 4, budget_policies: 1 });
  });
});
