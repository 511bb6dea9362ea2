import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { activityCount, agentRow, agentSpent, companyRow, companySpent, event, eventCount, incidents, postCost, settling } from './helpers.ts';

let t: TestKernel;
beforeAll(async () => { t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS }); });
afterAll(async () => { await t?.stop(); });

const statuses = (answers: Array<{ status: number }>) => {
  const counts: Record<number, number> = {};
  for (const a of answers) counts[a.status] = (counts[a.status] ?? 0) + 1;
  return counts;
};

describe('concurrent cost events', () => {
  it('200 concurrent events of one agent: no cent lost, each threshold opens once, one pause', async () => {
    // Sum of 1..200 = 20,100: crosses the agent's 15,000 and the company's 18,000.
    const company = await createCompany(settling(t), { budgetMonthlyCents: 18_000 });
    const agent = await createAgent(settling(t), company.id, { budgetMonthlyCents: 15_000 });
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => postCost(t.api, company.id, event(agent.id, i + 1, { model: `m${i % 7}` }))));
    expect(statuses(answers)).toEqual({ 201: 200 });
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(200);
    const sum = answers.reduce((s, a) => s + a.body.costCents, 0);
    expect(sum).toBe(20_100);

    expect(await eventCount(t, company.id)).toBe(200);
    expect(await agentSpent(t.api, agent.id)).toBe(20_100);
    expect(await companySpent(t.api, company.id)).toBe(20_100);
    expect((await t.api.get(`/api/companies/${company.id}/costs/summary`)).body.spendCents).toBe(20_100);
    const byAgent = (await t.api.get(`/api/companies/${company.id}/costs/by-agent`)).body;
    expect(byAgent.map((r: any) => [r.agentId, r.spendCents, r.eventCount])).toEqual([[agent.id, 20_100, 200]]);
    const { rows: rollups } = await t.sql.query('select sum(cost_cents)::int as cents, sum(event_count)::int as n from plugin_costs.cost_rollups where company_id = $1', [company.id]);
    expect(rollups[0]).toEqual({ cents: 20_100, n: 200 });

    const rows = await incidents(t, company.id);
    const byScope = (scope: string) => rows.filter((i) => i.scope_type === scope).map((i) => i.threshold_type).sort();
    expect(byScope('agent')).toEqual(['hard', 'soft']);
    expect(byScope('company')).toEqual(['hard', 'soft']);
    // Each incident records the spend at the moment it opened, at or past its threshold.
    for (const i of rows) {
      const limit = i.threshold_type === 'hard' ? i.amount_limit : i.amount_limit * 0.8;
      expect(i.amount_observed).toBeGreaterThanOrEqual(limit);
    }
    expect(await agentRow(t, agent.id)).toMatchObject({ status: 'paused', pause_reason: 'budget_hard_stop' });
    expect((await companyRow(t, company.id)).status).toBe('paused');
    expect(await activityCount(t, company.id, 'agent.paused', agent.id)).toBe(1);
    expect(await activityCount(t, company.id, 'company.paused')).toBe(1);
    expect(await activityCount(t, company.id, 'cost_event.created')).toBe(200);
    expect(await activityCount(t, company.id, 'budget.incident_opened')).toBe(4);
  });

  it('many agents of one company concurrently: every agent and the company add up', async () => {
    const company = await createCompany(settling(t), { budgetMonthlyCents: 1_000_000 });
    const agents = [];
    for (let i = 0; i < 12; i++) agents.push(await createAgent(settling(t), company.id, { budgetMonthlyCents: 100 }));
    const keys = await Promise.all(agents.map((a) => createAgentKey(t.api, a.id)));
    // Each agent reports 15 events of 10 cents with its own key: 150 cents each, over its 100 budget.
    const calls: Array<ReturnType<typeof postCost>> = [];
    for (let round = 0; round < 15; round++) {
      for (let i = 0; i < agents.length; i++) calls.push(postCost(t.api.as(keys[i]!), company.id, event(agents[i].id, 10)));
    }
    const answers = await Promise.all(calls);
    expect(statuses(answers)).toEqual({ 201: 180 });
    for (const agent of agents) {
      expect(await agentSpent(t.api, agent.id)).toBe(150);
      expect(await agentRow(t, agent.id)).toMatchObject({ status: 'paused', pause_reason: 'budget_hard_stop' });
      expect(await activityCount(t, company.id, 'agent.paused', agent.id)).toBe(1);
    }
    expect(await companySpent(t.api, company.id)).toBe(1800);
    const rows = await incidents(t, company.id);
    expect(rows.filter((i) => i.scope_type === 'agent' && i.threshold_type === 'hard')).toHaveLength(12);
    expect(rows.filter((i) => i.scope_type === 'agent' && i.threshold_type === 'soft')).toHaveLength(12);
    expect(new Set(rows.filter((i) => i.threshold_type === 'hard').map((i) => i.scope_id)).size).toBe(12);
    expect(rows.filter((i) => i.scope_type === 'company')).toEqual([]);
    const overview = (await t.api.get(`/api/companies/${company.id}/budgets/overview`)).body;
    expect(overview.pausedAgentCount).toBe(12);
    expect(overview.activeIncidents).toHaveLength(24);
  });

  it('several companies concurrently: totals never leak between companies', async () => {
    const companies = [];
    for (let i = 0; i < 5; i++) {
      const company = await createCompany(settling(t), { budgetMonthlyCents: 100 });
      const agent = await createAgent(settling(t), company.id);
      companies.push({ company, agent });
    }
    const calls: Array<ReturnType<typeof postCost>> = [];
    for (let round = 0; round < 30; round++) {
      companies.forEach(({ company, agent }, i) => calls.push(postCost(t.api, company.id, event(agent.id, i + 1 + (round % 3)))));
    }
    const answers = await Promise.all(calls);
    expect(statuses(answers)).toEqual({ 201: 150 });
    for (const [i, { company, agent }] of companies.entries()) {
      // 30 rounds of (i + 1 + round % 3): 30 * (i + 1) + 10 * (0 + 1 + 2).
      const expected = 30 * (i + 1) + 30;
      expect(await eventCount(t, company.id)).toBe(30);
      expect(await agentSpent(t.api, agent.id)).toBe(expected);
      expect(await companySpent(t.api, company.id)).toBe(expected);
      expect((await t.api.get(`/api/companies/${company.id}/costs/summary`)).body.spendCents).toBe(expected);
      const thresholds = (await incidents(t, company.id)).map((x) => x.threshold_type).sort();
      expect(thresholds).toEqual(expected >= 100 ? ['hard', 'soft'] : expected >= 80 ? ['soft'] : []);
      expect((await companyRow(t, company.id)).status).toBe(expected >= 100 ? 'paused' : 'active');
    }
  });

  it('concurrent replays mixed with new events: each key stored once', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const bodies = Array.from({ length: 20 }, (_, i) => event(agent.id, 100 + i));
    const calls: Array<ReturnType<typeof postCost>> = [];
    for (let copy = 0; copy < 5; copy++) {
      bodies.forEach((body, i) => calls.push(postCost(t.api, company.id, body, { 'idempotency-key': `key-${i}` })));
    }
    const answers = await Promise.all(calls);
    expect(statuses(answers)).toEqual({ 201: 100 });
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(20);
    expect(answers.filter((a) => a.headers.get('x-idempotent-replayed') === 'true')).toHaveLength(80);
    expect(await eventCount(t, company.id)).toBe(20);
    // 100 + 101 + ... + 119
    expect(await agentSpent(t.api, agent.id)).toBe(2190);
    expect(await companySpent(t.api, company.id)).toBe(2190);
  });

  it('a resolve that raises the budget while events of the agent arrive answers 200 and loses no cent', async () => {
    const failures: string[] = [];
    for (let round = 0; round < 12; round++) {
      const company = await createCompany(settling(t));
      const agent = await createAgent(settling(t), company.id, { budgetMonthlyCents: 100 });
      expect((await postCost(t.api, company.id, event(agent.id, 85))).status).toBe(201);
      const soft = (await incidents(t, company.id)).find((i) => i.threshold_type === 'soft')!;
      expect(soft).toBeDefined();
      const resolving = t.api.post(`/api/companies/${company.id}/budget-incidents/${soft.id}/resolve`, { action: 'raise_budget_and_resume', amount: 100_000 });
      const events = Array.from({ length: 10 }, () => postCost(t.api, company.id, event(agent.id, 5)));
      const [resolved, ...posted] = await Promise.all([resolving, ...events]);
      if (resolved!.status !== 200) failures.push(`round ${round}: resolve ${resolved!.status} ${resolved!.text}`);
      for (const p of posted) if (p.status !== 201) failures.push(`round ${round}: cost event ${p.status} ${p.text}`);
      const accepted = posted.filter((p) => p.status === 201).length;
      expect(await agentSpent(t.api, agent.id)).toBe(85 + 5 * accepted);
    }
    expect(failures).toEqual([]);
  });
  it('bad headers among 200 concurrent events fail only their own request', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    // 10 run ids that are not uuids (ignored, as the activity log documents), 5 empty and 5 oversized idempotency keys (refused).
    const headers = (i: number): Record<string, string> => {
      if (i % 20 === 0) return { 'x-service-run-id': `not-a-uuid-${i}` };
      if (i % 40 === 10) return { 'idempotency-key': '' };
      if (i % 40 === 30) return { 'idempotency-key': 'k'.repeat(5000) };
      return { 'idempotency-key': `ok-${i}` };
    };
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => postCost(t.api, company.id, event(agent.id, 1), headers(i))));
    const refused = answers.filter((_, i) => i % 20 === 10);
    expect(refused.map((a) => [a.status, a.body.code])).toEqual(refused.map(() => [400, 'invalid_idempotency_key']));
    expect(statuses(answers)).toEqual({ 201: 190, 400: 10 });
    expect(answers.every((a) => !/invalid input syntax|violates|duplicate key/.test(a.text))).toBe(true);
    expect(await eventCount(t, company.id)).toBe(190);
    expect(await agentSpent(t.api, agent.id)).toBe(190);
    expect(await activityCount(t, company.id, 'cost_event.created')).toBe(190);
  });
});
