import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startPeerKernel, type PeerKernel, type TestKernel } from '../../support/harness.ts';
import { startRuntimeWorld, waitFor } from './helpers.ts';

/**
 * A routine fires through the runtime's leased jobs: with two Keel processes serving the runtime,
 * an active routine wakes its agent once per slot. The routine row is written here as a plugin's
 * managed-routine service would write it (the wiki's tests cover the service and the routes).
 */
let t: TestKernel;
let peer: PeerKernel;
let company: any;

beforeAll(async () => {
  ({ t, company } = await startRuntimeWorld('Routines'));
  peer = await startPeerKernel(t, {}, { firstPartyDir: FIRST_PARTY_PLUGINS });
}, 120_000);
afterAll(async () => { await peer?.stop(); await t?.stop(); });

describe('an active routine', () => {
  it('wakes its agent once per slot across two processes, and a paused one claims nothing', async () => {
    const agent = await createAgent(t.api, company.id, { name: 'Tidy' });
    const { rows } = await t.sql.query(
      `insert into plugin_runtime.routines (company_id, key, managed_by_plugin, agent_id, title, interval_sec)
       values ($1, 'tidy', 'probe', $2, 'Tidy up', 60) returning id`, [company.id, agent.id]);
    const routineId = rows[0].id;
    const resumed = await peer.api.patch(`/api/routines/${routineId}`, { status: 'active' });
    expect(resumed.status, resumed.text).toBe(200);
    // Its slots fall at the routine's phase within the minute (docs/api/runtime.md), not on the minute for every routine.
    const { rows: queued } = await t.sql.query(
      `select start_after from keel_jobs.job where name = 'plugin/runtime/enqueued' and data->>'jobKey' = 'routine' and data->'payload'->>'routineId' = $1`, [routineId]);
    expect(queued).toHaveLength(1);
    expect(new Date(queued[0].start_after).getTime() % 60_000).toBe(Number.parseInt(String(routineId).replace(/-/g, '').slice(0, 12), 16) % 60_000);
    const fired = await waitFor(async () => {
      const routine = (await t.sql.query('select last_slot, next_slot from plugin_runtime.routines where id = $1', [routineId])).rows[0];
      return Number(routine.last_slot) > 0 ? routine : undefined;
    }, 'the routine\'s first slot', 90_000);
    const slot = Number(fired.last_slot);
    expect(Number(fired.next_slot)).toBeGreaterThan(slot);
    const wakeups = await t.sql.query(
      "select source, reason, idempotency_key from plugin_runtime.wakeups where agent_id = $1 and idempotency_key like 'routine-%'", [agent.id]);
    expect(wakeups.rows).toEqual([{ source: 'timer', reason: 'routine:tidy', idempotency_key: `routine-${routineId}-${slot}` }]);
    // The slot's job started the run it queued itself: no start-runs job for the agent.
    const { rows: startJobs } = await t.sql.query(
      `select count(*)::int as n from keel_jobs.job where name = 'plugin/runtime/enqueued' and data->>'jobKey' = 'start-runs' and data->'payload'->>'agentId' = $1`, [agent.id]);
    expect(startJobs[0].n).toBe(0);
    const paused = await t.api.patch(`/api/routines/${routineId}`, { status: 'paused' });
    expect(paused.body.status).toBe('paused');
  }, 150_000);
});
