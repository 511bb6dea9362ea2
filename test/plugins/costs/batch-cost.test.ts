import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { addCost, companySpent, event, postCost, settling } from './helpers.ts';

/** What a batch of cost events costs the database, and the kernel's cached company row it changes. */
let t: TestKernel;
beforeAll(async () => { t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS }); });
afterAll(async () => { await t?.stop(); });

describe('POST cost-events: the kernel\'s cached company row', () => {
  it('is not touched by cost events (the spend is read from the costs plugin), while any change of the row still evicts it', async () => {
    const company = await createCompany(settling(t), { name: 'Spend Cache' });
    const agent = await createAgent(settling(t), company.id);
    // Read once: the kernel caches the row.
    expect((await t.api.get(`/api/companies/${company.id}`)).body).toMatchObject({ name: 'Spend Cache', spentMonthlyCents: 0 });
    // A change the cache cannot hear of (no trigger runs): only a re-read from the database would show it.
    const client = await t.sql.connect();
    try {
      await client.query("set session_replication_role = replica");
      await client.query("update companies set name = 'Renamed Unheard' where id = $1", [company.id]);
    } finally {
      await client.query('reset session_replication_role');
      client.release();
    }
    await addCost(t.api, company.id, event(agent.id, 70));
    // The spend is new and the name is still the cached one: the row was not read again.
    expect((await t.api.get(`/api/companies/${company.id}`)).body).toMatchObject({ name: 'Spend Cache', spentMonthlyCents: 70 });
    await addCost(t.api, company.id, event(agent.id, 5));
    expect((await t.api.get(`/api/companies/${company.id}`)).body).toMatchObject({ name: 'Spend Cache', spentMonthlyCents: 75 });
    // Any other change of the row evicts it: the next read comes from the database.
    expect((await t.api.patch(`/api/companies/${company.id}`, { description: 'changed' })).status).toBe(200);
    const fresh = await t.api.get(`/api/companies/${company.id}`);
    expect(fresh.body).toMatchObject({ name: 'Renamed Unheard', spentMonthlyCents: 75 });
  });
});

describe('POST cost-events: what a batch costs the database', () => {
  it('a batch of new events waits for the database twice: one statement that stores and adds them, and the COMMIT with the activity entries', async () => {
    const company = await createCompany(settling(t));
    const agents = [await createAgent(settling(t), company.id), await createAgent(settling(t), company.id)];
    const traffic = () => ({ ...t.kernel.host.plugins.get('costs')!.process!.batchTraffic });
    // The worker reads the activity entity kinds once, in the first call that records activity.
    await addCost(t.api, company.id, event(agents[0]!.id, 1));
    const before = traffic();
    const sent = await Promise.all(Array.from({ length: 24 }, (_, i) => postCost(t.api, company.id, event(agents[i % 2]!.id, 1 + i))));
    expect(sent.map((res) => res.status)).toEqual(sent.map(() => 201));
    const after = traffic();
    const batches = after.batches - before.batches;
    expect(after.calls - before.calls).toBe(24);
    // BEGIN, the statement, the activity entries, COMMIT: four statements in two round trips
    // (month-to-date spend is the plugin's own totals: no report to the kernel's rows).
    expect({ statements: (after.statements - before.statements) / batches, roundTrips: (after.roundTrips - before.roundTrips) / batches }).toEqual({ statements: 4, roundTrips: 2 });
    expect(await companySpent(t.api, company.id)).toBe(1 + Array.from({ length: 24 }, (_, i) => 1 + i).reduce((a, b) => a + b, 0));
  });
});
