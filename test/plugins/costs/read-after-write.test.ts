import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApi, FIRST_PARTY_PLUGINS, startPeerKernel, startTestKernel, type Api, type PeerKernel, type TestKernel } from '../../support/harness.ts';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { agentRow, event, incidents, postCost } from './helpers.ts';

/**
 * A budget set through the API is there from the very next request: the answer of a company or
 * agent create (or update) comes after the costs plugin made its policy, so the next read shows
 * it and the next cost event is held to it. No waiting between the calls, in one process or two.
 */
let t: TestKernel;
let peer: PeerKernel;
let peerApi: Api;

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  peer = await startPeerKernel(t, {}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  peerApi = createApi(peer.url);
}, 120_000);
afterAll(async () => {
  await peer?.stop();
  await t?.stop();
});

async function policies(api: Api, companyId: string): Promise<Array<{ scopeType: string; scopeId: string; amount: number }>> {
  const res = await api.get(`/api/companies/${companyId}/budgets/overview`);
  expect(res.status, res.text).toBe(200);
  return res.body.policies;
}

describe('a budget set on create', () => {
  it('a company created with a budget shows its policy in the very next read, 10 times in a row', async () => {
    for (let i = 0; i < 10; i++) {
      const company = await createCompany(t.api, { name: `Budgeted ${i}`, budgetMonthlyCents: 5000 });
      expect(await policies(t.api, company.id)).toEqual([expect.objectContaining({ scopeType: 'company', scopeId: company.id, amount: 5000 })]);
    }
  });

  it('a cost event right after the agent was created with a budget crosses it into a hard stop, 5 times in a row', async () => {
    const company = await createCompany(t.api, { name: 'Stopped at once' });
    for (let i = 0; i < 5; i++) {
      const agent = await createAgent(t.api, company.id, { name: `Spender ${i}`, budgetMonthlyCents: 100 });
      const res = await postCost(t.api, company.id, event(agent.id, 150));
      expect(res.status, res.text).toBe(201);
      expect(await agentRow(t, agent.id)).toMatchObject({ status: 'paused', pause_reason: 'budget_hard_stop' });
    }
    expect((await incidents(t, company.id)).filter((i) => i.threshold_type === 'hard')).toHaveLength(5);
  });

  it('a company budget crossed by the first cost event after the create pauses the company', async () => {
    const company = await createCompany(t.api, { name: 'Company stop', budgetMonthlyCents: 50 });
    const agent = await createAgent(t.api, company.id, { name: 'Worker' });
    expect((await postCost(t.api, company.id, event(agent.id, 80))).status).toBe(201);
    const { rows } = await t.sql.query('select status, pause_reason from companies where id = $1', [company.id]);
    expect(rows[0]).toEqual({ status: 'paused', pause_reason: 'budget_hard_stop' });
  });

  it('budgets changed through the company and agent PATCH routes are in the policies at once', async () => {
    const company = await createCompany(t.api, { name: 'Patched', budgetMonthlyCents: 5000 });
    const agent = await createAgent(t.api, company.id, { name: 'Patched agent' });
    expect((await t.api.patch(`/api/companies/${company.id}`, { budgetMonthlyCents: 7000 })).status).toBe(200);
    expect((await t.api.patch(`/api/agents/${agent.id}`, { budgetMonthlyCents: 300 })).status).toBe(200);
    const amounts = (await policies(t.api, company.id)).map((p) => `${p.scopeType}:${p.amount}`).sort();
    expect(amounts).toEqual(['agent:300', 'company:7000']);
    expect((await postCost(t.api, company.id, event(agent.id, 400))).status).toBe(201);
    expect((await agentRow(t, agent.id)).status).toBe('paused');
  });
});

describe('two Keel processes on one database', () => {
  it('a company created at one process shows its policy at the other at once, and an agent budget set at one stops spend reported to the other', async () => {
    for (let i = 0; i < 5; i++) {
      const company = await createCompany(peerApi, { name: `Peer budgeted ${i}`, budgetMonthlyCents: 2500 });
      expect(await policies(t.api, company.id)).toEqual([expect.objectContaining({ scopeType: 'company', amount: 2500 })]);
    }
    const company = await createCompany(t.api, { name: 'Peer stop' });
    const agent = await createAgent(t.api, company.id, { name: 'Peer spender', budgetMonthlyCents: 100 });
    expect((await postCost(peerApi, company.id, event(agent.id, 120))).status).toBe(201);
    expect((await agentRow(t, agent.id)).status).toBe('paused');
  });
});
