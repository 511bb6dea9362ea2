import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createCompany } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startPeerKernel, startTestKernel, type PeerKernel, type TestKernel } from '../../support/harness.ts';
import { agentScripts, processAgent, waitFor } from './helpers.ts';

/** Heartbeat timers on the database-leased job queue, with two Keel processes on one database. */
let t: TestKernel;
let peer: PeerKernel;
let scripts: string;

beforeAll(async () => {
  scripts = await agentScripts();
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  peer = await startPeerKernel(t, {}, { firstPartyDir: FIRST_PARTY_PLUGINS });
});
afterAll(async () => {
  await peer?.stop();
  await t?.stop();
});

const timerWakeups = async (agentId: string) =>
  (await t.sql.query(`select idempotency_key, status, run_id from plugin_runtime.wakeups where agent_id = $1 and source = 'timer' order by created_at`, [agentId])).rows;

it('fires each interval slot once across two processes, each wakeup running once; disabling the heartbeat stops it', async () => {
  const company = await createCompany(t.api, { name: 'Heartbeat Co' });
  const agent = await processAgent(t.api, company.id, join(scripts, 'quick.cjs'), {}, { runtimeConfig: { heartbeat: { enabled: true, intervalSec: 1 } } });
  const wakeups = await waitFor(async () => {
    const rows = await timerWakeups(agent.id);
    return rows.length >= 4 ? rows : undefined;
  }, 'four timer wakeups', 60_000);
  // One wakeup per slot, in slot order (none fired twice). A slot whose time passed while the one
  // before it was still being fired (a loaded machine) is skipped, never fired late: the timer
  // goes on from the next slot to come, so a gap of more than one slot means a late fire.
  const slots = wakeups.map((row: any) => Number(/^timer-1-(\d+)$/.exec(row.idempotency_key)![1]));
  expect(new Set(slots).size).toBe(slots.length);
  expect(slots).toEqual([...slots].sort((a, b) => a - b));
  // Each queued wakeup has its own run, which ran once (one execution per run).
  const runIds = wakeups.filter((row: any) => row.status !== 'coalesced').map((row: any) => row.run_id);
  expect(new Set(runIds).size).toBe(runIds.length);
  const { rows: executions } = await t.sql.query('select run_id, count(*)::int as n from executions where agent_id = $1 group by run_id', [agent.id]);
  expect(executions.every((row: any) => row.n === 1)).toBe(true);
  // The slot's job started each run in the transaction that queued it: a committed timer run has
  // its execution already, and no start-runs job was ever queued for the agent.
  expect(runIds.every((runId: string) => executions.some((row: any) => row.run_id === runId))).toBe(true);
  const { rows: startJobs } = await t.sql.query(
    `select count(*)::int as n from keel_jobs.job where name = 'plugin/runtime/enqueued' and data->>'jobKey' = 'start-runs' and data->'payload'->>'agentId' = $1`, [agent.id]);
  expect(startJobs[0].n).toBe(0);

  const off = await peer.api.patch(`/api/agents/${agent.id}`, { runtimeConfig: { heartbeat: { enabled: false } } });
  expect(off.status, off.text).toBe(200);
  await waitFor(async () => (await t.sql.query('select 1 from plugin_runtime.heartbeat_timers where agent_id = $1', [agent.id])).rows.length === 0, 'the timer to be removed');
  const settled = (await timerWakeups(agent.id)).length;
  // A slot already claimed may still be firing; after it, nothing more.
  await new Promise((resolve) => setTimeout(resolve, 2500));
  expect((await timerWakeups(agent.id)).length).toBeLessThanOrEqual(settled + 1);
});

it("spreads agents' heartbeats over the interval: each agent's slots fall at a fixed offset taken from its id", async () => {
  const company = await createCompany(t.api, { name: 'Heartbeat Phase Co' });
  const hour = 3600;
  const before = Date.now();
  const agents = await Promise.all(Array.from({ length: 4 }, () =>
    processAgent(t.api, company.id, join(scripts, 'quick.cjs'), {}, { runtimeConfig: { heartbeat: { enabled: true, intervalSec: hour } } })));
  const dueOf = async (agentId: string) => waitFor(async () => {
    const { rows } = await t.sql.query(`select start_after from keel_jobs.job where name = 'plugin/runtime/enqueued' and data->>'jobKey' = 'heartbeat' and data->'payload'->>'agentId' = $1`, [agentId]);
    return rows[0] ? new Date(rows[0].start_after).getTime() : undefined;
  }, `the first heartbeat slot of ${agentId}`);
  const offsets: number[] = [];
  for (const agent of agents) {
    const due = await dueOf(agent.id);
    // The next slot to come, within one interval; at the offset docs/api/runtime.md names (the id's first 12 hex digits modulo the interval in ms).
    expect(due).toBeGreaterThan(before);
    expect(due).toBeLessThanOrEqual(Date.now() + hour * 1000);
    const offset = Number.parseInt(agent.id.replace(/-/g, '').slice(0, 12), 16) % (hour * 1000);
    expect(due % (hour * 1000)).toBe(offset);
    offsets.push(offset);
  }
  // Random ids give different offsets: the agents do not all wake at the same moment.
  expect(new Set(offsets).size).toBe(agents.length);
});

it("removes a paused agent's timer, so no job fires for it while it rests, and its resume arms it again from the next slot", async () => {
  const company = await createCompany(t.api, { name: 'Heartbeat Rest Co' });
  const hour = 3600;
  const agent = await processAgent(t.api, company.id, join(scripts, 'quick.cjs'), {}, { runtimeConfig: { heartbeat: { enabled: true, intervalSec: hour } } });
  const timer = async () => (await t.sql.query('select next_slot from plugin_runtime.heartbeat_timers where agent_id = $1', [agent.id])).rows[0];
  const armed = await waitFor(timer, 'the timer to be armed');

  const paused = await t.api.post(`/api/agents/${agent.id}/pause`, {});
  expect(paused.status, paused.text).toBe(200);
  await waitFor(async () => ((await timer()) === undefined ? true : undefined), 'the paused agent\'s timer to be removed');

  const resumed = await peer.api.post(`/api/agents/${agent.id}/resume`, {});
  expect(resumed.status, resumed.text).toBe(200);
  const again = await waitFor(timer, 'the resumed agent\'s timer to be armed again');
  expect(Number(again.next_slot)).toBeGreaterThanOrEqual(Number(armed.next_slot));
});

it("puts a timer in step at its next slot when its heartbeat changed unheard, and the minute's sweep arms a chain that is gone", async () => {
  const company = await createCompany(t.api, { name: 'Heartbeat Unheard Co' });
  const agent = await processAgent(t.api, company.id, join(scripts, 'quick.cjs'), {}, { runtimeConfig: { heartbeat: { enabled: true, intervalSec: 1 } } });
  const timer = async () => (await t.sql.query('select interval_sec from plugin_runtime.heartbeat_timers where agent_id = $1', [agent.id])).rows[0];
  await waitFor(async () => ((await timerWakeups(agent.id)).length > 0 ? true : undefined), 'a timer wakeup');
  // The heartbeat turned off behind the runtime's back: no agent.updated event reaches it.
  await t.sql.query(`update agents set runtime_config = '{"heartbeat":{"enabled":false,"intervalSec":1}}'::jsonb where id = $1`, [agent.id]);
  // The next slot reads the configuration, removes the timer and wakes nobody (the sweep would take up to a minute).
  await waitFor(async () => ((await timer()) === undefined ? true : undefined), 'the timer to be removed at its next slot', 10_000);
  const settled = (await timerWakeups(agent.id)).length;
  await new Promise((resolve) => setTimeout(resolve, 2500));
  expect((await timerWakeups(agent.id)).length).toBeLessThanOrEqual(settled + 1);

  // Turned on again unheard: no chain exists, so no slot can notice; the sweep (triggered here, each minute on its own) arms it.
  await t.sql.query(`update agents set runtime_config = '{"heartbeat":{"enabled":true,"intervalSec":2}}'::jsonb where id = $1`, [agent.id]);
  const swept = await t.api.post('/api/plugins/runtime/jobs/heartbeat-sweep/trigger', {});
  expect(swept.status, swept.text).toBe(202);
  expect(await waitFor(timer, 'the sweep to arm the timer')).toEqual({ interval_sec: 2 });
  const before = (await timerWakeups(agent.id)).length;
  await waitFor(async () => ((await timerWakeups(agent.id)).length > before ? true : undefined), 'a wakeup of the re-armed timer', 15_000);
});
