import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { PLUGIN_POOL_CONNECTIONS } from '../../../kernel/host/worker/capabilities/database.ts';
import { installAndEnable } from './support.ts';

/**
 * SANDBOX.md class 2, through the first-party plugins' shared worker: a burst of writes larger
 * than a plugin's connection pool. A call holding its transaction (and, for an issue create,
 * the company's counter row) must never wait for a second connection of the same pool: the
 * calls behind it hold the others while they wait on its lock, and the worker would hang until
 * the kernel kills it, taking every first-party plugin down. Sent by an agent key, as any agent
 * could, first at a cold worker (nothing loaded yet) and again warm.
 */
let t: TestKernel;
let company: any;
let agentApi: TestKernel['api'];
const BURST = Math.max(32, PLUGIN_POOL_CONNECTIONS * 2);

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  company = await createCompany(t.api, { name: 'Burst Co' });
  const agent = await createAgent(t.api, company.id, { name: 'Burster' });
  agentApi = t.api.as(await createAgentKey(t.api, agent.id));
});
afterAll(async () => { await t?.stop(); });

const workerOf = async (key: string) => (await t.api.get(`/api/plugins/${key}/health`)).body.worker as { restarts: number; status: string; pid: number | null };
const workWorker = () => workerOf('work');

async function burst(label: string): Promise<void> {
  const before = await workWorker();
  const created = await Promise.all(Array.from({ length: BURST }, (_, i) => agentApi.post(`/api/companies/${company.id}/issues`, { title: `${label} ${i}` })));
  expect(created.filter((res) => res.status !== 201).map((res) => `${res.status} ${res.text}`)).toEqual([]);
  const numbers = created.map((res) => res.body.issueNumber as number);
  expect(new Set(numbers).size).toBe(BURST);
  // The worker answered every call itself: it was neither killed nor restarted.
  expect(await workWorker()).toMatchObject({ restarts: before.restarts, status: 'running', pid: before.pid });
  const { rows } = await t.sql.query("select count(*)::int as n from activity_log where company_id = $1 and action = 'issue.created' and entity_id = any($2::text[])", [company.id, created.map((res) => res.body.id)]);
  expect(rows[0].n).toBe(BURST);
}

describe('a burst of writes larger than a plugin pool', () => {
  it('all succeed on a freshly started worker, which is not restarted', async () => {
    await burst('Cold');
  });

  it('and again on the warm worker', async () => {
    await burst('Warm');
  });
});

/**
 * The same wait by another road: a call holding its transaction (and a row lock) calls a service
 * of its own plugin, whose call needs a connection of the same pool and that row. The outer call
 * waits for the inner one, which would wait on the outer one until the deadline killed both.
 */
describe('a call that re-enters its own plugin through a service call', () => {
  const counter = async () => (await t.sql.query('select n from plugin_attreentry.counter where id = 1')).rows[0].n as number;
  const outer = (lockFirst: boolean) => t.api.post(`/api/plugins/attack-reentry/companies/${company.id}/outer`, { lockFirst });

  beforeAll(async () => { await installAndEnable(t, 'attack-reentry'); });

  it('is refused at once while the outer call holds its transaction: the inner call writes nothing', async () => {
    const before = { worker: await workerOf('attack-reentry'), n: await counter() };
    const answers = await Promise.all(Array.from({ length: BURST }, () => outer(true)));
    expect(answers.map((res) => res.status)).toEqual(answers.map(() => 200));
    expect(answers.map((res) => res.body.refused)).toEqual(answers.map(() => ({ code: 'reentrant_transaction', status: 409 })));
    // Each outer call bumped the counter once; no inner call did.
    expect(await counter()).toBe(before.n + BURST);
    expect(await workerOf('attack-reentry')).toMatchObject({ restarts: before.worker.restarts, pid: before.worker.pid, status: 'running' });
  });

  it('runs when the outer call holds no transaction yet', async () => {
    const before = await counter();
    const res = await outer(false);
    expect([res.status, res.body]).toEqual([200, { inner: { bumped: true } }]);
    expect(await counter()).toBe(before + 1);
  });
});
