import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { waitFor } from '../../support/wait-for.ts';
import { installAndEnable } from '../../support/plugins.ts';
import { settling } from './helpers.ts';

const CALLER = fileURLToPath(new URL('./fixtures/usage-caller', import.meta.url));

/**
 * A usage report (the record-usage service the runtime and the model gateway call) that
 * crosses a hard stop changes kernel rows (it pauses the agent: a hold and its status) and
 * writes activity, whose per-company chain lock every kernel route takes last (creating an
 * agent's key locks the agent, then appends to the chain). Were the cost event to take the
 * chain first, the two would wait on each other until PostgreSQL broke the circle by failing
 * one (a 500). The test plays the key's side by hand: it holds the agent row, waits until the
 * cost event is blocked on it, then appends to the company's chain.
 */
let t: TestKernel;
beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  await installAndEnable(t, CALLER);
});
afterAll(async () => { await t?.stop(); });

it('a usage report takes the activity chain after the agent row, so a transaction holding the agent can still append activity', async () => {
  const company = await createCompany(settling(t));
  // Month-to-date spend is the plugin's own: what touches the agent row is the hard stop of its budget.
  const agent = await createAgent(settling(t), company.id, { name: 'Locked', budgetMonthlyCents: 5 });
  const client = await t.sql.connect();
  try {
    await client.query('begin');
    await client.query('select id from agents where id = $1 for update', [agent.id]);
    const posted = t.api.post(`/api/plugins/usage-caller/companies/${company.id}/call/record-usage`, {
      agentId: agent.id, runId: randomUUID(), provider: 'alpha', model: 'alpha-large', biller: 'alpha', billingType: 'metered_api',
      inputTokens: 10, cachedInputTokens: 0, outputTokens: 5, costCents: 7, occurredAt: new Date().toISOString(),
    }, { headers: { 'idempotency-key': randomUUID() } });
    // The cost event's transaction waits for the agent row (its hard stop pauses the agent).
    const { rows: [{ pid }] } = await client.query('select pg_backend_pid() as pid');
    await waitFor(async () => {
      const { rows } = await t.sql.query('select count(*)::int as n from pg_stat_activity where $1 = any(pg_blocking_pids(pid))', [pid]);
      return rows[0].n > 0;
    }, 'the cost event to wait for the agent row');
    // Appending to the company's chain does not wait on the blocked cost event.
    await client.query('set local lock_timeout = 5000');
    await client.query('select count(*) from keel_private.append_activities($1::jsonb)', [JSON.stringify([
      { companyId: company.id, actorType: 'system', actorId: 'test', action: 'test.lock_order', entityType: 'company', entityId: company.id, details: null },
    ])]);
    await client.query('commit');
    const res = await posted;
    expect(res.status, res.text).toBe(200);
  } finally {
    await client.query('rollback').catch(() => undefined);
    client.release();
  }
});
