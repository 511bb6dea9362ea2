import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { installAndEnable } from '../../support/plugins.ts';
import { addCost, createProject, event, lastMonthMoment, settling } from './helpers.ts';

/**
 * The budget-blocks service as the model gateway asks it before forwarding a call: the open hard
 * stops, the budget left before the nearest hard stop (remainingCents) and the pause of the
 * agent or its company (paused).
 */
const CALLER = fileURLToPath(new URL('./fixtures/usage-caller', import.meta.url));

let t: TestKernel;
beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  await installAndEnable(t, CALLER);
});
afterAll(async () => { await t?.stop(); });

async function blocks(companyId: string, agentId: string, projectId: string | null = null): Promise<any> {
  const res = await t.api.post(`/api/plugins/usage-caller/companies/${companyId}/call/budget-blocks`, { agentId, projectId });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

const upsert = async (companyId: string, body: Record<string, unknown>) => {
  const res = await settling(t).post(`/api/companies/${companyId}/budgets/policies`, body);
  expect(res.status, res.text).toBeLessThan(300);
};

describe('budget-blocks: remainingCents', () => {
  it('is null when no hard-stop policy applies', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    await addCost(t.api, company.id, event(agent.id, 50));
    expect(await blocks(company.id, agent.id)).toEqual({ blocks: [], remainingCents: null, paused: null });
  });

  it('is the least headroom over the company, agent and project policies in their current windows', async () => {
    const company = await createCompany(settling(t), { budgetMonthlyCents: 1000 });
    const agent = await createAgent(settling(t), company.id, { budgetMonthlyCents: 500 });
    const peer = await createAgent(settling(t), company.id);
    const project = await createProject(t.api, company.id);
    await upsert(company.id, { scopeType: 'project', scopeId: project, amount: 300 });
    expect((await blocks(company.id, agent.id, project)).remainingCents).toBe(300);

    await addCost(t.api, company.id, event(agent.id, 100, { projectId: project }));
    // company 1000-100, agent 500-100, project 300-100
    expect(await blocks(company.id, agent.id, project)).toEqual({ blocks: [], remainingCents: 200, paused: null });
    expect((await blocks(company.id, agent.id)).remainingCents).toBe(400);
    expect((await blocks(company.id, peer.id)).remainingCents).toBe(900);

    // Last month's spend counts in the project's lifetime window, not in the monthly ones.
    await addCost(t.api, company.id, event(peer.id, 150, { projectId: project, occurredAt: lastMonthMoment().toISOString() }));
    expect((await blocks(company.id, peer.id, project)).remainingCents).toBe(50);
    expect((await blocks(company.id, peer.id)).remainingCents).toBe(900);

    // The peer's spend this month lowers the company's headroom, not the agent's.
    await addCost(t.api, company.id, event(peer.id, 700));
    expect((await blocks(company.id, agent.id)).remainingCents).toBe(200);
    expect((await blocks(company.id, peer.id)).remainingCents).toBe(200);
  });

  it('leaves out inactive policies, policies without a hard stop and budgets of 0', async () => {
    const company = await createCompany(settling(t), { budgetMonthlyCents: 800 });
    const agent = await createAgent(settling(t), company.id, { budgetMonthlyCents: 100 });
    const project = await createProject(t.api, company.id);
    await upsert(company.id, { scopeType: 'project', scopeId: project, amount: 50, isActive: false });
    expect((await blocks(company.id, agent.id, project)).remainingCents).toBe(100);
    await upsert(company.id, { scopeType: 'agent', scopeId: agent.id, amount: 100, hardStopEnabled: false });
    expect((await blocks(company.id, agent.id, project)).remainingCents).toBe(800);
    await upsert(company.id, { scopeType: 'company', amount: 0 });
    expect((await blocks(company.id, agent.id, project)).remainingCents).toBeNull();
  });

  it('is 0 (never below) once a hard stop is crossed, which blocks and pauses the agent', async () => {
    const company = await createCompany(settling(t), { budgetMonthlyCents: 10_000 });
    const agent = await createAgent(settling(t), company.id, { budgetMonthlyCents: 200 });
    await addCost(t.api, company.id, event(agent.id, 260));
    expect(await blocks(company.id, agent.id)).toEqual({
      blocks: [{ scopeType: 'agent', scopeId: agent.id }], remainingCents: 0,
      paused: { scopeType: 'agent', scopeId: agent.id, reason: 'budget_hard_stop' },
    });
  });
});

describe('budget-blocks: paused', () => {
  it('names an agent paused by the board, with its reason', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const res = await settling(t).post(`/api/agents/${agent.id}/pause`, {});
    expect(res.status, res.text).toBe(200);
    const reason = (await t.api.get(`/api/agents/${agent.id}`)).body.pauseReason;
    expect(reason).toEqual(expect.any(String));
    expect((await blocks(company.id, agent.id)).paused).toEqual({ scopeType: 'agent', scopeId: agent.id, reason });
  });

  it('names a paused company before its agent: manual when the board paused it', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    expect((await settling(t).post(`/api/agents/${agent.id}/pause`, {})).status).toBe(200);
    const res = await settling(t).patch(`/api/companies/${company.id}`, { status: 'paused' });
    expect(res.status, res.text).toBe(200);
    expect(await blocks(company.id, agent.id)).toEqual({ blocks: [], remainingCents: null, paused: { scopeType: 'company', scopeId: company.id, reason: 'manual' } });
  });

  it('names budget_hard_stop for a company its hard stop paused', async () => {
    const company = await createCompany(settling(t), { budgetMonthlyCents: 100 });
    const agent = await createAgent(settling(t), company.id);
    await addCost(t.api, company.id, event(agent.id, 100));
    expect(await blocks(company.id, agent.id)).toEqual({
      blocks: [{ scopeType: 'company', scopeId: company.id }], remainingCents: 0,
      paused: { scopeType: 'company', scopeId: company.id, reason: 'budget_hard_stop' },
    });
  });

  it('answers nothing about another company: its agent is unknown here, its policies and pauses are not read', async () => {
    const company = await createCompany(settling(t));
    const other = await createCompany(settling(t), { budgetMonthlyCents: 100 });
    const stranger = await createAgent(settling(t), other.id, { budgetMonthlyCents: 50 });
    expect((await settling(t).post(`/api/agents/${stranger.id}/pause`, {})).status).toBe(200);
    expect(await blocks(company.id, stranger.id)).toEqual({ blocks: [], remainingCents: null, paused: null });
    expect((await blocks(company.id, randomUUID())).paused).toBeNull();
  });
});
