import { rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../../support/harness.ts';
import { installAndEnable, pluginVariant } from '../../support/plugins.ts';

/**
 * SANDBOX.md class 3 (reading what was not granted): a company's and an agent's monthly budget
 * is kept once, on the kernel's rows, and a budget domain reads it in its own SQL through
 * keel_bridge.monthly_budget (budgets.write). A plugin without that grant must not read it at
 * all, and one with it must read that one figure only: no other column, no row of a company
 * through another company's id, and nothing written.
 */
const FIXTURE = fileURLToPath(new URL('../fixtures/kernel-rows', import.meta.url));
let t: TestKernel;
let company: any;
let other: any;
let agent: any;
let foreignAgent: any;
let bare: string;

const call = (key: string, body: Record<string, unknown>) => t.api.post(`/api/plugins/${key}/companies/${company.id}/rows`, body);
const budgets = async () => (await t.sql.query(
  'select (select budget_monthly_cents from companies where id = $1)::int as company, (select budget_monthly_cents from agents where id = $2)::int as agent', [company.id, agent.id])).rows[0];

beforeAll(async () => {
  t = await startTestKernel();
  company = await createCompany(t.api, { budgetMonthlyCents: 7000 });
  other = await createCompany(t.api, { budgetMonthlyCents: 9100 });
  agent = await createAgent(t.api, company.id, { budgetMonthlyCents: 300 });
  foreignAgent = await createAgent(t.api, other.id, { budgetMonthlyCents: 4400 });
  await installAndEnable(t, FIXTURE, ['http.routes', 'database.namespace.write', 'database.namespace.migrate', 'activity.write', 'agents.pause', 'companies.pause', 'budgets.write']);
  bare = await pluginVariant(FIXTURE, (manifest: any) => ({
    ...manifest, key: 'kernel-rows-unbudgeted', database: { ...manifest.database, namespace: 'kernel_rows_unbudgeted' },
    capabilities: manifest.capabilities.filter((c: { id: string }) => !['budgets.write', 'agents.pause', 'companies.pause'].includes(c.id)),
  }));
  await installAndEnable(t, bare);
});
afterAll(async () => {
  await t?.stop();
  if (bare) await rm(bare, { recursive: true, force: true });
});

describe('reading the kernel\'s monthly budgets from plugin SQL', () => {
  it('is refused by the database to a plugin without budgets.write', async () => {
    const before = await budgets();
    for (const [scope, scopeId] of [['company', company.id], ['agent', agent.id]]) {
      const read = await call('kernel-rows-unbudgeted', { op: 'read-budget', companyId: company.id, scope, scopeId });
      expect([read.status, read.body.code], read.text).toEqual([403, 'sql_42501']);
      expect(JSON.stringify(read.body)).not.toContain('7000');
    }
    // This instance's role: roles are the cluster's, and other tests' instances have one of the same key.
    const role = t.kernel.host.databases.roles({ key: 'kernel-rows-unbudgeted' }).runtime;
    for (const fn of ['keel_bridge.monthly_budget(uuid, text, uuid)', 'keel_bridge.monthly_budgets(jsonb)']) {
      const granted = await t.sql.query("select has_function_privilege($1, $2, 'execute') as ok", [role, fn]);
      expect(granted.rows[0].ok, fn).toBe(false);
    }
    expect(await budgets()).toEqual(before);
  });

  it('answers a plugin with the grant that one figure, and only for an agent of the company named', async () => {
    expect((await call('kernel-rows', { op: 'read-budget', companyId: company.id, scope: 'company', scopeId: company.id })).body).toEqual({ cents: 7000 });
    expect((await call('kernel-rows', { op: 'read-budget', companyId: company.id, scope: 'agent', scopeId: agent.id })).body).toEqual({ cents: 300 });
    // Another company's agent or company paired with this company's id is no row of it: 0, not its budget.
    expect((await call('kernel-rows', { op: 'read-budget', companyId: company.id, scope: 'agent', scopeId: foreignAgent.id })).body).toEqual({ cents: 0 });
    expect((await call('kernel-rows', { op: 'read-budget', companyId: company.id, scope: 'company', scopeId: other.id })).body).toEqual({ cents: 0 });
    expect((await call('kernel-rows', { op: 'read-budget', companyId: company.id, scope: 'project', scopeId: company.id })).body).toEqual({ cents: 0 });
  });

  it('gives no way past the function to the kernel\'s rows themselves', async () => {
    for (const key of ['kernel-rows', 'kernel-rows-unbudgeted']) {
      const read = await call(key, { op: 'read-kernel-row', companyId: company.id });
      expect([read.status, read.body.code], read.text).toEqual([403, 'sql_42501']);
      expect(read.text).not.toContain(company.name);
    }
  });
});
