import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable, pluginVariant } from '../support/plugins.ts';
import { activity, agentWithKey, expectUnchanged, insertCompany, memberToken } from './agents-fixtures.ts';

/**
 * Approvals through HTTP: the company's list and one approval (board and the company's
 * agents), the board's decisions, the hire they decide, the activity entries and the durable
 * kernel events a requester is notified by, and company scoping.
 */
let t: TestKernel;
let companyId: string;
let otherCompanyId: string;

const ISO = /^\d{4}-\d{2}-\d{2}T/;

beforeAll(async () => {
  t = await startTestKernel();
  companyId = await insertCompany(t, { requireApproval: true });
  otherCompanyId = await insertCompany(t, { requireApproval: true });
});
afterAll(async () => { await t?.stop(); });

async function hire(company = companyId, body: Record<string, unknown> = {}, token?: string): Promise<{ agent: any; approval: any }> {
  const res = await t.api.post(`/api/companies/${company}/agent-hires`, { name: `Hire ${randomUUID().slice(0, 6)}`, ...body }, token ? { token } : {});
  expect(res.status, res.text).toBe(201);
  return res.body;
}

/** The durable kernel events about one entity, in commit order. */
async function outbox(entityId: string): Promise<Array<{ name: string; entity_type: string; payload: any }>> {
  const { rows } = await t.sql.query('select name, entity_type, payload from keel_events.outbox where entity_id = $1 order by seq', [entityId]);
  return rows;
}

const agentStatus = async (agentId: string) => (await t.sql.query('select status from agents where id = $1', [agentId])).rows[0].status;

describe('requireBoardApprovalForNewAgents', () => {
  it('is set on company create and by PATCH, and decides what a hire makes', async () => {
    const created = await t.api.post('/api/companies', { name: 'Strict Co', requireBoardApprovalForNewAgents: true });
    expect(created.status).toBe(201);
    expect(created.body.requireBoardApprovalForNewAgents).toBe(true);
    const strict = await hire(created.body.id);
    expect(strict.agent.status).toBe('pending_approval');
    expect(strict.approval).toMatchObject({ type: 'hire_agent', status: 'pending', subjectAgentId: strict.agent.id });

    const patched = await t.api.patch(`/api/companies/${created.body.id}`, { requireBoardApprovalForNewAgents: false });
    expect(patched.body.requireBoardApprovalForNewAgents).toBe(false);
    const free = await hire(created.body.id);
    expect(free.agent.status).toBe('idle');
    expect(free.approval).toBeNull();

    const lax = await t.api.post('/api/companies', { name: 'Lax Co' });
    expect(lax.body.requireBoardApprovalForNewAgents).toBe(false);
    expect((await hire(lax.body.id)).approval).toBeNull();
    await t.api.patch(`/api/companies/${lax.body.id}`, { requireBoardApprovalForNewAgents: true });
    expect((await hire(lax.body.id)).agent.status).toBe('pending_approval');
  });

  it('a hire announces its approval: activity approval.created and the durable event approval.created', async () => {
    const { token } = await agentWithKey(t, companyId, { role: 'ceo' });
    const { agent, approval } = await hire(companyId, {}, token);
    expect(approval.requestedByAgentId).not.toBeNull();
    expect((await activity(t, approval.id)).map((e) => [e.action, e.details])).toEqual([['approval.created', { type: 'hire_agent', subjectAgentId: agent.id }]]);
    const events = await outbox(approval.id);
    expect(events.map((e) => [e.name, e.entity_type])).toEqual([['approval.created', 'approval']]);
    expect(events[0]!.payload).toMatchObject({ companyId, approvalId: approval.id, approval: { id: approval.id, status: 'pending', requestedByAgentId: approval.requestedByAgentId }, actor: { actorType: 'agent' } });
  });
});

describe('GET /api/companies/{companyId}/approvals', () => {
  it('lists newest first, filtered by status and type, up to limit', async () => {
    const company = await insertCompany(t, { requireApproval: true });
    const first = await hire(company);
    const second = await hire(company);
    const third = await hire(company);
    await t.api.post(`/api/approvals/${second.approval.id}/approve`, {});
    const all = await t.api.get(`/api/companies/${company}/approvals`);
    expect(all.status).toBe(200);
    expect(all.body.map((a: any) => a.id)).toEqual([third.approval.id, second.approval.id, first.approval.id]);
    expect(all.body[0]).toEqual({
      id: third.approval.id, companyId: company, type: 'hire_agent', status: 'pending', requestedByAgentId: null, requestedByUserId: 'local-board',
      subjectAgentId: third.agent.id, payload: expect.objectContaining({ agentId: third.agent.id, name: third.agent.name }), decisionNote: null,
      decidedByUserId: null, decidedAt: null, createdAt: expect.stringMatching(ISO), updatedAt: expect.stringMatching(ISO),
    });
    const pending = await t.api.get(`/api/companies/${company}/approvals?status=pending`);
    expect(pending.body.map((a: any) => a.id)).toEqual([third.approval.id, first.approval.id]);
    expect((await t.api.get(`/api/companies/${company}/approvals?status=approved&type=hire_agent`)).body.map((a: any) => a.id)).toEqual([second.approval.id]);
    expect((await t.api.get(`/api/companies/${company}/approvals?type=approve_ceo_strategy`)).body).toEqual([]);
    expect((await t.api.get(`/api/companies/${company}/approvals?limit=1`)).body.map((a: any) => a.id)).toEqual([third.approval.id]);
  });

  it('refuses bad filters with 400', async () => {
    for (const query of ['status=open', 'limit=0', 'limit=501', 'limit=x', `type=${'t'.repeat(101)}`]) {
      const res = await t.api.get(`/api/companies/${companyId}/approvals?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.code, query).toBe('validation_failed');
    }
  });

  it("is open to the board and the company's agents; agents without agents:create see no requested configuration", async () => {
    const { approval } = await hire(companyId, { adapterConfig: { model: 'm', env: { API_TOKEN: 'tok-secret-1' } } });
    const board = (await t.api.get(`/api/companies/${companyId}/approvals`)).body.find((a: any) => a.id === approval.id);
    expect(board.payload.adapterConfig.model).toBe('m');
    expect(JSON.stringify(board)).not.toContain('tok-secret-1');
    expect(board.configRedacted).toBeUndefined();

    const { token: peer } = await agentWithKey(t, companyId);
    const seen = await t.api.get(`/api/companies/${companyId}/approvals`, { token: peer });
    expect(seen.status).toBe(200);
    const redacted = seen.body.find((a: any) => a.id === approval.id);
    expect(redacted).toMatchObject({ configRedacted: true, payload: { adapterConfig: {}, runtimeConfig: {}, agentId: approval.subjectAgentId } });
    const { token: ceo } = await agentWithKey(t, companyId, { role: 'ceo' });
    expect((await t.api.get(`/api/approvals/${approval.id}`, { token: ceo })).body.payload.adapterConfig.model).toBe('m');

    const member = await memberToken(t, [companyId]);
    expect((await t.api.get(`/api/companies/${companyId}/approvals`, { token: member.token })).status).toBe(200);
    const { token: foreign } = await agentWithKey(t, otherCompanyId);
    const refused = await t.api.get(`/api/companies/${companyId}/approvals`, { token: foreign });
    expect([refused.status, refused.body.code]).toEqual([403, 'company_access_denied']);
    expect((await t.api.get(`/api/companies/${randomUUID()}/approvals`)).body.error).toBe('Company not found');
  });
});

describe('GET /api/approvals/{approvalId}', () => {
  it("answers the approval to its company's callers, 403 to another company's, 404 for unknown or malformed ids", async () => {
    const { approval } = await hire();
    const res = await t.api.get(`/api/approvals/${approval.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(approval);
    const { token } = await agentWithKey(t, companyId);
    expect((await t.api.get(`/api/approvals/${approval.id}`, { token })).status).toBe(200);
    const { token: foreign } = await agentWithKey(t, otherCompanyId);
    const refused = await t.api.get(`/api/approvals/${approval.id}`, { token: foreign });
    expect([refused.status, refused.body.error]).toEqual([403, 'Agent key cannot access another company']);
    const outsider = await memberToken(t, [otherCompanyId]);
    expect((await t.api.get(`/api/approvals/${approval.id}`, { token: outsider.token })).status).toBe(403);
    for (const id of [randomUUID(), 'not-a-uuid', approval.id.slice(0, -1)]) {
      const missing = await t.api.get(`/api/approvals/${id}`);
      expect([missing.status, missing.body.error, missing.body.code]).toEqual([404, 'Approval not found', 'not_found']);
    }
  });
});

describe('POST /api/approvals/{approvalId}/approve', () => {
  it('approves a hire: the agent is activated through the agent approve path, with activity and durable events', async () => {
    const { agent, approval } = await hire();
    const note = 'n'.repeat(2000);
    const res = await t.api.post(`/api/approvals/${approval.id}/approve`, { decisionNote: note });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: approval.id, status: 'approved', decisionNote: note, decidedByUserId: 'local-board', decidedAt: expect.stringMatching(ISO) });
    expect(await agentStatus(agent.id)).toBe('idle');
    expect((await t.api.post(`/api/agents/${agent.id}/keys`)).status).toBe(201);
    expect((await activity(t, approval.id)).map((e) => [e.action, e.details])).toEqual([
      ['approval.created', expect.anything()],
      ['approval.approved', { type: 'hire_agent', from: 'pending', to: 'approved', subjectAgentId: agent.id, decisionNote: note }],
    ]);
    expect((await activity(t, agent.id)).find((e) => e.action === 'agent.approved')?.details).toMatchObject({ from: 'pending_approval', to: 'idle', approvalIds: [approval.id] });
    const decided = (await outbox(approval.id)).find((e) => e.name === 'approval.decided');
    expect(decided?.payload).toMatchObject({ companyId, approvalId: approval.id, from: 'pending', to: 'approved', decisionNote: note, approval: { status: 'approved', requestedByUserId: 'local-board' }, actor: { actorType: 'user', actorId: 'local-board' } });
    expect((await outbox(agent.id)).map((e) => [e.name, e.payload.from, e.payload.to])).toContainEqual(['agent.status_changed', 'pending_approval', 'idle']);
  });

  it('POST /api/agents/{agentId}/approve decides the approval the same way', async () => {
    const { agent, approval } = await hire();
    expect((await t.api.post(`/api/agents/${agent.id}/approve`)).status).toBe(200);
    const res = await t.api.get(`/api/approvals/${approval.id}`);
    expect(res.body).toMatchObject({ status: 'approved', decisionNote: null, decidedByUserId: 'local-board' });
    expect((await activity(t, approval.id)).map((e) => e.action)).toEqual(['approval.created', 'approval.approved']);
    expect((await outbox(approval.id)).map((e) => [e.name, e.payload.to ?? null])).toEqual([['approval.created', null], ['approval.decided', 'approved']]);
  });

  it('refuses a decided approval with 409 approval_not_pending naming its status, changing nothing', async () => {
    const { approval } = await hire();
    await t.api.post(`/api/approvals/${approval.id}/approve`, {});
    for (const action of ['approve', 'reject', 'request-revision']) {
      const body = await expectUnchanged(t, () => t.api.post(`/api/approvals/${approval.id}/${action}`, {}), 409);
      expect(body).toMatchObject({ code: 'approval_not_pending', details: { status: 'approved' } });
      expect(body.error).toContain('approved');
    }
  });
});

describe('POST /api/approvals/{approvalId}/reject', () => {
  it('rejects a hire and terminates its agent', async () => {
    const { agent, approval } = await hire();
    const res = await t.api.post(`/api/approvals/${approval.id}/reject`, { decisionNote: '  Not this quarter  ' });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: 'rejected', decisionNote: 'Not this quarter', decidedByUserId: 'local-board' });
    expect(await agentStatus(agent.id)).toBe('terminated');
    expect((await activity(t, approval.id)).map((e) => e.action)).toEqual(['approval.created', 'approval.rejected']);
    expect((await activity(t, agent.id)).find((e) => e.action === 'agent.terminated')?.details).toMatchObject({ from: 'pending_approval', to: 'terminated', rejectedApprovalIds: [approval.id] });
    expect((await outbox(approval.id)).at(-1)?.payload).toMatchObject({ from: 'pending', to: 'rejected', decisionNote: 'Not this quarter' });
    const again = await expectUnchanged(t, () => t.api.post(`/api/approvals/${approval.id}/approve`, {}), 409);
    expect(again.details).toEqual({ status: 'rejected' });
  });
});

describe('POST /api/approvals/{approvalId}/request-revision', () => {
  it('sends the approval back; it stays decidable and the agent stays pending', async () => {
    const { agent, approval } = await hire();
    const res = await t.api.post(`/api/approvals/${approval.id}/request-revision`, { decisionNote: 'Lower the budget' });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: 'revision_requested', decisionNote: 'Lower the budget', decidedByUserId: 'local-board', decidedAt: expect.stringMatching(ISO) });
    expect(await agentStatus(agent.id)).toBe('pending_approval');
    expect((await outbox(approval.id)).at(-1)?.payload).toMatchObject({ from: 'pending', to: 'revision_requested', decisionNote: 'Lower the budget' });
    const approved = await t.api.post(`/api/approvals/${approval.id}/approve`, {});
    expect(approved.body).toMatchObject({ status: 'approved', decisionNote: null });
    expect(await agentStatus(agent.id)).toBe('idle');
    expect((await activity(t, approval.id)).map((e) => e.action)).toEqual(['approval.created', 'approval.revision_requested', 'approval.approved']);
  });
});

describe('decision refusals', () => {
  it('are board only, scoped to the approval company, and check the note', async () => {
    const { approval } = await hire();
    const { token: ceo } = await agentWithKey(t, companyId, { role: 'ceo' });
    for (const action of ['approve', 'reject', 'request-revision']) {
      const body = await expectUnchanged(t, () => t.api.post(`/api/approvals/${approval.id}/${action}`, {}, { token: ceo }), 403, 'Board access required');
      expect(body.code).toBe('board_required');
    }
    const outsider = await memberToken(t, [otherCompanyId]);
    await expectUnchanged(t, () => t.api.post(`/api/approvals/${approval.id}/approve`, {}, { token: outsider.token }), 403, 'User does not have access to this company');
    await expectUnchanged(t, () => t.api.post(`/api/approvals/${approval.id}/approve`, { decisionNote: 'x'.repeat(2001) }), 400);
    await expectUnchanged(t, () => t.api.post(`/api/approvals/${approval.id}/reject`, { decisionNote: 42 }), 400);
    await expectUnchanged(t, () => t.api.post(`/api/approvals/${randomUUID()}/approve`, {}), 404, 'Approval not found');
    await expectUnchanged(t, () => t.api.post('/api/approvals/nope/reject', {}), 404, 'Approval not found');
    const member = await memberToken(t, [companyId]);
    expect((await t.api.post(`/api/approvals/${approval.id}/request-revision`, {}, { token: member.token })).status).toBe(200);
  });

  it('terminating a pending agent cancels its hire (POST terminate and PATCH status alike), which cannot be decided then', async () => {
    for (const terminate of [(id: string) => t.api.post(`/api/agents/${id}/terminate`), (id: string) => t.api.patch(`/api/agents/${id}`, { status: 'terminated' })]) {
      const { agent, approval } = await hire();
      expect((await terminate(agent.id)).status).toBe(200);
      expect((await t.api.get(`/api/approvals/${approval.id}`)).body).toMatchObject({ status: 'cancelled', decisionNote: 'Agent terminated before approval' });
      expect((await activity(t, approval.id)).map((e) => e.action)).toEqual(['approval.created', 'approval.cancelled']);
      expect((await outbox(approval.id)).at(-1)?.payload).toMatchObject({ from: 'pending', to: 'cancelled' });
      const body = await expectUnchanged(t, () => t.api.post(`/api/approvals/${approval.id}/approve`, {}), 409);
      expect(body).toMatchObject({ code: 'approval_not_pending', details: { status: 'cancelled' } });
    }
  });
});

describe('concurrent decisions', () => {
  it('of one approval: exactly one succeeds, the other is refused with the status it found', async () => {
    for (const [first, second] of [['approve', 'approve'], ['approve', 'reject'], ['reject', 'reject']] as const) {
      const { agent, approval } = await hire();
      const answers = await Promise.all([first, second].map((action) => t.api.post(`/api/approvals/${approval.id}/${action}`, {})));
      expect(answers.map((res) => res.status).sort(), JSON.stringify(answers.map((res) => res.body))).toEqual([200, 409]);
      expect(answers.find((res) => res.status === 409)?.body.code).toBe('approval_not_pending');
      const stored = (await t.api.get(`/api/approvals/${approval.id}`)).body.status;
      const agentNow = await agentStatus(agent.id);
      if (stored === 'approved') expect(agentNow).toBe('idle');
      if (stored === 'rejected') expect(agentNow).toBe('terminated');
      // The one decision left one activity entry and one event.
      expect((await activity(t, approval.id)).filter((e) => e.action !== 'approval.created')).toHaveLength(1);
      expect((await outbox(approval.id)).filter((e) => e.name === 'approval.decided')).toHaveLength(1);
    }
  });

  it('of the agent approve route and the approval reject route: exactly one wins', async () => {
    const { agent, approval } = await hire();
    const [approved, rejected] = await Promise.all([
      t.api.post(`/api/agents/${agent.id}/approve`),
      t.api.post(`/api/approvals/${approval.id}/reject`, {}),
    ]);
    expect([approved.status, rejected.status].sort()).toEqual([200, 409]);
    const stored = (await t.api.get(`/api/approvals/${approval.id}`)).body.status;
    expect(await agentStatus(agent.id)).toBe(stored === 'approved' ? 'idle' : 'terminated');
  });
});

describe('approvals.read (ctx.approvals)', () => {
  it("lists and counts the approvals of the call's company only, newest first, with the hire's configuration redacted", async () => {
    const folder = await pluginVariant(fileURLToPath(new URL('../host/fixtures/cap-probe', import.meta.url)), (manifest) => {
      manifest.key = 'approvals-probe';
      manifest.capabilities.push({ id: 'approvals.read', reason: 'Reads approvals' });
    });
    const key = await installAndEnable(t, folder);
    const company = await insertCompany(t, { requireApproval: true });
    const first = await hire(company, { adapterConfig: { model: 'secret-model' } });
    const second = await hire(company);
    await hire(otherCompanyId);
    await t.api.post(`/api/approvals/${first.approval.id}/request-revision`, {});
    const probe = async (method: string, args: unknown[]) => {
      const res = await t.api.post(`/api/plugins/${key}/companies/${company}/probe`, { member: 'approvals', method, args });
      expect(res.body.ok, res.text).toBe(true);
      return res.body.value;
    };
    const all = await probe('list', []);
    expect(all.map((a: any) => a.id)).toEqual([second.approval.id, first.approval.id]);
    expect(all[1]).toMatchObject({ status: 'revision_requested', configRedacted: true, payload: { adapterConfig: {}, runtimeConfig: {} } });
    expect((await probe('list', [{ status: 'pending' }])).map((a: any) => a.id)).toEqual([second.approval.id]);
    expect((await probe('list', [{ limit: 1 }])).map((a: any) => a.id)).toEqual([second.approval.id]);
    expect([await probe('count', []), await probe('count', [{ status: 'pending' }]), await probe('count', [{ type: 'approve_ceo_strategy' }])]).toEqual([2, 1, 0]);
    const refused = await t.api.post(`/api/plugins/${key}/companies/${company}/probe`, { member: 'approvals', method: 'list', args: [{ status: 'open' }] });
    expect(refused.body.error).toMatchObject({ status: 400, code: 'invalid_arguments' });
  });
});

describe('the reference', () => {
  it('lists the approval routes in GET /api/openapi.json', async () => {
    const doc = (await t.api.get('/api/openapi.json')).body;
    for (const path of ['/api/companies/{companyId}/approvals', '/api/approvals/{approvalId}', '/api/approvals/{approvalId}/approve', '/api/approvals/{approvalId}/reject', '/api/approvals/{approvalId}/request-revision']) {
      expect(doc.paths[path], path).toBeDefined();
    }
    expect(doc.paths['/api/approvals/{approvalId}/approve'].post.tags).toEqual(['Approvals']);
  });
});
