import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { addMember, boardToken, createAgent, createAgentKey, createCompany, insertUser } from '../../support/fixtures.ts';
import { event, settling } from './helpers.ts';

/** Company scoping of the cost routes in authenticated mode: board users reach only their companies. */
let t: TestKernel;
let admin: string;
let member: string;
let outsider: string;
let leaver: string;
let company: any;
let agent: any;
let otherAgentKey: string;
let incidentId: string;

async function snapshot(): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const table of ['cost_events', 'spend_totals', 'budget_policies', 'budget_incidents', 'finance_events']) {
    out[table] = (await t.sql.query(`select count(*)::int as n from plugin_costs.${table}`)).rows[0].n;
  }
  out.openIncidents = (await t.sql.query(`select count(*)::int as n from plugin_costs.budget_incidents where status = 'open'`)).rows[0].n;
  out.policyAmounts = (await t.sql.query('select amount::int from plugin_costs.budget_policies order by id')).rows.map((r) => r.amount);
  out.kernel = (await t.sql.query("select c.budget_monthly_cents::int as cb, keel_private.month_spend(c.id, 'company', c.id)::int as cs, c.status as c_status, a.budget_monthly_cents::int as ab, a.status as a_status from companies c join agents a on a.company_id = c.id where c.id = $1", [company.id])).rows;
  return out;
}

beforeAll(async () => {
  t = await startTestKernel({ deploymentMode: 'authenticated' }, { firstPartyDir: FIRST_PARTY_PLUGINS });
  admin = await boardToken(t, await insertUser(t, { admin: true }));
  const memberId = await insertUser(t);
  member = await boardToken(t, memberId);
  outsider = await boardToken(t, await insertUser(t));
  const leaverId = await insertUser(t);
  leaver = await boardToken(t, leaverId);
  const asAdmin = t.api.as(admin);
  company = await createCompany(settling(t, asAdmin), { budgetMonthlyCents: 1000 });
  agent = await createAgent(settling(t, asAdmin), company.id, { budgetMonthlyCents: 100 });
  await addMember(t, company.id, memberId, 'owner');
  await addMember(t, company.id, leaverId, 'member', 'left');
  const other = await createCompany(settling(t, asAdmin));
  const otherAgent = await createAgent(settling(t, asAdmin), other.id);
  otherAgentKey = await createAgentKey(asAdmin, otherAgent.id);
  const res = await asAdmin.post(`/api/companies/${company.id}/cost-events`, event(agent.id, 90));
  expect(res.status, res.text).toBe(201);
  const { rows } = await t.sql.query(`select id from plugin_costs.budget_incidents where company_id = $1 and threshold_type = 'soft' and scope_type = 'agent'`, [company.id]);
  incidentId = rows[0].id;
});
afterAll(async () => { await t?.stop(); });

function routes(): Array<[string, string, unknown?]> {
  const c = company.id;
  return [
    ['POST', `/api/companies/${c}/cost-events`, event(agent.id, 5000)],
    ['GET', `/api/companies/${c}/costs/summary`],
    ['GET', `/api/companies/${c}/costs/by-agent`],
    ['GET', `/api/companies/${c}/costs/by-agent-model`],
    ['GET', `/api/companies/${c}/costs/by-provider`],
    ['GET', `/api/companies/${c}/costs/by-biller`],
    ['GET', `/api/companies/${c}/costs/by-project`],
    ['GET', `/api/companies/${c}/costs/by-source`],
    ['GET', `/api/companies/${c}/costs/by-source?groupBy=model`],
    ['GET', `/api/companies/${c}/costs/window-spend`],
    ['GET', `/api/companies/${c}/costs/quota-windows`],
    ['PATCH', `/api/companies/${c}/budgets`, { budgetMonthlyCents: 1 }],
    ['PATCH', `/api/agents/${agent.id}/budgets`, { budgetMonthlyCents: 1 }],
    ['GET', `/api/companies/${c}/budgets/overview`],
    ['POST', `/api/companies/${c}/budgets/policies`, { scopeType: 'agent', scopeId: agent.id, amount: 1 }],
    ['POST', `/api/companies/${c}/budget-incidents/${incidentId}/resolve`, { action: 'raise_budget_and_resume', amount: 99_999 }],
    ['POST', `/api/companies/${c}/finance-events`, { kind: 'fee', direction: 'debit', amountCents: 1 }],
    ['GET', `/api/companies/${c}/costs/finance-summary`],
    ['GET', `/api/companies/${c}/costs/finance-by-biller`],
    ['GET', `/api/companies/${c}/costs/finance-by-kind`],
    ['GET', `/api/companies/${c}/costs/finance-events`],
  ];
}

describe('cost routes in authenticated mode', () => {
  it('answer 401 without credentials and change nothing', async () => {
    const before = await snapshot();
    for (const [method, path, body] of routes()) {
      const res = await t.api.request(method, path, { body });
      expect({ method, path, status: res.status, code: res.body?.code }).toEqual({ method, path, status: 401, code: 'unauthorized' });
    }
    expect(await snapshot()).toEqual(before);
  });

  it('answer 403 to a board user who is not a member of the company, and change nothing', async () => {
    const before = await snapshot();
    for (const [method, path, body] of routes()) {
      const res = await t.api.request(method, path, { body, token: outsider });
      expect({ method, path, status: res.status, code: res.body?.code }).toEqual({ method, path, status: 403, code: 'company_access_denied' });
    }
    expect(await snapshot()).toEqual(before);
  });

  it('answer 403 to a board user whose membership was left', async () => {
    const before = await snapshot();
    for (const [method, path, body] of routes()) {
      const res = await t.api.request(method, path, { body, token: leaver });
      expect({ method, path, status: res.status }).toEqual({ method, path, status: 403 });
    }
    expect(await snapshot()).toEqual(before);
  });

  it('answer 403 to an agent key of another company, and change nothing', async () => {
    const before = await snapshot();
    for (const [method, path, body] of routes()) {
      const res = await t.api.request(method, path, { body, token: otherAgentKey });
      expect({ method, path, status: res.status }).toEqual({ method, path, status: 403 });
    }
    expect(await snapshot()).toEqual(before);
  });

  it('serve a member of the company', async () => {
    const as = t.api.as(member);
    const summary = await as.get(`/api/companies/${company.id}/costs/summary`);
    expect(summary.status).toBe(200);
    expect(summary.body).toMatchObject({ spendCents: 90, budgetCents: 1000, utilizationPercent: 9 });
    const overview = await as.get(`/api/companies/${company.id}/budgets/overview`);
    expect(overview.status).toBe(200);
    expect(overview.body.activeIncidents.map((i: any) => i.id)).toEqual([incidentId]);
    const posted = await as.post(`/api/companies/${company.id}/cost-events`, event(agent.id, 5));
    expect(posted.status, posted.text).toBe(201);
    const { rows } = await t.sql.query(`select actor_type, actor_id from activity_log where action = 'cost_event.created' and entity_id = $1`, [posted.body.id]);
    expect(rows[0].actor_type).toBe('user');
    const patched = await as.patch(`/api/agents/${agent.id}/budgets`, { budgetMonthlyCents: 200 });
    expect(patched.status, patched.text).toBe(200);
    const resolved = await as.post(`/api/companies/${company.id}/budget-incidents/${incidentId}/resolve`, { action: 'keep_paused' });
    expect(resolved.status, resolved.text).toBe(200);
    expect(resolved.body.status).toBe('resolved');
    const finance = await as.post(`/api/companies/${company.id}/finance-events`, { kind: 'fee', direction: 'debit', amountCents: 3 });
    expect(finance.status).toBe(201);
    const quota = await as.get(`/api/companies/${company.id}/costs/quota-windows`);
    expect(quota.status).toBe(200);
    expect(quota.body.map((p: any) => [p.provider, p.windows[0].spendCents])).toEqual([['alpha', 95]]);
  });

  it('an agent key of the company reads its costs but not board routes', async () => {
    const key = await createAgentKey(t.api.as(admin), agent.id);
    const as = t.api.as(key);
    expect((await as.get(`/api/companies/${company.id}/costs/summary`)).status).toBe(200);
    const bySource = await as.get(`/api/companies/${company.id}/costs/by-source?groupBy=model`);
    expect(bySource.status, bySource.text).toBe(200);
    expect(bySource.body.map((row: any) => [row.source, row.model])).toEqual([['self_reported', 'alpha-large']]);
    for (const [method, path, body] of [
      ['GET', `/api/companies/${company.id}/budgets/overview`], ['GET', `/api/companies/${company.id}/costs/quota-windows`],
      ['PATCH', `/api/companies/${company.id}/budgets`, { budgetMonthlyCents: 1 }], ['POST', `/api/companies/${company.id}/finance-events`, { kind: 'fee', direction: 'debit', amountCents: 1 }],
    ] as Array<[string, string, unknown?]>) {
      const res = await as.request(method, path, { body });
      expect({ method, path, status: res.status, code: res.body.code }).toEqual({ method, path, status: 403, code: 'board_required' });
    }
  });
});
