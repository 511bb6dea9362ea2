import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { addCost, agentSpent, companySpent, event, settling } from './helpers.ts';

/**
 * spentMonthlyCents is the costs plugin's running total of the month, read by the kernel from
 * the plugin's view (keel_private.month_spend, migration 0045): no kernel row holds a copy.
 */
let t: TestKernel;
beforeAll(async () => { t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS }); });
afterAll(async () => { await t?.stop(); });

const rowVersion = async (table: 'companies' | 'agents', id: string) =>
  (await t.sql.query(`select xmin::text as version, updated_at from ${table} where id = $1`, [id])).rows[0];

describe('month-to-date spend read from the costs plugin', () => {
  it('shows the plugin\'s totals on every read of companies and agents, and a cost event writes no kernel row', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const other = await createAgent(settling(t), company.id);
    const companyBefore = await rowVersion('companies', company.id);
    const agentBefore = await rowVersion('agents', agent.id);
    await addCost(t.api, company.id, event(agent.id, 40));
    await addCost(t.api, company.id, event(agent.id, 2));
    // Nothing of the kernel's changed: the figure lives in the plugin's totals alone.
    expect(await rowVersion('companies', company.id)).toEqual(companyBefore);
    expect(await rowVersion('agents', agent.id)).toEqual(agentBefore);

    expect(await companySpent(t.api, company.id)).toBe(42);
    expect(await agentSpent(t.api, agent.id)).toBe(42);
    expect(await agentSpent(t.api, other.id)).toBe(0);
    const companies = (await t.api.get('/api/companies')).body as Array<{ id: string; spentMonthlyCents: number }>;
    expect(companies.find((c) => c.id === company.id)?.spentMonthlyCents).toBe(42);
    const agents = (await t.api.get(`/api/companies/${company.id}/agents`)).body as Array<{ id: string; spentMonthlyCents: number }>;
    expect(agents.map((a) => [a.id, a.spentMonthlyCents]).sort()).toEqual([[agent.id, 42], [other.id, 0]].sort());
    // The answers of writes read it too.
    const patched = await t.api.patch(`/api/companies/${company.id}`, { description: 'spending' });
    expect([patched.status, patched.body.spentMonthlyCents]).toEqual([200, 42]);
    const patchedAgent = await t.api.patch(`/api/agents/${agent.id}`, { title: 'Spender' });
    expect([patchedAgent.status, patchedAgent.body.spentMonthlyCents]).toEqual([200, 42]);
    // Another company's spend is its own.
    const stranger = await createCompany(settling(t));
    expect(await companySpent(t.api, stranger.id)).toBe(0);
  });

  it('keeps the plugin\'s last figure while the plugin is disabled, and follows it again once enabled', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    await addCost(t.api, company.id, event(agent.id, 17));
    const disabled = await t.api.post('/api/plugins/costs/disable', {});
    expect(disabled.status, disabled.text).toBe(200);
    try {
      expect(await companySpent(t.api, company.id)).toBe(17);
      expect(await agentSpent(t.api, agent.id)).toBe(17);
    } finally {
      const enabled = await t.api.post('/api/plugins/costs/enable', {});
      expect(enabled.status, enabled.text).toBe(200);
    }
    await addCost(t.api, company.id, event(agent.id, 3));
    expect(await companySpent(t.api, company.id)).toBe(20);
  });

  it('reads 0, and the kernel keeps answering, where the plugin\'s view is missing (a plugin never installed)', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    await addCost(t.api, company.id, event(agent.id, 9));
    expect(await companySpent(t.api, company.id)).toBe(9);
    // A company whose row this process has not cached (a cached row shows its spend for CACHED_SPEND_MS).
    const unread = await createCompany(settling(t));
    await addCost(t.api, unread.id, event((await createAgent(settling(t), unread.id)).id, 4));
    // As on an instance without the costs plugin: the view is not there.
    const definition = (await t.sql.query("select pg_get_viewdef('plugin_costs.month_spend'::regclass) as sql")).rows[0].sql as string;
    await t.sql.query('drop view plugin_costs.month_spend');
    try {
      expect(await companySpent(t.api, unread.id)).toBe(0);
      expect(await agentSpent(t.api, agent.id)).toBe(0);
    } finally {
      const owner = (await t.sql.query("select pg_get_userbyid(nspowner) as owner from pg_namespace where nspname = 'plugin_costs'")).rows[0].owner as string;
      await t.sql.query(`create view plugin_costs.month_spend as ${definition}`);
      await t.sql.query(`alter view plugin_costs.month_spend owner to "${owner}"`);
    }
    expect(await companySpent(t.api, company.id)).toBe(9);
  });
});
