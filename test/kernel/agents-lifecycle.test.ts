import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { activity, agentWithKey, createAgent, expectUnchanged, insertCompany } from './agents-fixtures.ts';

let t: TestKernel;
let companyId: string;
let strictCompanyId: string;
let otherCompanyId: string;
const statusChanges: any[] = [];

beforeAll(async () => {
  t = await startTestKernel();
  companyId = await insertCompany(t);
  strictCompanyId = await insertCompany(t, { requireApproval: true });
  otherCompanyId = await insertCompany(t);
  t.kernel.services.events.on('agent.status_changed', (payload) => { statusChanges.push(payload); });
});
afterAll(async () => { await t?.stop(); });

async function hirePending(): Promise<{ agent: any; approval: any }> {
  const res = await t.api.post(`/api/companies/${strictCompanyId}/agent-hires`, { name: `Pending ${randomUUID().slice(0, 6)}` });
  expect(res.status).toBe(201);
  return res.body;
}

describe('pause and resume', () => {
  it('pauses with a reason and resumes to idle, with activity and events', async () => {
    const { agent, token } = await agentWithKey(t, companyId);
    const paused = await t.api.post(`/api/agents/${agent.id}/pause`, { reason: 'maintenance' });
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ status: 'paused', pauseReason: 'maintenance' });
    const pausedAt = paused.body.pausedAt;
    expect(Date.parse(pausedAt)).not.toBeNaN();
    // A paused agent still authenticates; pausing stops work, not identity.
    expect((await t.api.get('/api/agents/me', { token })).body.status).toBe('paused');

    const again = await t.api.post(`/api/agents/${agent.id}/pause`);
    expect(again.body).toMatchObject({ status: 'paused', pauseReason: 'maintenance', pausedAt });

    const resumed = await t.api.post(`/api/agents/${agent.id}/resume`);
    expect(resumed.body).toMatchObject({ status: 'idle', pauseReason: null, pausedAt: null });
    expect((await activity(t, agent.id)).map((e) => e.action)).toEqual(['agent.created', 'agent.key_created', 'agent.paused', 'agent.paused', 'agent.resumed']);
    expect(statusChanges.filter((e) => e.agentId === agent.id).map((e) => [e.from, e.to, e.reason])).toEqual([['idle', 'paused', 'maintenance'], ['paused', 'idle', null]]);
  });

  it('defaults the pause reason to manual and leaves a working agent alone on resume', async () => {
    const agent = await createAgent(t, companyId);
    expect((await t.api.post(`/api/agents/${agent.id}/pause`)).body.pauseReason).toBe('manual');
    await t.sql.query("update agents set status = 'running', pause_reason = null, paused_at = null where id = $1", [agent.id]);
    expect((await t.api.post(`/api/agents/${agent.id}/resume`)).body.status).toBe('running');
    await t.sql.query("update agents set status = 'error' where id = $1", [agent.id]);
    expect((await t.api.post(`/api/agents/${agent.id}/resume`)).body.status).toBe('idle');
  });

  it('refuses terminated and pending agents', async () => {
    const gone = await createAgent(t, companyId);
    await t.api.post(`/api/agents/${gone.id}/terminate`);
    await expectUnchanged(t, () => t.api.post(`/api/agents/${gone.id}/pause`), 409, 'Cannot pause a terminated agent');
    await expectUnchanged(t, () => t.api.post(`/api/agents/${gone.id}/resume`), 409, 'Cannot resume a terminated agent');
    const { agent: pending } = await hirePending();
    await expectUnchanged(t, () => t.api.post(`/api/agents/${pending.id}/resume`), 409, /Pending approval agents cannot be resumed/);
    await expectUnchanged(t, () => t.api.post(`/api/agents/${pending.id}/pause`), 409, /Pending approval agents cannot be paused/);
  });

  it('is open to the board and the company CEO agent only', async () => {
    const { token: ceoToken } = await agentWithKey(t, companyId, { role: 'ceo' });
    const { agent: worker, token: workerToken } = await agentWithKey(t, companyId);
    expect((await t.api.post(`/api/agents/${worker.id}/pause`, undefined, { token: ceoToken })).status).toBe(200);
    expect((await t.api.post(`/api/agents/${worker.id}/resume`, undefined, { token: ceoToken })).status).toBe(200);
    await expectUnchanged(t, () => t.api.post(`/api/agents/${worker.id}/pause`, undefined, { token: workerToken }), 403, "Only the board or the company's CEO agent can pause agents");
    const foreign = await createAgent(t, otherCompanyId);
    await expectUnchanged(t, () => t.api.post(`/api/agents/${foreign.id}/pause`, undefined, { token: ceoToken }), 403, 'Agent key cannot access another company');
    await expectUnchanged(t, () => t.api.post(`/api/agents/${worker.id}/pause`, { reason: 42 }), 400);
    await expectUnchanged(t, () => t.api.post(`/api/agents/${randomUUID()}/pause`), 404, 'Agent not found');
  });
});

describe('approve', () => {
  it('activates a pending hire and approves its approval record', async () => {
    const { agent, approval } = await hirePending();
    const keyRefused = await t.api.post(`/api/agents/${agent.id}/keys`);
    expect(keyRefused.status).toBe(409);
    const res = await t.api.post(`/api/agents/${agent.id}/approve`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('idle');
    const row = await t.sql.query('select status, decided_by_user_id, decided_at from approvals where id = $1', [approval.id]);
    expect(row.rows[0]).toMatchObject({ status: 'approved', decided_by_user_id: 'local-board' });
    expect(row.rows[0].decided_at).not.toBeNull();
    const entry = (await activity(t, agent.id)).find((e) => e.action === 'agent.approved');
    expect(entry?.details).toMatchObject({ from: 'pending_approval', to: 'idle', approvalIds: [approval.id] });
    expect((await t.api.post(`/api/agents/${agent.id}/keys`)).status).toBe(201);
  });

  it('refuses agents that are not pending, and agents as callers', async () => {
    const agent = await createAgent(t, companyId);
    await expectUnchanged(t, () => t.api.post(`/api/agents/${agent.id}/approve`), 409, 'Agent is not pending approval');
    const { agent: pending } = await hirePending();
    const { token: ceoToken } = await agentWithKey(t, companyId, { role: 'ceo' });
    await expectUnchanged(t, () => t.api.post(`/api/agents/${pending.id}/approve`, undefined, { token: ceoToken }), 403, 'Board access required');
  });
});

describe('terminate', () => {
  it('terminates, stops the keys working, and cancels a pending hire approval', async () => {
    const { agent, token } = await agentWithKey(t, companyId);
    expect((await t.api.get('/api/agents/me', { token })).status).toBe(200);
    const res = await t.api.post(`/api/agents/${agent.id}/terminate`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('terminated');
    const stored = await t.sql.query('select terminated_at from agents where id = $1', [agent.id]);
    expect(stored.rows[0].terminated_at).not.toBeNull();
    const refused = await t.api.get('/api/agents/me', { token });
    expect(refused.status).toBe(401);
    await expectUnchanged(t, () => t.api.post(`/api/agents/${agent.id}/terminate`), 409, 'Agent is already terminated');
    await expectUnchanged(t, () => t.api.post(`/api/agents/${agent.id}/keys`), 409, 'Cannot create keys for terminated agents');

    const { agent: pending, approval } = await hirePending();
    await t.api.post(`/api/agents/${pending.id}/terminate`);
    expect((await t.sql.query('select status from approvals where id = $1', [approval.id])).rows[0].status).toBe('cancelled');
  });

  it('is board only', async () => {
    const { agent, token } = await agentWithKey(t, companyId, { role: 'ceo' });
    await expectUnchanged(t, () => t.api.post(`/api/agents/${agent.id}/terminate`, undefined, { token }), 403, 'Board access required');
  });
});

describe('DELETE /api/agents/{agentId}', () => {
  it('hard-deletes the agent and what hangs off it, keeping the activity log', async () => {
    const manager = await createAgent(t, companyId);
    const { agent, token } = await agentWithKey(t, companyId, { reportsTo: manager.id });
    const report = await createAgent(t, companyId, { reportsTo: agent.id });
    await t.api.patch(`/api/agents/${agent.id}/permissions`, { canAssignTasks: true });
    const res = await t.api.delete(`/api/agents/${agent.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, id: agent.id });
    for (const [table, column] of [['agents', 'id'], ['agent_api_keys', 'agent_id'], ['agent_config_revisions', 'agent_id'], ['permission_grants', 'principal_id'], ['company_memberships', 'principal_id']]) {
      const { rows } = await t.sql.query(`select count(*)::int as n from ${table} where ${column}::text = $1`, [agent.id]);
      expect(rows[0].n, table).toBe(0);
    }
    expect((await t.api.get(`/api/agents/${report.id}`)).body.reportsTo).toBeNull();
    expect((await activity(t, agent.id)).map((e) => e.action)).toContain('agent.deleted');
    expect((await t.api.get('/api/agents/me', { token })).status).toBe(401);
    expect((await t.api.get(`/api/agents/${agent.id}`)).status).toBe(404);
  });

  it('is board only and answers 404 for unknown agents', async () => {
    const { agent, token } = await agentWithKey(t, companyId, { role: 'ceo' });
    await expectUnchanged(t, () => t.api.delete(`/api/agents/${agent.id}`, { token }), 403, 'Board access required');
    await expectUnchanged(t, () => t.api.delete(`/api/agents/${randomUUID()}`), 404, 'Agent not found');
  });
});
