import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { q } from './helpers.ts';

/**
 * Migration 0002 on an instance that recorded costs before sources existed: the runtime's
 * reports (keys `usage:...`) become `adapter`, and the rollups of their hours and days are
 * summed again per source, so whole-day and whole-hour reads split them as raw reads do.
 */
const MIGRATION = '0002-cost-source.sql';
let dir: string;
let t: TestKernel;
let company: any;
let agent: any;

const EVENTS = [
  { at: '2025-04-10T10:05:00.000Z', cents: 100, key: null, model: 'm1' },
  { at: '2025-04-10T10:20:00.000Z', cents: 200, key: 'usage:exec-1-4', model: 'm1' },
  { at: '2025-04-10T10:40:00.000Z', cents: 400, key: 'client-key-1', model: 'm1' },
  { at: '2025-04-11T08:00:00.000Z', cents: 800, key: 'usage:exec-2-9', model: 'm2' },
  { at: '2025-04-12T09:00:00.000Z', cents: 1600, key: null, model: 'm2' },
];

/** Rollups as the plugin wrote them before sources existed. */
const OLD_ROLLUP = (table: string, unit: 'hour' | 'day') => `
  insert into plugin_costs.${table} (company_id, ${unit}, agent_id, project_id, provider, biller, model, billing_type, cost_cents, input_tokens, cached_input_tokens, output_tokens, event_count)
  select company_id, date_trunc('${unit}', occurred_at, 'UTC'), agent_id, project_id, provider, biller, model, billing_type, sum(cost_cents), 0, 0, 0, count(*)
    from plugin_costs.cost_events where company_id = $1 group by 1, 2, 3, 4, 5, 6, 7, 8`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'keel-costs-migration-'));
  await cp(join(FIRST_PARTY_PLUGINS, 'costs'), join(dir, 'costs'), { recursive: true });
  await rm(join(dir, 'costs', 'migrations', MIGRATION));
  const manifestPath = join(dir, 'costs', 'plugin.json');
  const manifest = JSON.parse(await readFile(manifestPath, 'utf8'));
  await writeFile(manifestPath, JSON.stringify({ ...manifest, version: '1.0.0' }));
  t = await startTestKernel({}, { firstPartyDir: dir });
  company = await createCompany(t.api);
  agent = await createAgent(t.api, company.id);
  for (const e of EVENTS) {
    await t.sql.query(
      `insert into plugin_costs.cost_events (id, company_id, agent_id, provider, biller, model, billing_type, cost_cents, occurred_at, idempotency_key)
       values (gen_random_uuid(), $1, $2, 'alpha', 'alpha', $3, 'metered_api', $4, $5, $6)`, [company.id, agent.id, e.model, e.cents, e.at, e.key]);
  }
  await t.sql.query(OLD_ROLLUP('cost_rollups', 'hour'), [company.id]);
  await t.sql.query(OLD_ROLLUP('cost_rollups_daily', 'day'), [company.id]);
  // The release with the migration: the host upgrades the plugin in place and runs it.
  await cp(join(FIRST_PARTY_PLUGINS, 'costs', 'migrations', MIGRATION), join(dir, 'costs', 'migrations', MIGRATION));
  await writeFile(manifestPath, JSON.stringify(manifest));
  await t.kernel.host.start({ bootstrapFirstParty: true, firstPartyDir: dir });
}, 120_000);
afterAll(async () => {
  await t?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('migration 0002 (cost event source)', () => {
  it('upgraded the plugin and marked the runtime\'s reports adapter, everything else self_reported', async () => {
    expect((await t.api.get('/api/plugins/costs')).body).toMatchObject({ status: 'enabled', version: JSON.parse(await readFile(join(FIRST_PARTY_PLUGINS, 'costs', 'plugin.json'), 'utf8')).version });
    const { rows } = await t.sql.query('select cost_cents::int as cents, source from plugin_costs.cost_events where company_id = $1 order by occurred_at', [company.id]);
    expect(rows).toEqual([
      { cents: 100, source: 'self_reported' }, { cents: 200, source: 'adapter' }, { cents: 400, source: 'self_reported' },
      { cents: 800, source: 'adapter' }, { cents: 1600, source: 'self_reported' },
    ]);
  });

  it('rollups split by source; whole-day and whole-hour reads agree with the events', async () => {
    const read = async (params: Record<string, string>) => {
      const res = await t.api.get(`/api/companies/${company.id}/costs/by-source${q(params)}`);
      expect(res.status, res.text).toBe(200);
      return res.body.map((row: any) => [row.source, row.spendCents, row.eventCount]);
    };
    // Whole days: daily rollups only.
    expect(await read({ from: '2025-04-10T00:00:00.000Z', to: '2025-04-12T23:59:59.999Z' })).toEqual([['self_reported', 2100, 3], ['adapter', 1000, 2]]);
    // One whole hour: hourly rollups only.
    expect(await read({ from: '2025-04-10T10:00:00.000Z', to: '2025-04-10T10:59:59.999Z' })).toEqual([['self_reported', 500, 2], ['adapter', 200, 1]]);
    // The other breakdowns read what they read before.
    const byModel = await t.api.get(`/api/companies/${company.id}/costs/by-agent-model${q({ from: '2025-04-10T00:00:00.000Z', to: '2025-04-12T23:59:59.999Z' })}`);
    expect(byModel.body.map((row: any) => [row.model, row.spendCents, row.eventCount])).toEqual([['m2', 2400, 2], ['m1', 700, 3]]);
    const { rows } = await t.sql.query('select count(*)::int as n, sum(cost_cents)::int as cents from plugin_costs.cost_rollups_daily where company_id = $1', [company.id]);
    expect(rows[0]).toEqual({ n: 4, cents: 3100 });
  });
});
