import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { activity, agentWithKey, createAgent, expectUnchanged, insertCompany } from './agents-fixtures.ts';

let t: TestKernel;
let companyId: string;
let otherCompanyId: string;
const updates: any[] = [];
const statusChanges: any[] = [];

beforeAll(async () => {
  t = await startTestKernel();
  companyId = await insertCompany(t);
  otherCompanyId = await insertCompany(t);
  t.kernel.services.events.on('agent.updated', (payload) => { updates.push(payload); });
  t.kernel.services.events.on('agent.status_changed', (payload) => { statusChanges.push(payload); });
});
afterAll(async () => { await t?.stop(); });

async function revisions(agentId: string): Promise<Array<{ revision_number: number; source: string; changed_keys: string[] }>> {
  const { rows } = await t.sql.query('select revision_number, source, changed_keys from agent_config_revisions where agent_id = $1 order by revision_number', [agentId]);
  return rows;
}

describe('PATCH /api/agents/{agentId}', () => {
  it('merges adapterConfig per key, writes a revision, activity and event', async () => {
    const agent = await createAgent(t, companyId, { adapterConfig: { command: 'a', cwd: '/w', env: { A: '1' } } });
    const res = await t.api.patch(`/api/agents/${agent.id}`, { adapterConfig: { command: 'b', cwd: null }, title: 'Builder', budgetMonthlyCents: 900 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ title: 'Builder', budgetMonthlyCents: 900, adapterConfig: { command: 'b', env: { A: '1' } } });
    expect(res.body.adapterConfig.cwd).toBeUndefined();
    expect(await revisions(agent.id)).toEqual([
      expect.objectContaining({ revision_number: 1, source: 'create' }),
      { revision_number: 2, source: 'patch', changed_keys: ['title', 'adapterConfig', 'budgetMonthlyCents'] },
    ]);
    const entries = await activity(t, agent.id);
    expect(entries.at(-1)).toMatchObject({ action: 'agent.updated' });
    expect(entries.at(-1)!.details.changedKeys).toEqual(expect.arrayContaining(['title', 'adapterConfig', 'budgetMonthlyCents']));
    const event = updates.find((e) => e.agentId === agent.id);
    expect(event.changes).toMatchObject({ title: 'Builder', budgetMonthlyCents: 900 });
  });

  it('replaces adapterConfig with replaceAdapterConfig, keeping skill settings and masked secrets', async () => {
    const agent = await createAgent(t, companyId, { adapterConfig: { command: 'a', env: { API_KEY: 'real-key-1' } }, desiredSkills: ['git'] });
    expect(agent.adapterConfig.env.API_KEY).toBe('[REDACTED]');
    const res = await t.api.patch(`/api/agents/${agent.id}`, { replaceAdapterConfig: true, adapterConfig: { url: 'http://x', env: agent.adapterConfig.env } });
    expect(res.status).toBe(200);
    expect(res.body.adapterConfig).toEqual({ url: 'http://x', env: { API_KEY: '[REDACTED]' }, serviceSkillSync: { desiredSkills: ['git'] } });
    const stored = await t.sql.query('select adapter_config from agents where id = $1', [agent.id]);
    expect(stored.rows[0].adapter_config.env.API_KEY).toBe('real-key-1');
    expect(stored.rows[0].adapter_config.command).toBeUndefined();
  });

  it('does not write a revision when only non-configuration fields change', async () => {
    const agent = await createAgent(t, companyId);
    expect((await t.api.patch(`/api/agents/${agent.id}`, { icon: 'robot' })).body.icon).toBe('robot');
    expect((await revisions(agent.id)).map((r) => r.source)).toEqual(['create']);
  });

  it('renames with a new shortname and refuses a collision with 409', async () => {
    const first = await createAgent(t, companyId, { name: 'Alpha Worker' });
    const second = await createAgent(t, companyId, { name: 'Beta Worker' });
    const renamed = await t.api.patch(`/api/agents/${second.id}`, { name: 'Gamma Worker' });
    expect(renamed.body).toMatchObject({ name: 'Gamma Worker', urlKey: 'gamma-worker' });
    await expectUnchanged(t, () => t.api.patch(`/api/agents/${second.id}`, { name: 'alpha worker' }), 409, "Agent shortname 'alpha-worker' is already in use in this company");
    // A terminated agent's shortname is free again.
    await t.api.post(`/api/agents/${first.id}/terminate`);
    expect((await t.api.patch(`/api/agents/${second.id}`, { name: 'Alpha Worker' })).body.urlKey).toBe('alpha-worker');
  });

  it('keeps reportsTo in the company and acyclic', async () => {
    const top = await createAgent(t, companyId);
    const middle = await createAgent(t, companyId, { reportsTo: top.id });
    const bottom = await createAgent(t, companyId, { reportsTo: middle.id });
    const foreign = await createAgent(t, otherCompanyId);
    await expectUnchanged(t, () => t.api.patch(`/api/agents/${top.id}`, { reportsTo: bottom.id }), 422, 'Reporting relationship would create a cycle');
    await expectUnchanged(t, () => t.api.patch(`/api/agents/${top.id}`, { reportsTo: top.id }), 422, 'Agent cannot report to itself');
    await expectUnchanged(t, () => t.api.patch(`/api/agents/${top.id}`, { reportsTo: foreign.id }), 422, 'Manager must belong to the same company');
    await expectUnchanged(t, () => t.api.patch(`/api/agents/${top.id}`, { reportsTo: randomUUID() }), 422, /Manager not found/);
    expect((await t.api.patch(`/api/agents/${bottom.id}`, { reportsTo: top.id })).body.reportsTo).toBe(top.id);
    expect((await t.api.patch(`/api/agents/${bottom.id}`, { reportsTo: null })).body.reportsTo).toBeNull();
  });

  it('refuses permissions in the body and malformed fields without changing anything', async () => {
    const agent = await createAgent(t, companyId);
    await expectUnchanged(t, () => t.api.patch(`/api/agents/${agent.id}`, { permissions: { canCreateAgents: true } }), 400, /use PATCH \/api\/agents\/\{agentId\}\/permissions/);
    await expectUnchanged(t, () => t.api.patch(`/api/agents/${agent.id}`, { name: '' }), 400);
    await expectUnchanged(t, () => t.api.patch(`/api/agents/${agent.id}`, { status: 'sleeping' }), 400, /status must be one of/);
    await expectUnchanged(t, () => t.api.patch(`/api/agents/${agent.id}`, { budgetMonthlyCents: -5 }), 400);
    await expectUnchanged(t, () => t.api.patch(`/api/agents/${agent.id}`, { adapterConfig: { env: { A: { type: 'secret_ref', secretId: 'x' } } } }), 422, /secretId must be a uuid/);
    await expectUnchanged(t, () => t.api.patch(`/api/agents/${agent.id}`, { adapterConfig: { token: '[REDACTED]' } }), 422, /redaction marker/);
    await expectUnchanged(t, () => t.api.patch(`/api/agents/${randomUUID()}`, { title: 'x' }), 404, 'Agent not found');
  });

  it('changes status within the rules and evicts cached credentials', async () => {
    const { agent, token } = await agentWithKey(t, companyId);
    expect((await t.api.get('/api/agents/me', { token })).status).toBe(200);
    const paused = await t.api.patch(`/api/agents/${agent.id}`, { status: 'paused' });
    expect(paused.body).toMatchObject({ status: 'paused', pauseReason: 'manual' });
    expect(paused.body.pausedAt).not.toBeNull();
    expect(statusChanges.find((e) => e.agentId === agent.id)).toMatchObject({ from: 'idle', to: 'paused' });
    expect((await t.api.patch(`/api/agents/${agent.id}`, { status: 'idle' })).body).toMatchObject({ status: 'idle', pauseReason: null, pausedAt: null });

    await expectUnchanged(t, () => t.api.patch(`/api/agents/${agent.id}`, { status: 'pending_approval' }), 422, /set only by the hire flow/);
    expect((await t.api.patch(`/api/agents/${agent.id}`, { status: 'terminated' })).body.status).toBe('terminated');
    // The cached credential is gone at once: the key is refused on the very next request.
    const refused = await t.api.get('/api/agents/me', { token });
    expect(refused.status).toBe(401);
    expect(refused.body.error).toBe('Agent is terminated');
    await expectUnchanged(t, () => t.api.patch(`/api/agents/${agent.id}`, { status: 'idle' }), 409, 'Terminated agents cannot be resumed');
  });

  it('refuses activating a pending agent by patch', async () => {
    const strict = await insertCompany(t, { requireApproval: true });
    const hire = await t.api.post(`/api/companies/${strict}/agent-hires`, { name: 'Waiting' });
    const id = hire.body.agent.id;
    await expectUnchanged(t, () => t.api.patch(`/api/agents/${id}`, { status: 'idle' }), 409, /Pending approval agents cannot be activated directly/);
    await expectUnchanged(t, () => t.api.patch(`/api/agents/${id}`, { status: 'active' }), 409);
  });

  it('lets an agent edit its own presentation but not its powers', async () => {
    const { agent, token } = await agentWithKey(t, companyId);
    const own = await t.api.patch(`/api/agents/${agent.id}`, { title: 'Self titled', capabilities: 'many', metadata: { x: 1 } }, { token });
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({ title: 'Self titled', capabilities: 'many', metadata: { x: 1 } });
    await expectUnchanged(t, () => t.api.patch(`/api/agents/${agent.id}`, { budgetMonthlyCents: 99999, role: 'ceo' }, { token }), 403, /changing role, budgetMonthlyCents requires the agents:create grant/);
    await expectUnchanged(t, () => t.api.patch(`/api/agents/${agent.id}`, { status: 'paused' }, { token }), 403, /cannot change status with PATCH/);
    const peer = await createAgent(t, companyId);
    await expectUnchanged(t, () => t.api.patch(`/api/agents/${peer.id}`, { title: 'x' }, { token }), 403, /updating another agent requires the agents:create grant/);
  });

  it('lets an agent with agents:create configure peers of its company only', async () => {
    const { agent: manager, token } = await agentWithKey(t, companyId);
    await t.sql.query("insert into permission_grants (company_id, principal_type, principal_id, permission_key) values ($1, 'agent', $2, 'agents:create')", [companyId, manager.id]);
    const peer = await createAgent(t, companyId);
    const res = await t.api.patch(`/api/agents/${peer.id}`, { adapterConfig: { model: 'm' }, role: 'engineer' }, { token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ role: 'engineer', adapterConfig: { model: 'm' } });
    const revision = await t.sql.query("select created_by_agent_id from agent_config_revisions where agent_id = $1 and source = 'patch'", [peer.id]);
    expect(revision.rows[0].created_by_agent_id).toBe(manager.id);
    const foreign = await createAgent(t, otherCompanyId);
    await expectUnchanged(t, () => t.api.patch(`/api/agents/${foreign.id}`, { title: 'x' }, { token }), 403, 'Agent key cannot access another company');
  });

  it('generates a device key when an agent switches to the gateway adapter', async () => {
    const agent = await createAgent(t, companyId);
    const res = await t.api.patch(`/api/agents/${agent.id}`, { adapterType: 'zeta_gateway' });
    expect(res.body.adapterConfig.devicePrivateKeyPem).toBe('[REDACTED]');
    const stored = await t.sql.query('select adapter_config from agents where id = $1', [agent.id]);
    expect(stored.rows[0].adapter_config.devicePrivateKeyPem).toMatch(/PRIVATE KEY/);
  });
});

describe('PATCH /api/agents/{agentId}/permissions', () => {
  it('sets canCreateAgents and adds or clears the tasks:assign grant with a membership', async () => {
    const agent = await createAgent(t, companyId, { role: 'engineer' });
    const granted = await t.api.patch(`/api/agents/${agent.id}/permissions`, { canCreateAgents: true, canAssignTasks: true });
    expect(granted.status).toBe(200);
    expect(granted.body.permissions).toEqual({ canCreateAgents: true });
    expect(granted.body.access).toMatchObject({ canAssignTasks: true, taskAssignSource: 'agent_creator' });
    expect(granted.body.access.membership).toMatchObject({ principalType: 'agent', principalId: agent.id, status: 'active' });
    expect(granted.body.access.grants.map((g: any) => g.permissionKey)).toEqual(['tasks:assign']);

    const onlyGrant = await t.api.patch(`/api/agents/${agent.id}/permissions`, { canCreateAgents: false });
    expect(onlyGrant.body.access).toMatchObject({ canAssignTasks: true, taskAssignSource: 'explicit_grant' });

    const cleared = await t.api.patch(`/api/agents/${agent.id}/permissions`, { canAssignTasks: false });
    expect(cleared.body.access).toMatchObject({ canAssignTasks: false, taskAssignSource: 'none', grants: [] });
    expect(cleared.body.access.membership.status).toBe('active');
    expect((await activity(t, agent.id)).filter((e) => e.action === 'agent.permissions_updated')).toHaveLength(3);
  });

  it('reactivates a suspended membership when granting', async () => {
    const agent = await createAgent(t, companyId);
    await t.sql.query("insert into company_memberships (company_id, principal_type, principal_id, role, status) values ($1, 'agent', $2, 'member', 'suspended')", [companyId, agent.id]);
    const res = await t.api.patch(`/api/agents/${agent.id}/permissions`, { canAssignTasks: true });
    expect(res.body.access.membership.status).toBe('active');
  });

  it('is open to the company CEO agent and closed to other agents', async () => {
    const { token: ceoToken } = await agentWithKey(t, companyId, { role: 'ceo' });
    const { token: plainToken } = await agentWithKey(t, companyId, { role: 'engineer' });
    const target = await createAgent(t, companyId);
    expect((await t.api.patch(`/api/agents/${target.id}/permissions`, { canAssignTasks: true }, { token: ceoToken })).status).toBe(200);
    await expectUnchanged(t, () => t.api.patch(`/api/agents/${target.id}/permissions`, { canCreateAgents: true }, { token: plainToken }), 403, "Only the board or the company's CEO agent can change agent permissions");
    const foreign = await createAgent(t, otherCompanyId);
    await expectUnchanged(t, () => t.api.patch(`/api/agents/${foreign.id}/permissions`, { canCreateAgents: true }, { token: ceoToken }), 403);
    await expectUnchanged(t, () => t.api.patch(`/api/agents/${target.id}/permissions`, { canCreateAgents: 'yes' }), 400);
  });

  it('answers 404 for unknown agents', async () => {
    await expectUnchanged(t, () => t.api.patch(`/api/agents/${randomUUID()}/permissions`, { canCreateAgents: true }), 404, 'Agent not found');
  });
});
