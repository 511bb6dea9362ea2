import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { addCost, agentRow, companyRow, event, incidents, settling } from './helpers.ts';

/**
 * A company's and an agent's monthly budget is kept once, as the kernel's budgetMonthlyCents:
 * their monthly policy in the costs plugin stores no amount and reads the kernel's figure, so a
 * budget written anywhere (the kernel's routes, the plugin's, the plugin disabled) is the
 * policy's at once, with nothing to copy.
 */
let t: TestKernel;
beforeAll(async () => { t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS }); });
afterAll(async () => { await t?.stop(); });

const storedAmount = async (scopeType: string, scopeId: string) =>
  (await t.sql.query("select amount from plugin_costs.budget_policies where scope_type = $1 and scope_id = $2 and window_kind = 'calendar_month_utc'", [scopeType, scopeId])).rows.map((row: any) => row.amount);
const policyOf = async (companyId: string, scopeType: string, scopeId: string) =>
  (await t.api.get(`/api/companies/${companyId}/budgets/overview`)).body.policies.find((p: any) => p.scopeType === scopeType && p.scopeId === scopeId);
const summarise = (rows: Awaited<ReturnType<typeof incidents>>) => rows.map((i) => `${i.scope_type}:${i.threshold_type}:${i.amount_limit}:${i.amount_observed}:${i.status}`);

describe('the monthly budget of a company or an agent', () => {
  it('is stored on the kernel row only: the policy keeps no amount, and the database refuses one', async () => {
    const company = await createCompany(settling(t), { budgetMonthlyCents: 5000 });
    const agent = await createAgent(settling(t), company.id, { budgetMonthlyCents: 700 });
    expect(await storedAmount('company', company.id)).toEqual([null]);
    expect(await storedAmount('agent', agent.id)).toEqual([null]);
    expect(await policyOf(company.id, 'company', company.id)).toMatchObject({ amount: 5000 });
    expect(await policyOf(company.id, 'agent', agent.id)).toMatchObject({ amount: 700 });
    const copy = await t.sql.query("update plugin_costs.budget_policies set amount = 1 where scope_id = $1", [agent.id]).catch((error: { code?: string }) => error);
    expect((copy as { code?: string }).code).toBe('23514');
  });

  it('set by a policy upsert with an amount is the kernel\'s budget, written there alone', async () => {
    const company = await createCompany(settling(t), { budgetMonthlyCents: 100 });
    const agent = await createAgent(settling(t), company.id);
    const companyPolicy = await t.api.post(`/api/companies/${company.id}/budgets/policies`, { scopeType: 'company', amount: 1234, warnPercent: 50 });
    expect(companyPolicy.status, companyPolicy.text).toBe(200);
    expect(companyPolicy.body).toMatchObject({ amount: 1234, warnPercent: 50 });
    expect((await t.api.get(`/api/companies/${company.id}`)).body.budgetMonthlyCents).toBe(1234);
    const agentPolicy = await t.api.post(`/api/companies/${company.id}/budgets/policies`, { scopeType: 'agent', scopeId: agent.id, amount: 321 });
    expect(agentPolicy.status, agentPolicy.text).toBe(201);
    expect((await t.api.get(`/api/agents/${agent.id}`)).body.budgetMonthlyCents).toBe(321);
    expect(await storedAmount('company', company.id)).toEqual([null]);
    expect(await storedAmount('agent', agent.id)).toEqual([null]);
  });

  it('of 0 holds nothing; raised through the kernel route, the next cost event is held to it', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const zero = await t.api.post(`/api/companies/${company.id}/budgets/policies`, { scopeType: 'agent', scopeId: agent.id, amount: 0 });
    expect(zero.status, zero.text).toBe(201);
    expect(zero.body.amount).toBe(0);
    await addCost(t.api, company.id, event(agent.id, 60));
    expect(await incidents(t, company.id)).toEqual([]);
    expect((await settling(t).patch(`/api/agents/${agent.id}`, { budgetMonthlyCents: 50 })).status).toBe(200);
    await addCost(t.api, company.id, event(agent.id, 0));
    expect(summarise(await incidents(t, company.id))).toEqual(['agent:soft:50:60:open', 'agent:hard:50:60:open']);
    expect(await agentRow(t, agent.id)).toMatchObject({ status: 'paused', pause_reason: 'budget_hard_stop', budget: 50 });
  });

  it('changed through the kernel route starts a new revision: the new budget stops the agent again', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id, { budgetMonthlyCents: 100 });
    await addCost(t.api, company.id, event(agent.id, 100));
    expect((await agentRow(t, agent.id)).status).toBe('paused');
    // The board raises the budget on the agent itself and resumes it.
    expect((await settling(t).patch(`/api/agents/${agent.id}`, { budgetMonthlyCents: 300 })).status).toBe(200);
    expect((await t.api.post(`/api/agents/${agent.id}/resume`, {})).status).toBe(200);
    await addCost(t.api, company.id, event(agent.id, 100));
    expect((await agentRow(t, agent.id)).status).toBe('idle');
    // Set back to the budget it was stopped at: that stop fires again.
    expect((await settling(t).patch(`/api/agents/${agent.id}`, { budgetMonthlyCents: 100 })).status).toBe(200);
    await addCost(t.api, company.id, event(agent.id, 1));
    const hard = summarise(await incidents(t, company.id)).filter((line) => line.includes(':hard:'));
    expect(hard).toEqual(['agent:hard:100:100:open', 'agent:hard:100:201:open']);
    expect(await agentRow(t, agent.id)).toMatchObject({ status: 'paused', pause_reason: 'budget_hard_stop' });
  });

  it('set while the costs plugin is disabled is the policy\'s once it is enabled again, with nothing to catch up', async () => {
    const company = await createCompany(settling(t), { budgetMonthlyCents: 1000 });
    const agent = await createAgent(settling(t), company.id);
    await addCost(t.api, company.id, event(agent.id, 400));
    expect((await t.api.post('/api/plugins/costs/disable', {})).status).toBe(200);
    try {
      const patched = await t.api.patch(`/api/companies/${company.id}`, { budgetMonthlyCents: 300 });
      expect(patched.status, patched.text).toBe(200);
      expect(patched.body.budgetMonthlyCents).toBe(300);
    } finally {
      expect((await t.api.post('/api/plugins/costs/enable', {})).status).toBe(200);
    }
    expect(await policyOf(company.id, 'company', company.id)).toMatchObject({ amount: 300, observedAmount: 400, remainingAmount: 0 });
    await addCost(t.api, company.id, event(agent.id, 0));
    expect(await companyRow(t, company.id)).toMatchObject({ status: 'paused', pause_reason: 'budget_hard_stop', budget: 300 });
  });
});
