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
    const fired = await waitFor(async () => {
      const routine = (await t.sql.query('select last_slot, next_slot from plugin_runtime.routines where id = $1', [routineId])).rows[0];
      return Number(routine.last_slot) > 0 ? routine : undefined;
    }, 'the routine\'s first slot', 90_000);
    const slot = Number(fired.last_slot);
    expect(Number(fired.next_slot)).toBeGreaterThan(slot);
    const wakeups = await t.sql.query(
      "select source, reason, idempotency_key from plugin_runtime.wakeups where agent_id = $1 and idempotency_key like 'routine-%'", [agent.id]);
    expect(wakeups.rows).toEqual([{ source: 'timer', reason: 'routine:tidy', idempotency_key: `routine-${routineId}-${slot}` }]);
    const paused = await t.api.patch(`/api/routines/${routineId}`, { status: 'paused' });
    expect(paused.body.status).toBe('paused');
  }, 150_000);
});
