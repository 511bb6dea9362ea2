import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TestKernel } from '../../support/harness.ts';
import type { RunServer } from '../../fixtures/run-server.ts';
import { runWhen, wakeOk } from '../runtime/helpers.ts';
import { API_KEY, logOf, remoteAgent, startRemoteWorld } from './helpers.ts';

let t: TestKernel;
let company: any;
let server: RunServer;

beforeAll(async () => {
  ({ t, company, server } = await startRemoteWorld('Remote Co'));
});
afterAll(async () => {
  await t?.stop();
  await server?.stop();
});

it('creates the run on the run server, streams its text to the run log and its usage as cost events, and succeeds with its result', async () => {
  server.reset({}, { steps: ['Hello', ' remote', ' world'], costUsdPerStep: 0.02 });
  const agent = await remoteAgent(t.api, company.id, server);
  const { run: queued } = await wakeOk(t.api, agent.id, { reason: 'remote work' });
  const run = await runWhen(t, queued.id);
  expect(run).toMatchObject({ status: 'succeeded', resultJson: { text: 'Hello remote world' }, usageJson: { costCents: 6, inputTokens: 30, outputTokens: 15 } });
  const remote = server.runFor(run.id)!;
  expect(remote.headers['idempotency-key']).toBe(run.id);
  expect(remote.headers.authorization).toBe(`Bearer ${API_KEY}`);
  expect(remote.headers['x-service-api-key']).toMatch(/.{20,}/);
  expect(JSON.stringify(remote.body)).not.toContain(String(remote.headers['x-service-api-key']));
  expect(remote.body.metadata).toEqual({ companyId: company.id, agentId: agent.id, runId: run.id, issueId: null, taskKey: expect.any(String) });
  const log = await logOf(t, run.id);
  expect(log).toContain('Hello');
  expect(log).toContain(' world');
  const { rows } = await t.sql.query('select cost_cents from plugin_costs.cost_events where heartbeat_run_id = $1 order by occurred_at, cost_cents', [run.id]);
  expect(rows.map((row: any) => Number(row.cost_cents)).reduce((a: number, b: number) => a + b, 0)).toBe(6);
  expect(rows.length).toBeGreaterThanOrEqual(1);
});
