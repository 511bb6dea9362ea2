import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../../support/harness.ts';
import { installPlugin } from '../../support/plugins.ts';
import { expectKernelAlive, variant } from './support.ts';

/**
 * SANDBOX.md class 5, through the kernel's own reads: the kernel shows month-to-date spend from
 * the costs plugin's view plugin_costs.month_spend, and a view runs with the privileges of whoever
 * reads it. A plugin that is not the first-party costs plugin but holds the namespace `costs`
 * (here under the key `costs` itself, on an instance without the first-party one) defines that
 * view: the kernel must neither show its figures nor run its SQL.
 */
let t: TestKernel;
let dir: string;
let company: any;
let agent: any;

beforeAll(async () => {
  t = await startTestKernel();
  company = await createCompany(t.api);
  agent = await createAgent(t.api, company.id);
  // It declares what the SDK says the key costs publishes, as any plugin under that key must.
  const genuine = JSON.parse(await readFile(fileURLToPath(new URL('../../../plugins/costs/plugin.json', import.meta.url)), 'utf8'));
  dir = await variant('attack-sql-ro', (m) => ({
    ...m, key: 'costs', displayName: 'Forged costs', database: { namespace: 'costs', migrations: 'migrations' },
    capabilities: [...m.capabilities, { id: 'database.namespace.migrate', reason: 'Creates the forged view' }, { id: 'events.publish', reason: 'Declares the events of its key' }],
    publishedEvents: genuine.publishedEvents,
  }));
  // The figures it would have the kernel show, each read taking an advisory lock (a side effect
  // of the view's own SQL, which would run in the reader's session).
  const cents = 'case when pg_catalog.pg_try_advisory_lock(4242) then 424242 else 424242 end::bigint';
  await writeFile(join(dir, 'migrations', '0002-month-spend.sql'), `
    create view month_spend as
      select '${company.id}'::uuid as company_id, 'company'::text as scope_type, '${company.id}'::uuid as scope_id, ${cents} as cost_cents
      union all
      select '${company.id}'::uuid, 'agent', '${agent.id}'::uuid, ${cents};
  `);
  await installPlugin(t, dir);
  const enabled = await t.api.post('/api/plugins/costs/enable', {});
  expect(enabled.status, enabled.text).toBe(200);
});
afterAll(async () => {
  await t?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const advisoryLocks = async () => (await t.sql.query("select count(*)::int as n from pg_locks where locktype = 'advisory' and objid = 4242")).rows[0].n;

describe('a plugin holding the costs namespace', () => {
  it('cannot feed the kernel spend figures, nor have it run the SQL of its view', async () => {
    // The forged view is in place and answers its figures to whoever reads it (taking the lock).
    const client = await t.sql.connect();
    try {
      const forged = await client.query("select cost_cents::int as cents from plugin_costs.month_spend where scope_type = 'company'");
      expect(forged.rows).toEqual([{ cents: 424242 }]);
      expect(await advisoryLocks()).toBe(1);
      await client.query('select pg_advisory_unlock_all()');
    } finally {
      client.release();
    }
    expect((await t.api.get(`/api/companies/${company.id}`)).body.spentMonthlyCents).toBe(0);
    expect((await t.api.get(`/api/agents/${agent.id}`)).body.spentMonthlyCents).toBe(0);
    const listed = (await t.api.get('/api/companies')).body as Array<{ id: string; spentMonthlyCents: number }>;
    expect(listed.find((c) => c.id === company.id)?.spentMonthlyCents).toBe(0);
    // No session of the kernel took the view's advisory lock: its SQL never ran.
    expect(await advisoryLocks()).toBe(0);
    await expectKernelAlive(t);
  });
});
