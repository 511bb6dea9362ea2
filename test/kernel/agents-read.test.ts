import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { agentWithKey, createAgent, createKey, insertCompany, memberToken } from './agents-fixtures.ts';

let t: TestKernel;
let companyId: string;
let otherCompanyId: string;
let ceo: any;
let cto: any;
let engineer: any;
let engineerToken: string;
let otherAgent: any;

beforeAll(async () => {
  t = await startTestKernel();
  companyId = await insertCompany(t);
  otherCompanyId = await insertCompany(t);
  ceo = await createAgent(t, companyId, { name: 'Chief', role: 'ceo', title: 'Chief Executive' });
  cto = await createAgent(t, companyId, { name: 'Tech Lead', role: 'cto', reportsTo: ceo.id });
  ({ agent: engineer, token: engineerToken } = await agentWithKey(t, companyId, {
    name: 'Build Bot', role: 'engineer', reportsTo: cto.id, budgetMonthlyCents: 2500,
    adapterConfig: { command: 'run', env: { FOO: 'bar' } }, runtimeConfig: { heartbeat: { enabled: true, intervalSec: 30 } },
  }));
  otherAgent = await createAgent(t, otherCompanyId, { name: 'Build Bot' });
});
afterAll(async () => { await t?.stop(); });

describe('GET /api/agents/{agentId}', () => {
  it('returns the agent with its chain of command and access block', async () => {
    const res = await t.api.get(`/api/agents/${engineer.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: engineer.id, companyId, name: 'Build Bot', urlKey: 'build-bot', role: 'engineer', reportsTo: cto.id,
      adapterConfig: { command: 'run', env: { FOO: 'bar' } }, budgetMonthlyCents: 2500, spentMonthlyCents: 0,
    });
    expect(res.body.configRedacted).toBeUndefined();
    expect(res.body.chainOfCommand).toEqual([
      { id: cto.id, name: 'Tech Lead', role: 'cto', title: null },
      { id: ceo.id, name: 'Chief', role: 'ceo', title: 'Chief Executive' },
    ]);
    expect(res.body.access).toEqual({ canAssignTasks: false, taskAssignSource: 'none', membership: null, grants: [] });
  });

  it('reports each source of task-assignment authority', async () => {
    expect((await t.api.get(`/api/agents/${ceo.id}`)).body.access).toMatchObject({ canAssignTasks: true, taskAssignSource: 'ceo_role' });
    expect((await t.api.get(`/api/agents/${ceo.id}`)).body.chainOfCommand).toEqual([]);

    const creator = await createAgent(t, companyId);
    await t.sql.query(`update agents set permissions = '{"canCreateAgents": true}' where id = $1`, [creator.id]);
    expect((await t.api.get(`/api/agents/${creator.id}`)).body.access).toMatchObject({ canAssignTasks: true, taskAssignSource: 'agent_creator' });

    const granted = await createAgent(t, companyId);
    await t.sql.query("insert into permission_grants (company_id, principal_type, principal_id, permission_key) values ($1, 'agent', $2, 'tasks:assign')", [companyId, granted.id]);
    const grantedAccess = (await t.api.get(`/api/agents/${granted.id}`)).body.access;
    expect(grantedAccess).toMatchObject({ canAssignTasks: true, taskAssignSource: 'explicit_grant', membership: null });
    expect(grantedAccess.grants).toEqual([expect.objectContaining({ permissionKey: 'tasks:assign', principalType: 'agent', principalId: granted.id, scope: null })]);

    const operator = await createAgent(t, companyId);
    await t.sql.query("insert into company_memberships (company_id, principal_type, principal_id, role) values ($1, 'agent', $2, 'operator')", [companyId, operator.id]);
    const operatorAccess = (await t.api.get(`/api/agents/${operator.id}`)).body.access;
    expect(operatorAccess).toMatchObject({ canAssignTasks: true, taskAssignSource: 'simple_default' });
    expect(operatorAccess.membership).toMatchObject({ principalType: 'agent', principalId: operator.id, role: 'operator', status: 'active' });
  });

  it('resolves a shortname with ?companyId= or from the calling agent', async () => {
    const byQuery = await t.api.get(`/api/agents/build-bot?companyId=${companyId}`);
    expect(byQuery.status).toBe(200);
    expect(byQuery.body.id).toBe(engineer.id);
    expect((await t.api.get(`/api/agents/Build%20Bot?companyId=${companyId}`)).body.id).toBe(engineer.id);
    expect((await t.api.get(`/api/agents/build-bot?companyId=${otherCompanyId}`)).body.id).toBe(otherAgent.id);
    const byAgent = await t.api.get('/api/agents/tech-lead', { token: engineerToken });
    expect(byAgent.status).toBe(200);
    expect(byAgent.body.id).toBe(cto.id);
  });

  it('explains what a shortname lookup needs and answers 404 for unknown agents', async () => {
    const missingCompany = await t.api.get('/api/agents/build-bot');
    expect(missingCompany.status).toBe(400);
    expect(missingCompany.body.error).toMatch(/shortname lookup requires the companyId query parameter/);
    expect((await t.api.get(`/api/agents/nobody?companyId=${companyId}`)).status).toBe(404);
    expect((await t.api.get(`/api/agents/${randomUUID()}`)).body).toEqual({ error: 'Agent not found', code: 'not_found' });
    expect((await t.api.get(`/api/agents/build-bot?companyId=${randomUUID()}`)).body.error).toBe('Company not found');
  });

  it('keeps agents inside their company and boards inside their memberships', async () => {
    const asAgent = await t.api.get(`/api/agents/${otherAgent.id}`, { token: engineerToken });
    expect(asAgent.status).toBe(403);
    expect(asAgent.body.error).toBe('Agent key cannot access another company');
    expect((await t.api.get(`/api/agents/build-bot?companyId=${otherCompanyId}`, { token: engineerToken })).status).toBe(403);

    const member = await memberToken(t, [companyId]);
    expect((await t.api.get(`/api/agents/${engineer.id}`, { token: member.token })).status).toBe(200);
    const outsider = await t.api.get(`/api/agents/${otherAgent.id}`, { token: member.token });
    expect(outsider.status).toBe(403);
    expect(outsider.body.error).toBe('User does not have access to this company');
  });

  it('redacts configuration for a peer agent without agents:create, but not for itself or a creator', async () => {
    const { token: peerToken } = await agentWithKey(t, companyId);
    const peer = await t.api.get(`/api/agents/${engineer.id}`, { token: peerToken });
    expect(peer.status).toBe(200);
    expect(peer.body).toMatchObject({ id: engineer.id, adapterConfig: {}, runtimeConfig: {}, configRedacted: true, budgetMonthlyCents: 2500 });
    expect(peer.body.chainOfCommand).toHaveLength(2);

    const self = await t.api.get(`/api/agents/${engineer.id}`, { token: engineerToken });
    expect(self.body.adapterConfig).toEqual({ command: 'run', env: { FOO: 'bar' } });

    const ceoKey = await createKey(t, ceo.id);
    const byCeo = await t.api.get(`/api/agents/${engineer.id}`, { token: ceoKey.token });
    expect(byCeo.body.runtimeConfig).toEqual({ heartbeat: { enabled: true, intervalSec: 30 } });
  });

  it('still returns terminated agents by id but not by shortname', async () => {
    const gone = await createAgent(t, companyId, { name: 'Gone Soon' });
    expect((await t.api.post(`/api/agents/${gone.id}/terminate`)).status).toBe(200);
    const byId = await t.api.get(`/api/agents/${gone.id}`);
    expect(byId.status).toBe(200);
    expect(byId.body.status).toBe('terminated');
    expect((await t.api.get(`/api/agents/gone-soon?companyId=${companyId}`)).status).toBe(404);
  });
});

describe('GET /api/agents/me', () => {
  it('returns the calling agent with chain of command and budget', async () => {
    const res = await t.api.get('/api/agents/me', { token: engineerToken });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: engineer.id, companyId, role: 'engineer', budgetMonthlyCents: 2500, spentMonthlyCents: 0 });
    expect(res.body.chainOfCommand.map((link: any) => link.id)).toEqual([cto.id, ceo.id]);
    expect(res.body.adapterConfig).toEqual({ command: 'run', env: { FOO: 'bar' } });
  });

  it('is agent only: boards get 403, bad tokens 401', async () => {
    const board = await t.api.get('/api/agents/me');
    expect(board.status).toBe(403);
    expect(board.body.error).toBe('Agent authentication required');
    expect((await t.api.get('/api/agents/me', { token: 'svc_agent_not-a-real-key-at-all' })).status).toBe(401);
  });
});

describe('GET /api/companies/{companyId}/agents', () => {
  it('lists the company agents without terminated ones', async () => {
    const gone = await createAgent(t, companyId);
    await t.api.post(`/api/agents/${gone.id}/terminate`);
    const res = await t.api.get(`/api/companies/${companyId}/agents`);
    expect(res.status).toBe(200);
    const ids = res.body.map((a: any) => a.id);
    expect(ids).toEqual(expect.arrayContaining([ceo.id, cto.id, engineer.id]));
    expect(ids).not.toContain(gone.id);
    expect(ids).not.toContain(otherAgent.id);
    expect(res.body.every((a: any) => a.status !== 'terminated' && a.configRedacted === undefined)).toBe(true);
  });

  it('redacts peers for an agent without agents:create and shows them to a creator', async () => {
    const plain = await t.api.get(`/api/companies/${companyId}/agents`, { token: engineerToken });
    expect(plain.status).toBe(200);
    const self = plain.body.find((a: any) => a.id === engineer.id);
    const peer = plain.body.find((a: any) => a.id === ceo.id);
    expect(self.adapterConfig).toEqual({ command: 'run', env: { FOO: 'bar' } });
    expect(peer).toMatchObject({ adapterConfig: {}, runtimeConfig: {}, configRedacted: true });

    const ceoKey = await createKey(t, ceo.id);
    const byCeo = await t.api.get(`/api/companies/${companyId}/agents`, { token: ceoKey.token });
    expect(byCeo.body.find((a: any) => a.id === engineer.id).adapterConfig).toEqual({ command: 'run', env: { FOO: 'bar' } });
  });

  it('applies company scoping', async () => {
    expect((await t.api.get(`/api/companies/${otherCompanyId}/agents`, { token: engineerToken })).status).toBe(403);
    const member = await memberToken(t, [otherCompanyId]);
    expect((await t.api.get(`/api/companies/${companyId}/agents`, { token: member.token })).status).toBe(403);
    expect((await t.api.get(`/api/companies/${otherCompanyId}/agents`, { token: member.token })).status).toBe(200);
    expect((await t.api.get(`/api/companies/${randomUUID()}/agents`)).status).toBe(404);
  });
});
