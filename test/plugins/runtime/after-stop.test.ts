import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventsSettled } from '../../support/events.ts';
import type { TestKernel } from '../../support/harness.ts';
import { processAgent, runWhen, startRuntimeWorld, waitFor, wakeOk } from './helpers.ts';

/**
 * A cancelled run is metered no further (issue 25, point 4): its process, which goes on reporting
 * usage through its grace period after SIGTERM, gets no cost event for what it reports after the
 * stop decision; usage already recorded before the decision but handled after it is metered,
 * marked in_flight_at_stop.
 */
let t: TestKernel;
let company: any;
let scripts: string;

beforeAll(async () => {
  ({ t, company, scripts } = await startRuntimeWorld('After Stop Co'));
});
afterAll(async () => {
  await t?.stop();
});

interface LogRecord { seq: number; at: string; stream: string; line: string }

it('usage a cancelled run reports in its grace period is not metered; usage in flight at the stop is metered and marked', async () => {
  const agent = await processAgent(t.api, company.id, join(scripts, 'grace-spender.cjs'), { graceSec: 2 });
  const { run: queued } = await wakeOk(t.api, agent.id);
  await runWhen(t, queued.id, (run) => run.status === 'running');
  await waitFor(async () => Number((await t.sql.query('select count(*)::int as n from plugin_costs.cost_events where heartbeat_run_id = $1', [queued.id])).rows[0].n) >= 3, 'metered usage');
  const cancelled = await t.api.post(`/api/heartbeat-runs/${queued.id}/cancel`, {});
  expect(cancelled.status, cancelled.text).toBe(200);
  // The process's end (SIGKILL after the grace period) is recorded after every output before it.
  await runWhen(t, queued.id, (ended) => ended.status === 'cancelled' && ended.signal !== null);
  // The run's accounting once every delivery of its output has been handled: under load the
  // last batch's count can land after the end is recorded.
  await eventsSettled(t);
  const run = (await t.api.get(`/api/heartbeat-runs/${queued.id}`)).body;
  const stoppedAt = new Date(run.finishedAt).getTime();

  const log = await t.api.get(`/api/heartbeat-runs/${run.id}/log`);
  expect(log.status, log.text).toBe(200);
  const usageLines = (log.body.content as string).split('\n').filter(Boolean).map((text) => JSON.parse(text) as LogRecord)
    .filter((record) => record.stream === 'stdout' && record.line.includes('service.usage'));
  const before = usageLines.filter((record) => new Date(record.at).getTime() <= stoppedAt);
  const during = usageLines.filter((record) => new Date(record.at).getTime() > stoppedAt);
  // The attack happened: the process went on reporting after the stop decision.
  expect(during.length).toBeGreaterThan(0);

  const { rows: events } = await t.sql.query('select billing_code, occurred_at, created_at from plugin_costs.cost_events where heartbeat_run_id = $1', [run.id]);
  // Nothing read after the decision was metered: at most one cost event per report read before it.
  expect(events.length).toBeLessThanOrEqual(before.length);
  for (const event of events) {
    const handledAfter = new Date(event.created_at).getTime() > stoppedAt;
    if (handledAfter) {
      expect(event.billing_code).toBe('in_flight_at_stop');
      expect(new Date(event.occurred_at).getTime()).toBeLessThanOrEqual(stoppedAt);
    } else {
      expect(event.billing_code).toBeNull();
    }
  }
  // Every report is accounted for on the run: metered, or counted as reported after the stop.
  expect(run.usageJson.unmeteredAfterStop).toBeGreaterThanOrEqual(during.length > 0 ? 1 : 0);
  expect(run.usageJson.reports + run.usageJson.unmeteredAfterStop + run.usageJson.rejectedReports).toBe(usageLines.length);
  // Usage in flight at the stop (commonly a batch or two: the 50 ms reports outpace their handling) is counted as such.
  expect(run.usageJson.inFlightAtStop ?? 0).toBe(events.filter((event: any) => event.billing_code === 'in_flight_at_stop').length);
  expect(run.usageJson.reports).toBe(events.length);
  expect(run.usageJson.costCents).toBe(3 * events.length);
});
