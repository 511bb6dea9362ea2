import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { activity, agentWithKey, createAgent, expectUnchanged, insertCompany } from './agents-fixtures.ts';

let t: TestKernel;
let companyId: string;
let otherCompanyId: string;
const created: Array<{ agentId: string; agent: any }> = [];

beforeAll(async () => {
  t = await startTestKernel();
  companyId = await insertCompany(t);
  otherCompanyId = await insertCompany(t);
  t.kernel.services.events.on('agent.created', (payload) => { created.push(payload); });
});
afterAll(async () => { await t?.stop(); });

const agentsPath = () => `/api/companies/${companyId}/agents`;

describe('POST /api/companies/{companyId}/agents', () => {
  it('creates an idle agent with defaults, revision 1, activity and event', async () => {
    const res = await t.api.post(agentsPath(), { name: 'Build Bot', capabilities: 'builds things', budgetMonthlyCents: 500, metadata: { team: 'core' } });
    expect(res.status).toBe(201);
    const agent = res.body;
    expect(agent).toMatchObject({
      companyId, name: 'Build Bot', urlKey: 'build-bot', role: 'general', title: null, icon: null, capabilities: 'builds things',
      reportsTo: null, adapterType: 'process', adapterConfig: {}, runtimeConfig: { heartbeat: { enabled: false } },
      budgetMonthlyCents: 500, spentMonthlyCents: 0, status: 'idle', pauseReason: null, pausedAt: null, permissions: {},
      desiredSkills: [], metadata: { team: 'core' }, lastHeartbeatAt: null,
    });
    expect(agent.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(Date.parse(agent.createdAt)).not.toBeNaN();
    expect(Date.parse(agent.updatedAt)).not.toBeNaN();

    const revisions = await t.sql.query('select revision_number, source, snapshot from agent_config_revisions where agent_id = $1', [agent.id]);
    expect(revisions.rows).toHaveLength(1);
    expect(revisions.rows[0]).toMatchObject({ revision_number: 1, source: 'create' });
    expect(revisions.rows[0].snapshot).toMatchObject({ name: 'Build Bot', budgetMonthlyCents: 500 });

    const entries = await activity(t, agent.id);
    expect(entries.map((e) => e.action)).toEqual(['agent.created']);
    expect(entries[0]).toMatchObject({ actor_type: 'user', actor_id: 'local-board' });

    const event = created.find((e) => e.agentId === agent.id);
    expect(event?.agent).toMatchObject({ id: agent.id, budgetMonthlyCents: 500, companyId });
  });

  it('keeps explicit heartbeat settings and lower-cases the role', async () => {
    const agent = await createAgent(t, companyId, { role: 'Engineer', runtimeConfig: { heartbeat: { enabled: true, intervalSec: 60 }, other: 1 } });
    expect(agent.role).toBe('engineer');
    expect(agent.runtimeConfig).toEqual({ heartbeat: { enabled: true, intervalSec: 60 }, other: 1 });
  });

  it('gives the CEO role canCreateAgents and others nothing', async () => {
    const ceo = await createAgent(t, companyId, { role: 'ceo' });
    expect(ceo.permissions).toEqual({ canCreateAgents: true });
    const engineer = await createAgent(t, companyId, { role: 'engineer' });
    expect(engineer.permissions).toEqual({});
  });

  it('suffixes duplicate names and keeps shortnames unique', async () => {
    const first = await createAgent(t, companyId, { name: 'Coder' });
    const second = await createAgent(t, companyId, { name: 'Coder' });
    const third = await createAgent(t, companyId, { name: 'coder' });
    expect([first.name, first.urlKey]).toEqual(['Coder', 'coder']);
    expect([second.name, second.urlKey]).toEqual(['Coder 2', 'coder-2']);
    expect([third.name, third.urlKey]).toEqual(['coder 3', 'coder-3']);
    // Another company may use the same shortname.
    const elsewhere = await createAgent(t, otherCompanyId, { name: 'Coder' });
    expect(elsewhere.urlKey).toBe('coder');
  });

  it('derives shortnames from accented and symbol-only names', async () => {
    expect((await createAgent(t, companyId, { name: '  Renée  Ops!! ' })).urlKey).toBe('renee-ops');
    expect((await createAgent(t, companyId, { name: '!!!' })).urlKey).toMatch(/^agent(-\d+)?$/);
  });

  it('accepts externally registered adapter types and fills adapter defaults', async () => {
    expect((await createAgent(t, companyId, { adapterType: 'acme_remote' })).adapterType).toBe('acme_remote');
    expect((await createAgent(t, companyId, { adapterType: 'beta_local' })).adapterConfig.model).toBe('beta-default');
    expect((await createAgent(t, companyId, { adapterType: 'gamma_local' })).adapterConfig.model).toBe('gamma-default');
    expect((await createAgent(t, companyId, { adapterType: 'cursor' })).adapterConfig.model).toBe('auto');
    expect((await createAgent(t, companyId, { adapterType: 'beta_local', adapterConfig: { model: 'custom' } })).adapterConfig.model).toBe('custom');
  });

  it('generates a gateway device key, stores it and never returns or logs it', async () => {
    const agent = await createAgent(t, companyId, { adapterType: 'zeta_gateway', adapterConfig: { url: 'ws://gw' } });
    expect(agent.adapterConfig).toEqual({ url: 'ws://gw', devicePrivateKeyPem: '[REDACTED]' });
    const stored = await t.sql.query('select adapter_config from agents where id = $1', [agent.id]);
    expect(stored.rows[0].adapter_config.devicePrivateKeyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    const logged = await t.sql.query("select count(*)::int as n from activity_log where details::text like '%PRIVATE KEY%'");
    expect(logged.rows[0].n).toBe(0);
    const configuration = await t.api.get(`/api/agents/${agent.id}/configuration`);
    expect(configuration.body.adapterConfig.devicePrivateKeyPem).toBe('[REDACTED]');

    const disabled = await createAgent(t, companyId, { adapterType: 'zeta_gateway', adapterConfig: { disableDeviceAuth: true } });
    expect(disabled.adapterConfig).toEqual({ disableDeviceAuth: true });
  });

  it('stores desiredSkills under the skill sync slot and returns them', async () => {
    const agent = await createAgent(t, companyId, { desiredSkills: ['git', 'review'] });
    expect(agent.desiredSkills).toEqual(['git', 'review']);
    expect(agent.adapterConfig).toEqual({ serviceSkillSync: { desiredSkills: ['git', 'review'] } });
  });

  async function secretIn(company: string): Promise<string> {
    const res = await t.api.post(`/api/companies/${company}/secrets`, { name: `S${randomUUID().slice(0, 8)}`, value: 'sv-plaintext-value' });
    expect(res.status, res.text).toBe(201);
    return res.body.id;
  }

  it('accepts env strings and secret references of the same company', async () => {
    const secretId = await secretIn(companyId);
    const agent = await createAgent(t, companyId, {
      adapterConfig: { env: { PLAIN: 'x', API_TOKEN: 'hunter2', REF: { type: 'secret_ref', secretId, version: 'latest' }, PINNED: { type: 'secret_ref', secretId, version: 1 } } },
    });
    expect(agent.adapterConfig.env).toEqual({
      PLAIN: 'x', API_TOKEN: '[REDACTED]', REF: { type: 'secret_ref', secretId, version: 'latest' }, PINNED: { type: 'secret_ref', secretId, version: 1 },
    });
    const stored = await t.sql.query('select adapter_config from agents where id = $1', [agent.id]);
    expect(stored.rows[0].adapter_config.env.API_TOKEN).toBe('hunter2');
  });

  it('refuses secret references to another company, unknown secrets and missing versions', async () => {
    const foreign = await secretIn(otherCompanyId);
    const own = await secretIn(companyId);
    await expectUnchanged(t, () => t.api.post(agentsPath(), { name: 'x', adapterConfig: { env: { A: { type: 'secret_ref', secretId: foreign } } } }), 422, /must name a secret of the same company/);
    await expectUnchanged(t, () => t.api.post(agentsPath(), { name: 'x', adapterConfig: { env: { A: { type: 'secret_ref', secretId: randomUUID() } } } }), 422, /must name a secret of the same company/);
    await expectUnchanged(t, () => t.api.post(agentsPath(), { name: 'x', adapterConfig: { env: { A: { type: 'secret_ref', secretId: own, version: 9 } } } }), 422, /version/);
  });

  it('accepts a manager of the same company', async () => {
    const manager = await createAgent(t, companyId, { name: 'Manager One' });
    const report = await createAgent(t, companyId, { reportsTo: manager.id });
    expect(report.reportsTo).toBe(manager.id);
  });

  it.each([
    ['a missing name', {}, 400, /name is required/],
    ['a blank name', { name: '   ' }, 400, /name/],
    ['a negative budget', { name: 'x', budgetMonthlyCents: -1 }, 400, /budgetMonthlyCents/],
    ['a fractional budget', { name: 'x', budgetMonthlyCents: 1.5 }, 400, /budgetMonthlyCents/],
    ['a non-object adapterConfig', { name: 'x', adapterConfig: 'nope' }, 400, /adapterConfig/],
    ['a malformed adapter type', { name: 'x', adapterType: 'bad type!' }, 400, /adapterType/],
    ['an empty adapter type', { name: 'x', adapterType: '' }, 400, /adapterType/],
    ['a non-uuid reportsTo', { name: 'x', reportsTo: 'boss' }, 400, /reportsTo/],
    ['non-string desiredSkills', { name: 'x', desiredSkills: [1] }, 400, /desiredSkills/],
    ['a non-boolean heartbeat flag', { name: 'x', runtimeConfig: { heartbeat: { enabled: 'yes' } } }, 400, /heartbeat/],
    ['env that is not an object', { name: 'x', adapterConfig: { env: ['A'] } }, 422, /adapterConfig\.env must be an object/],
    ['an env number', { name: 'x', adapterConfig: { env: { A: 1 } } }, 422, /adapterConfig\.env\.A must be a string or a secret reference/],
    ['a secret ref without uuid', { name: 'x', adapterConfig: { env: { A: { type: 'secret_ref', secretId: 'abc' } } } }, 422, /secretId must be a uuid/],
    ['a secret ref with version 0', { name: 'x', adapterConfig: { env: { A: { type: 'secret_ref', secretId: randomUUID(), version: 0 } } } }, 422, /version must be 'latest' or a positive integer/],
    ['a secret ref with a text version', { name: 'x', adapterConfig: { env: { A: { type: 'secret_ref', secretId: randomUUID(), version: 'newest' } } } }, 422, /version/],
    ['an unknown manager', { name: 'x', reportsTo: randomUUID() }, 422, /Manager not found/],
  ])('refuses %s and changes nothing', async (_label, body, status, error) => {
    await expectUnchanged(t, () => t.api.post(agentsPath(), body), status, error);
  });

  it('refuses a manager from another company', async () => {
    const foreign = await createAgent(t, otherCompanyId);
    await expectUnchanged(t, () => t.api.post(agentsPath(), { name: 'x', reportsTo: foreign.id }), 422, 'Manager must belong to the same company');
  });

  it('answers 404 for an unknown company and 415 for a non-JSON body', async () => {
    await expectUnchanged(t, () => t.api.post(`/api/companies/${randomUUID()}/agents`, { name: 'x' }), 404, 'Company not found');
    await expectUnchanged(t, () => t.api.post(`/api/companies/not-a-uuid/agents`, { name: 'x' }), 404, 'Company not found');
    await expectUnchanged(t, () => t.api.request('POST', agentsPath(), { rawBody: 'name=x', headers: { 'content-type': 'text/plain' } }), 415);
  });

  it('is board only: an agent gets 403 even with canCreateAgents', async () => {
    const { token } = await agentWithKey(t, companyId, { role: 'ceo' });
    await expectUnchanged(t, () => t.api.post(agentsPath(), { name: 'x' }, { token }), 403, 'Board access required');
  });
});

describe('POST /api/companies/{companyId}/agent-hires', () => {
  const hiresPath = (id = companyId) => `/api/companies/${id}/agent-hires`;

  it('creates an idle agent with no approval when the company does not require one', async () => {
    const issueId = randomUUID();
    const res = await t.api.post(hiresPath(), { name: 'Hire One', adapterType: 'cursor', sourceIssueId: issueId });
    expect(res.status).toBe(201);
    expect(res.body.approval).toBeNull();
    expect(res.body.agent).toMatchObject({ name: 'Hire One', status: 'idle', adapterConfig: { model: 'auto' } });
    const entries = await activity(t, res.body.agent.id);
    expect(entries[0]).toMatchObject({ action: 'agent.created', details: { hire: true, sourceIssueIds: [issueId] } });
  });

  it('creates a pending agent and a hire approval when the company requires approval', async () => {
    const strict = await insertCompany(t, { requireApproval: true });
    const issues = [randomUUID(), randomUUID()];
    const res = await t.api.post(hiresPath(strict), { name: 'Careful Hire', role: 'engineer', budgetMonthlyCents: 100, sourceIssueIds: issues, adapterConfig: { env: { API_KEY: 'sk-secretvalue123' } } });
    expect(res.status).toBe(201);
    const { agent, approval } = res.body;
    expect(agent.status).toBe('pending_approval');
    expect(approval).toMatchObject({
      companyId: strict, type: 'hire_agent', status: 'pending', subjectAgentId: agent.id, requestedByUserId: 'local-board', requestedByAgentId: null,
    });
    expect(approval.payload).toMatchObject({ name: 'Careful Hire', role: 'engineer', budgetMonthlyCents: 100, agentId: agent.id, sourceIssueIds: issues });
    expect(approval.payload.adapterConfig.env.API_KEY).toBe('[REDACTED]');
    const rows = await t.sql.query('select status, payload from approvals where id = $1', [approval.id]);
    expect(rows.rows[0].status).toBe('pending');
    expect(JSON.stringify(rows.rows[0].payload)).not.toContain('sk-secretvalue123');
  });

  it('lets an agent hire with canCreateAgents or an agents:create grant, and refuses others', async () => {
    const { agent: ceo, token: ceoToken } = await agentWithKey(t, companyId, { role: 'ceo' });
    const byCeo = await t.api.post(hiresPath(), { name: 'CEO Hire' }, { token: ceoToken });
    expect(byCeo.status).toBe(201);
    const createdBy = await t.sql.query('select created_by_agent_id from agents where id = $1', [byCeo.body.agent.id]);
    expect(createdBy.rows[0].created_by_agent_id).toBe(ceo.id);

    const { agent: plain, token: plainToken } = await agentWithKey(t, companyId);
    await expectUnchanged(t, () => t.api.post(hiresPath(), { name: 'Nope' }, { token: plainToken }), 403, /agents:create/);

    await t.sql.query("insert into permission_grants (company_id, principal_type, principal_id, permission_key) values ($1, 'agent', $2, 'agents:create')", [companyId, plain.id]);
    const granted = await t.api.post(hiresPath(), { name: 'Granted Hire' }, { token: plainToken });
    expect(granted.status).toBe(201);
  });

  it('refuses a hire into another company and bad input', async () => {
    const { token } = await agentWithKey(t, companyId, { role: 'ceo' });
    await expectUnchanged(t, () => t.api.post(hiresPath(otherCompanyId), { name: 'x' }, { token }), 403, 'Agent key cannot access another company');
    await expectUnchanged(t, () => t.api.post(hiresPath(), { name: 'x', sourceIssueIds: ['nope'] }), 400, /sourceIssueIds/);
    await expectUnchanged(t, () => t.api.post(hiresPath(), { name: 'x', adapterConfig: { env: { A: false } } }), 422, /adapterConfig\.env\.A/);
  });
});
