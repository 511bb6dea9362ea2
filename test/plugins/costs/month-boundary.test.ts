import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { addCost, agentRow, agentSpent, companySpent, createProject, event, incidents, lastMonthMoment, monthKey, settling } from './helpers.ts';

let t: TestKernel;
beforeAll(async () => { t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS }); });
afterAll(async () => { await t?.stop(); });

const lastMonth = () => lastMonthMoment();

describe('month-to-date spend', () => {
  it('an event of last month counts all time and by agent, but not in spentMonthlyCents', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    await addCost(t.api, company.id, event(agent.id, 500, { occurredAt: lastMonth().toISOString() }));
    expect(await agentSpent(t.api, agent.id)).toBe(0);
    expect(await companySpent(t.api, company.id)).toBe(0);
    await addCost(t.api, company.id, event(agent.id, 70));
    expect(await agentSpent(t.api, agent.id)).toBe(70);
    expect(await companySpent(t.api, company.id)).toBe(70);

    const summary = await t.api.get(`/api/companies/${company.id}/costs/summary`);
    expect(summary.body.spendCents).toBe(570);
    const byAgent = await t.api.get(`/api/companies/${company.id}/costs/by-agent`);
    expect(byAgent.body.map((r: any) => [r.agentId, r.spendCents, r.eventCount])).toEqual([[agent.id, 570, 2]]);

    const { rows } = await t.sql.query(
      `select scope_type, period, cost_cents::int from plugin_costs.spend_totals where company_id = $1 order by scope_type, period`, [company.id]);
    const thisMonth = monthKey(new Date());
    const previous = monthKey(lastMonth());
    expect(rows).toEqual([
      { scope_type: 'agent', period: previous, cost_cents: 500 }, { scope_type: 'agent', period: thisMonth, cost_cents: 70 }, { scope_type: 'agent', period: 'lifetime', cost_cents: 570 },
      { scope_type: 'company', period: previous, cost_cents: 500 }, { scope_type: 'company', period: thisMonth, cost_cents: 70 }, { scope_type: 'company', period: 'lifetime', cost_cents: 570 },
    ].sort((a, b) => a.scope_type.localeCompare(b.scope_type) || a.period.localeCompare(b.period)));
  });

  it('an event of last month after this month\'s does not roll the month back', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    await addCost(t.api, company.id, event(agent.id, 40));
    await addCost(t.api, company.id, event(agent.id, 900, { occurredAt: lastMonth().toISOString() }));
    expect(await agentSpent(t.api, agent.id)).toBe(40);
    expect(await companySpent(t.api, company.id)).toBe(40);
  });

  it('spend stored for last month reads as 0, and a new event shows only this month', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    // Last month's spend: in the plugin's totals for that month, which are the only figures
    // (the kernel keeps no copy to go stale; it reads the plugin's view of the current month).
    await addCost(t.api, company.id, event(agent.id, 300, { occurredAt: lastMonth().toISOString() }));
    expect((await agentRow(t, agent.id)).spent).toBe(0);
    expect(await agentSpent(t.api, agent.id)).toBe(0);
    await expect.poll(() => companySpent(t.api, company.id)).toBe(0);

    await addCost(t.api, company.id, event(agent.id, 25));
    expect(await agentSpent(t.api, agent.id)).toBe(25);
    expect(await companySpent(t.api, company.id)).toBe(25);
    const { rows } = await t.sql.query("select cost_cents::int as cents, period as month from plugin_costs.spend_totals where scope_type = 'agent' and scope_id = $1 and period <> 'lifetime' order by period desc", [agent.id]);
    expect(rows[0]).toEqual({ cents: 25, month: monthKey(new Date()) });
  });

  it('the kernel route of the company shows the same month-to-date figure as the stored month', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    await addCost(t.api, company.id, event(agent.id, 12));
    // The simulated rollover: this month's totals become last month's, as if the month had ended.
    await t.sql.query('update plugin_costs.spend_totals set period = $2 where company_id = $1 and period = $3', [company.id, monthKey(lastMonth()), monthKey(new Date())]);
    expect(await agentSpent(t.api, agent.id)).toBe(0);
    await expect.poll(() => companySpent(t.api, company.id)).toBe(0);
    const list = await t.api.get(`/api/companies/${company.id}/agents`);
    expect(list.body.find((a: any) => a.id === agent.id).spentMonthlyCents).toBe(0);
  });
});

describe('policies measure their own window', () => {
  it('a monthly agent policy ignores last month: spend above budget last month opens no incident', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id, { budgetMonthlyCents: 100 });
    await addCost(t.api, company.id, event(agent.id, 500, { occurredAt: lastMonth().toISOString() }));
    expect(await incidents(t, company.id)).toEqual([]);
    expect((await agentRow(t, agent.id)).status).toBe('idle');
    const overview = await t.api.get(`/api/companies/${company.id}/budgets/overview`);
    expect(overview.body.policies.map((p: any) => [p.scopeType, p.amount, p.observedAmount, p.remainingAmount, p.utilizationPercent])).toEqual([['agent', 100, 0, 100, 0]]);
    expect(overview.body.activeIncidents).toEqual([]);

    // This month's own spend is what crosses the thresholds.
    await addCost(t.api, company.id, event(agent.id, 85));
    expect((await incidents(t, company.id)).map((i) => [i.threshold_type, i.amount_limit, i.amount_observed])).toEqual([['soft', 100, 85]]);
    expect((await agentRow(t, agent.id)).status).toBe('idle');
    await addCost(t.api, company.id, event(agent.id, 15));
    expect((await incidents(t, company.id)).map((i) => [i.threshold_type, i.amount_limit, i.amount_observed])).toEqual([['soft', 100, 85], ['hard', 100, 100]]);
    expect((await agentRow(t, agent.id)).status).toBe('paused');
  });

  it('a monthly company policy ignores last month', async () => {
    const company = await createCompany(settling(t), { budgetMonthlyCents: 200 });
    const agent = await createAgent(settling(t), company.id);
    await addCost(t.api, company.id, event(agent.id, 10_000, { occurredAt: lastMonth().toISOString() }));
    expect(await incidents(t, company.id)).toEqual([]);
    const res = await t.api.get(`/api/companies/${company.id}`);
    expect(res.body.status).toBe('active');
  });

  it('a lifetime project policy counts spend of every month', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const projectId = await createProject(t.api, company.id);
    const policy = await t.api.post(`/api/companies/${company.id}/budgets/policies`, { scopeType: 'project', scopeId: projectId, amount: 400 });
    expect(policy.status, policy.text).toBe(201);
    expect(policy.body.windowKind).toBe('lifetime');
    await addCost(t.api, company.id, event(agent.id, 350, { projectId, occurredAt: lastMonth().toISOString() }));
    expect((await incidents(t, company.id)).map((i) => [i.scope_type, i.threshold_type, i.amount_observed])).toEqual([['project', 'soft', 350]]);
    await addCost(t.api, company.id, event(agent.id, 50, { projectId }));
    expect((await incidents(t, company.id)).map((i) => [i.scope_type, i.threshold_type, i.amount_observed])).toEqual([['project', 'soft', 350], ['project', 'hard', 400]]);
    const overview = await t.api.get(`/api/companies/${company.id}/budgets/overview`);
    expect(overview.body.pausedProjectCount).toBe(1);
    expect(overview.body.policies[0]).toMatchObject({ scopeType: 'project', observedAmount: 400, remainingAmount: 0, utilizationPercent: 100 });
    expect(overview.body.activeIncidents.map((i: any) => [i.thresholdType, i.windowStart, i.windowEnd])).toEqual([['hard', null, null], ['soft', null, null]]);
  });
});
