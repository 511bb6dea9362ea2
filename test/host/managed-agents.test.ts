import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startPeerKernel, startTestKernel, type TestKernel } from '../support/harness.ts';

/**
 * Managed agents (manifest managed.agents, capability agents.managed), through the summaries
 * plugin's built-in summarizer: made by the host per company, exactly once across processes,
 * never touching an agent it does not manage, paused by a disable and resumed by an enable
 * without lifting the board's pause. docs/plugins/managed-resources.md.
 */
let t: TestKernel;

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  const res = await t.api.patch('/api/instance/settings/experimental', { enableSummaries: true });
  expect(res.status, res.text).toBe(200);
}, 120_000);
afterAll(async () => { await t?.stop(); });

const managed = async (companyId: string) => (await t.sql.query(
  "select id, name, status, role from agents where company_id = $1 and managed_by_plugin = 'summaries' and managed_key = 'summarizer'", [companyId])).rows;
const agentView = async (id: string) => { const res = await t.api.get(`/api/agents/${id}`); expect(res.status, res.text).toBe(200); return res.body.agent ?? res.body; };
const lifecycle = async (action: 'enable' | 'disable', api = t.api) => {
  const res = await api.post(`/api/plugins/summaries/${action}`, {});
  expect(res.status, res.text).toBe(200);
};

describe('a managed agent', () => {
  it('is made for a new company, once, marked managedBy, idle and not yet set up', async () => {
    const company = await createCompany(t.api);
    const rows = await managed(company.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ name: 'Summarizer', status: 'idle', role: 'summarizer' });
    const view = await agentView(rows[0].id);
    expect(view).toMatchObject({ companyId: company.id, managedBy: { plugin: 'summaries', key: 'summarizer' }, adapterType: 'process', adapterConfig: {} });
    const status = await t.api.get(`/api/companies/${company.id}/summarizer`);
    expect(status.body).toEqual({ agentId: rows[0].id, status: 'needs_setup' });
    // Its creation names the plugin, and its first revision no user: the executor will not run it until the board configures it.
    const created = await t.sql.query("select actor_type, actor_id, details from activity_log where action = 'agent.created' and entity_id = $1", [rows[0].id]);
    expect(created.rows).toEqual([{ actor_type: 'system', actor_id: 'plugin:summaries', details: expect.objectContaining({ managedBy: { plugin: 'summaries', key: 'summarizer' } }) }]);
    const revisions = await t.sql.query('select created_by_user_id, created_by_agent_id from agent_config_revisions where agent_id = $1', [rows[0].id]);
    expect(revisions.rows).toEqual([{ created_by_user_id: null, created_by_agent_id: null }]);
  });

  it('is each company\'s own: another company\'s summarizer is never the one answered', async () => {
    const a = await createCompany(t.api);
    const b = await createCompany(t.api);
    const [agentA] = await managed(a.id);
    const [agentB] = await managed(b.id);
    expect(agentA.id).not.toBe(agentB.id);
    expect((await t.api.get(`/api/companies/${a.id}/summarizer`)).body.agentId).toBe(agentA.id);
    expect((await t.api.get(`/api/companies/${b.id}/summarizer`)).body.agentId).toBe(agentB.id);
    const unmanaged = await createAgent(t.api, a.id, { name: 'Plain' });
    expect((await agentView(unmanaged.id)).managedBy).toBeNull();
  });

  it('leaves an unmanaged agent of the same name alone, through enable and disable', async () => {
    await lifecycle('disable');
    const company = await createCompany(t.api);
    expect(await managed(company.id)).toHaveLength(0);
    expect((await t.api.get(`/api/companies/${company.id}/summarizer`)).status).toBe(404); // the plugin's routes are gone while it is disabled
    const namesake = await createAgent(t.api, company.id, { name: 'Summarizer', role: 'engineer' });
    await lifecycle('enable');
    const rows = await managed(company.id);
    expect(rows).toHaveLength(1);
    expect(rows[0].id).not.toBe(namesake.id);
    expect(rows[0].name).toBe('Summarizer 2');
    expect(await agentView(namesake.id)).toMatchObject({ name: 'Summarizer', role: 'engineer', status: 'idle', managedBy: null });
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
    const paused = await t.api.post(`/api/agents/${boardPaused.id}/pause`, {});
    expect(paused.status, paused.text).toBe(200);
    await lifecycle('disable');
    const holds = await t.sql.query("select holder, reason from scope_holds where scope_id = $1 order by holder", [boardPaused.id]);
    expect(holds.rows).toEqual([{ holder: 'operator', reason: expect.any(String) }, { holder: 'plugin:summaries', reason: 'plugin_disabled' }]);
    expect((await agentView(free.id)).status).toBe('paused');
    const pausedEntries = await t.sql.query("select details from activity_log where action = 'agent.paused' and entity_id = $1", [free.id]);
    expect(pausedEntries.rows).toEqual([{ details: expect.objectContaining({ reason: 'plugin_disabled', plugin: 'summaries' }) }]);
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
    expect((await t.api.get(`/api/companies/${company.id}/summarizer`)).body).toEqual({ agentId: agent.id, status: 'terminated' });
  });

  it('cannot exist twice for one company, plugin and key (the database refuses a second)', async () => {
    const company = await createCompany(t.api);
    await expect(t.sql.query(
      "insert into agents (company_id, name, url_key, managed_by_plugin, managed_key) values ($1, 'Twin', 'twin', 'summaries', 'summarizer')", [company.id]))
      .rejects.toThrow(/agents_managed_identity/);
  });

  it('is made once when two processes enable at the same time while a third creates companies', async () => {
    await lifecycle('disable');
    const before = [await createCompany(t.api), await createCompany(t.api)];
    const peer = await startPeerKernel(t);
    try {
      const [first, second, created] = await Promise.all([
        t.api.post('/api/plugins/summaries/enable', {}),
        peer.api.post('/api/plugins/summaries/enable', {}),
        Promise.all([createCompany(peer.api), createCompany(t.api), createCompany(peer.api)]),
      ]);
      expect([first.status, second.status]).toEqual([200, 200]);
      for (const company of [...before, ...created]) expect(await managed(company.id), company.id).toHaveLength(1);
      const duplicates = await t.sql.query(
        "select company_id from agents where managed_by_plugin = 'summaries' group by company_id, managed_key having count(*) > 1");
      expect(duplicates.rows).toEqual([]);
    } finally {
      await peer.stop();
    }
  }, 60_000);
});
