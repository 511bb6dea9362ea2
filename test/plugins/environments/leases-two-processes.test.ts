import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startPeerKernel, type PeerKernel, type TestKernel } from '../../support/harness.ts';
import { createEnvironment, startEnvironmentsWorld } from './helpers.ts';

/**
 * Two Keel processes on one database hand out leases of the same environment at once: the
 * environment row's lock and the unique index of active reuse keys keep any lease from being
 * handed out twice, whichever process serves the request.
 */
let world: Awaited<ReturnType<typeof startEnvironmentsWorld>>;
let t: TestKernel;
let peer: PeerKernel;
const ROUNDS = 5;
const PER_PROCESS = 4;

beforeAll(async () => {
  world = await startEnvironmentsWorld();
  t = world.t;
  peer = await startPeerKernel(t, {}, { firstPartyDir: FIRST_PARTY_PLUGINS });
});
afterAll(async () => {
  await peer?.stop();
  await world?.stop();
});

const acquireFrom = (api: typeof t.api, environmentId: string, body: Record<string, unknown>) => api.post(`/api/environments/${environmentId}/leases`, body);

describe('leases across two processes', () => {
  it('gives a reusable key to exactly one caller when both processes ask at once', async () => {
    const env = await createEnvironment(t.api, world.company.id, { name: 'Shared', driver: 'local', config: { root: world.mountA } });
    for (let round = 0; round < ROUNDS; round++) {
      const body = { policy: 'reusable', reuseKey: `issue-${round}` };
      const answers = await Promise.all([
        ...Array.from({ length: PER_PROCESS }, () => acquireFrom(t.api, env.id, body)),
        ...Array.from({ length: PER_PROCESS }, () => acquireFrom(peer.api, env.id, body)),
      ]);
      const statuses = answers.map((res) => res.status).sort();
      expect(statuses, JSON.stringify(answers.map((res) => res.body))).toEqual([201, ...Array(2 * PER_PROCESS - 1).fill(409)]);
      for (const refused of answers.filter((res) => res.status === 409)) expect(refused.body.code).toBe('lease_in_use');
    }
    const { rows } = await t.sql.query("select reuse_key, count(*)::int as n from plugin_environments.environment_leases where environment_id = $1 and status = 'active' group by reuse_key", [env.id]);
    expect(rows.every((row: any) => row.n === 1)).toBe(true);
    expect(rows).toHaveLength(ROUNDS);
  });

  it('never hands out more leases than the environment allows, counted across both processes', async () => {
    const env = await createEnvironment(t.api, world.company.id, { name: 'Scarce', driver: 'local', config: { root: world.mountA }, maxConcurrentLeases: 3 });
    const answers = await Promise.all([
      ...Array.from({ length: 5 }, () => acquireFrom(t.api, env.id, {})),
      ...Array.from({ length: 5 }, () => acquireFrom(peer.api, env.id, {})),
    ]);
    const granted = answers.filter((res) => res.status === 201);
    expect(granted).toHaveLength(3);
    expect(new Set(granted.map((res) => res.body.path)).size).toBe(3);
    for (const refused of answers.filter((res) => res.status !== 201)) expect(refused.body).toMatchObject({ code: 'lease_limit_reached' });
    // A release in one process frees a lease for the other.
    await peer.api.post(`/api/environment-leases/${granted[0]!.body.id}/release`, {});
    expect((await acquireFrom(t.api, env.id, {})).status).toBe(201);
  });
});
