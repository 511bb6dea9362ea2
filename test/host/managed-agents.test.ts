import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../support/fixtures.ts';
import { startPeerKernel, startTestKernel, type Api, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';

/**
 * Managed agents (manifest managed.agents, capability agents.managed), through a fixture with
 * one agent made on enable (helper) and one made on demand (assistant): made by the host per
 * company, exactly once across processes, never touching an agent it does not manage, paused by
 * a disable and resumed by an enable without lifting the board's pause.
 * docs/plugins/managed-resources.md.
 */
const FIXTURE = fileURLToPath(new URL('./fixtures/managed-fx', import.meta.url));
const KEY = 'managed-fx';
let t: TestKernel;

beforeAll(async () => {
  t = await startTestKernel();
  await installAndEnable(t, FIXTURE);
}, 120_000);
afterAll(async () => { await t?.stop(); });

const managed = async (companyId: string, key = 'helper') => (await t.sql.query(
  'select id, name, status, role from agents where company_id = $1 and managed_by_plugin = $2 and managed_key = $3 order by id', [companyId, KEY, key])).rows;
const agentView = async (id: string) => { const res = await t.api.get(`/api/agents/${id}`); expect(res.status, res.text).toBe(200); return res.body.agent ?? res.body; };
const lifecycle = async (action: 'enable' | 'disable', api = t.api) => {
  const res = await api.post(`/api/plugins/${KEY}/${action}`, {});
  expect(res.status, res.text).toBe(200);
};
/** What the plugin finds with ctx.agents.getManaged. */
const found = async (companyId: string, key = 'helper') => {
  const res = await t.api.get(`/api/plugins/${KEY}/companies/${companyId}/managed/${key}`);
  expect(res.status, res.text).toBe(200);
  return res.body.agent;
};
const provision = (companyId: string, key: string, body: Record<string, unknown> = {}, api: Api = t.api) => api.post(`/api/plugins/${KEY}/companies/${companyId}/managed/${key}`, body);

describe('a managed agent', () => {
  it('is made for a new company, once, marked managedBy, paused until the board approves, not yet set up', async () => {
    const company = await createCompany(t.api);
    const rows = await managed(company.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ name: 'Helper', status: 'paused', role: 'helper' });
    const view = await agentView(rows[0].id);
    expect(view).toMatchObject({ companyId: company.id, pauseReason: 'managed', managedBy: { plugin: KEY, key: 'helper' }, adapterType: 'process', adapterConfig: {} });
    // Its hold is the board's kind: resuming is refused until the board approves (or writes) its configuration.
    expect((await t.sql.query('select holder, reason from scope_holds where scope_id = $1', [rows[0].id])).rows).toEqual([{ holder: 'operator', reason: 'managed' }]);
    const early = await t.api.post(`/api/agents/${rows[0].id}/resume`, {});
    expect(early.status, early.text).toBe(409);
    expect(early.body.error).toContain('approved by the board first');
    const approved = await t.api.post(`/api/agents/${rows[0].id}/approve`, {});
    expect(approved.status, approved.text).toBe(200);
    expect(approved.body).toMatchObject({ status: 'idle', pauseReason: null });
    expect(await found(company.id)).toMatchObject({ id: rows[0].id, managedBy: { plugin: KEY, key: 'helper' } });
    // Its creation names the plugin, and its first revision no user: the executor will not run it until the board configures it.
    const created = await t.sql.query("select actor_type, actor_id, details from activity_log where action = 'agent.created' and entity_id = $1", [rows[0].id]);
    expect(created.rows).toEqual([{ actor_type: 'system', actor_id: `plugin:${KEY}`, details: expect.objectContaining({ managedBy: { plugin: KEY, key: 'helper' } }) }]);
    const revisions = await t.sql.query('select source, created_by_user_id, created_by_agent_id from agent_config_revisions where agent_id = $1 order by revision_number', [rows[0].id]);
    expect(revisions.rows).toEqual([{ source: 'create', created_by_user_id: null, created_by_agent_id: null }, { source: 'approval', created_by_user_id: expect.any(String), created_by_agent_id: null }]);
  });

  it('is each company\'s own: another company\'s agent is never the one answered', async () => {
    const a = await createCompany(t.api);
    const b = await createCompany(t.api);
    const [agentA] = await managed(a.id);
    const [agentB] = await managed(b.id);
    expect(agentA.id).not.toBe(agentB.id);
    expect((await found(a.id)).id).toBe(agentA.id);
    expect((await found(b.id)).id).toBe(agentB.id);
    const unmanaged = await createAgent(t.api, a.id, { name: 'Plain' });
    expect((await agentView(unmanaged.id)).managedBy).toBeNull();
  });

  it('leaves an unmanaged agent of the same name alone, through enable and disable', async () => {
    await lifecycle('disable');
    const company = await createCompany(t.api);
    expect(await managed(company.id)).toHaveLength(0);
    expect((await t.api.get(`/api/plugins/${KEY}/companies/${company.id}/managed/helper`)).status).toBe(404); // the plugin's routes are gone while it is disabled
    const namesake = await createAgent(t.api, company.id, { name: 'Helper', role: 'engineer' });
    await lifecycle('enable');
    const rows = await managed(company.id);
    expect(rows).toHaveLength(1);
    expect(rows[0].id).not.toBe(namesake.id);
    expect(rows[0].name).toBe('Helper 2');
    expect(await agentView(namesake.id)).toMatchObject({ name: 'Helper', role: 'engineer', status: 'idle', managedBy: null });
    expect((await t.api.post(`/api/agents/${rows[0].id}/approve`, {})).status).toBe(200);
    await lifecycle('disable');
    expect((await agentView(namesake.id)).status).toBe('idle');
    expect((await agentView(rows[0].id)).status).toBe('paused');
    await lifecycle('enable');
    expect((await agentView(rows[0].id)).status).toBe('idle');
    expect(await managed(company.id)).toHaveLength(1);
  });

  it('is paused by a disable with the plugin\'s own hold; the enable lifts only that, never the board\'s pause', async () => {
    const company = await createCompany(t.api);
    const [boardPaused] = await managed(company.id);
    const other = await createCompany(t.api);
    const [free] = await managed(other.id);
    for (const agent of [boardPaused, free]) expect((await t.api.post(`/api/agents/${agent.id}/approve`, {})).status).toBe(200);
    const paused = await t.api.post(`/api/agents/${boardPaused.id}/pause`, {});
    expect(paused.status, paused.text).toBe(200);
    await lifecycle('disable');
    const holds = await t.sql.query("select holder, reason from scope_holds where scope_id = $1 order by holder", [boardPaused.id]);
    expect(holds.rows).toEqual([{ holder: 'operator', reason: expect.any(String) }, { holder: `plugin:${KEY}`, reason: 'plugin_disabled' }]);
    expect((await agentView(free.id)).status).toBe('paused');
    const pausedEntries = await t.sql.query("select details from activity_log where action = 'agent.paused' and entity_id = $1", [free.id]);
    expect(pausedEntries.rows).toEqual([{ details: expect.objectContaining({ reason: 'plugin_disabled', plugin: KEY }) }]);
    await lifecycle('enable');
    expect((await agentView(free.id)).status).toBe('idle');
    expect((await agentView(boardPaused.id)).status).toBe('paused');
    expect((await t.sql.query('select holder from scope_holds where scope_id = $1', [boardPaused.id])).rows).toEqual([{ holder: 'operator' }]);
  });

  it('is answered terminated once the board terminates it, and not made again', async () => {
    const company = await createCompany(t.api);
    const [agent] = await managed(company.id);
    const res = await t.api.post(`/api/agents/${agent.id}/terminate`, {});
    expect(res.status, res.text).toBe(200);
    await lifecycle('disable');
    await lifecycle('enable');
    expect(await managed(company.id)).toHaveLength(1);
    expect(await found(company.id)).toMatchObject({ id: agent.id, status: 'terminated' });
  });

  it('cannot exist twice for one company, plugin and key (the database refuses a second)', async () => {
    const company = await createCompany(t.api);
    await expect(t.sql.query(
      "insert into agents (company_id, name, url_key, managed_by_plugin, managed_key) values ($1, 'Twin', 'twin', $2, 'helper')", [company.id, KEY]))
      .rejects.toThrow(/agents_managed_identity/);
  });

  it('is made once when two processes enable at the same time while a third creates companies', async () => {
    await lifecycle('disable');
    const before = [await createCompany(t.api), await createCompany(t.api)];
    const peer = await startPeerKernel(t);
    try {
      const [first, second, created] = await Promise.all([
        t.api.post(`/api/plugins/${KEY}/enable`, {}),
        peer.api.post(`/api/plugins/${KEY}/enable`, {}),
        Promise.all([createCompany(peer.api), createCompany(t.api), createCompany(peer.api)]),
      ]);
      expect([first.status, second.status]).toEqual([200, 200]);
      for (const company of [...before, ...created]) expect(await managed(company.id), company.id).toHaveLength(1);
      const duplicates = await t.sql.query(
        'select company_id from agents where managed_by_plugin = $1 group by company_id, managed_key having count(*) > 1', [KEY]);
      expect(duplicates.rows).toEqual([]);
    } finally {
      await peer.stop();
    }
  }, 60_000);
});

describe('a managed agent made on demand', () => {
  it('is not made on enable nor for a new company; the plugin\'s ask makes it for that company only, once', async () => {
    const company = await createCompany(t.api);
    const bystander = await createCompany(t.api);
    expect(await managed(company.id, 'assistant')).toEqual([]);
    expect(await found(company.id, 'assistant')).toBeNull();
    const first = await provision(company.id, 'assistant');
    expect(first.status, first.text).toBe(200);
    expect(first.body.agent).toMatchObject({ companyId: company.id, name: 'Assistant', role: 'assistant', status: 'paused', managedBy: { plugin: KEY, key: 'assistant' } });
    const again = await provision(company.id, 'assistant');
    expect(again.body.agent.id).toBe(first.body.agent.id);
    expect((await managed(company.id, 'assistant')).map((row) => row.id)).toEqual([first.body.agent.id]);
    expect(await managed(bystander.id, 'assistant')).toEqual([]);
    // Like any managed agent: a revision without a user, so it does not run until the board configures it.
    const revisions = await t.sql.query('select created_by_user_id, created_by_agent_id from agent_config_revisions where agent_id = $1', [first.body.agent.id]);
    expect(revisions.rows).toEqual([{ created_by_user_id: null, created_by_agent_id: null }]);
  });

  it('stays made when the call that asked for it fails afterwards', async () => {
    const company = await createCompany(t.api);
    const res = await provision(company.id, 'assistant', { fail: true });
    expect(res.status, res.text).toBe(422);
    expect(await managed(company.id, 'assistant')).toHaveLength(1);
  });

  it('makes the agent for a call that recorded its own activity before asking: its entries wait for its COMMIT and hold no lock', async () => {
    const company = await createCompany(t.api);
    const res = await t.api.post(`/api/plugins/${KEY}/companies/${company.id}/managed/assistant/after-activity`, {});
    expect(res.status, res.text).toBe(200);
    expect(await managed(company.id, 'assistant')).toHaveLength(1);
    expect((await t.sql.query(`select count(*)::int as n from activity_log where company_id = $1 and action = 'managed_fx.asked'`, [company.id])).rows[0].n).toBe(1);
  });

  it('refuses a key the manifest does not declare, making nothing', async () => {
    const company = await createCompany(t.api);
    const res = await provision(company.id, 'stranger');
    expect(res.status, res.text).toBe(404);
    expect(res.body).toMatchObject({ code: 'managed_agent_not_declared' });
    expect((await t.sql.query('select count(*)::int as n from agents where company_id = $1 and managed_by_plugin is not null and managed_key <> $2', [company.id, 'helper'])).rows[0].n).toBe(0);
  });

  it('is made once when two processes ask at the same time', async () => {
    const company = await createCompany(t.api);
    const peer = await startPeerKernel(t);
    try {
      const answers = await Promise.all([provision(company.id, 'assistant'), provision(company.id, 'assistant', {}, peer.api), provision(company.id, 'assistant'), provision(company.id, 'assistant', {}, peer.api)]);
      expect(answers.map((res) => res.status)).toEqual([200, 200, 200, 200]);
      expect(new Set(answers.map((res) => res.body.agent.id)).size).toBe(1);
      expect(await managed(company.id, 'assistant')).toHaveLength(1);
    } finally {
      await peer.stop();
    }
  }, 60_000);
});
