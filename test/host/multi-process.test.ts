import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningKernel } from '../../kernel/kernel.ts';
import { FIRST_PARTY_KEYS, FIRST_PARTY_PLUGINS, startPeerKernel, startTestKernel, type Api, type PeerKernel, type TestKernel } from '../support/harness.ts';
import { workerPids } from '../support/server-process.ts';

const ECHO = fileURLToPath(new URL('./fixtures/echo', import.meta.url));
let first: TestKernel;
let peer: PeerKernel;
let second: RunningKernel;
let secondApi: Api;

beforeAll(async () => {
  first = await startTestKernel();
  // The second process bootstraps the first-party plugins; the first follows its announcements.
  peer = await startPeerKernel(first, {}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  second = peer.kernel;
  secondApi = peer.api;
});
afterAll(async () => {
  await peer?.stop();
  await first?.stop();
});

async function eventually<T>(probe: () => Promise<T>, accept: (value: T) => boolean): Promise<T> {
  let value = await probe();
  for (let i = 0; i < 50 && !accept(value); i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    value = await probe();
  }
  return value;
}

describe('two kernel processes on one database', () => {
  it('start, stop and reconfigure plugins in step', async () => {
    expect((await first.api.post('/api/plugins/install', { localPath: ECHO })).status).toBe(201);
    expect((await first.api.post('/api/plugins/echo/enable', {})).status).toBe(200);
    const served = await eventually(() => secondApi.post('/api/plugins/echo/echo', { from: 'second' }), (r) => r.status === 200);
    expect(served.body).toEqual({ body: { from: 'second' }, query: {} });
    expect((await first.api.post('/api/plugins/echo/disable', {})).status).toBe(200);
    const gone = await eventually(() => secondApi.post('/api/plugins/echo/echo', {}), (r) => r.status === 404);
    expect(gone.status).toBe(404);
  }, 30_000);

  it('run one worker per enabled plugin each, the process that bootstrapped the first-party plugins included', async () => {
    // `second` installed and enabled the first-party plugins at its start; `first` followed the announcement.
    const firstHost = first.kernel.host;
    const secondHost = second.host;
    // (echo, disabled by the test before, may still be stopping.)
    for (const host of [firstHost, secondHost]) {
      expect(await eventually(async () => [...host.plugins.keys()].sort(), (keys) => keys.join() === FIRST_PARTY_KEYS.join())).toEqual(FIRST_PARTY_KEYS);
    }
    // Each kernel runs its first-party plugins once, in shared worker processes of its own (one per core).
    const pidsOf = (host: typeof firstHost) => [...new Set([...host.plugins.values()].map((p) => p.process?.health.pid))];
    const [firstPids, secondPids] = [pidsOf(firstHost), pidsOf(secondHost)];
    expect([firstPids.length, secondPids.length]).toEqual([Math.min(availableParallelism(), FIRST_PARTY_KEYS.length), Math.min(availableParallelism(), FIRST_PARTY_KEYS.length)]);
    expect(firstPids.filter((pid) => secondPids.includes(pid))).toEqual([]);
    // Both kernels run in this process: its worker children are exactly those, and each kernel's idle standby worker.
    const expected = [...firstPids, ...secondPids].sort();
    const serving = async () => {
      const standbys = [firstHost.workerProcesses.standbyPid, secondHost.workerProcesses.standbyPid];
      return (await workerPids(process.pid)).filter((pid) => !standbys.includes(pid));
    };
    expect((await eventually(serving, (pids) => pids.length === expected.length)).sort()).toEqual(expected);
  });

  it('retry a change made elsewhere until it is served, when bringing it in line fails at first', async () => {
    const secondHost = second.host;
    // echo is installed and disabled (the first test). What two processes provisioning at once used to meet, without a lock: a transient catalog conflict.
    const prepare = secondHost.databases.prepare.bind(secondHost.databases);
    let failures = 2;
    secondHost.databases.prepare = async (...args) => {
      if (failures-- > 0) throw new Error('tuple concurrently updated');
      return prepare(...args);
    };
    try {
      expect((await first.api.post('/api/plugins/echo/enable', {})).status).toBe(200);
      const served = await eventually(() => secondApi.post('/api/plugins/echo/echo', { again: true }), (r) => r.status === 200);
      expect(served.status).toBe(200);
      expect(failures).toBeLessThan(0);
    } finally {
      secondHost.databases.prepare = prepare;
    }
  }, 30_000);

  it('catch up on changes announced while their listening connection was lost', async () => {
    // A change stored without its notification (as if sent while the connections were down),
    // then the listening connections are cut: the kernels must listen again and catch up.
    await first.sql.query("update plugins set status = 'disabled', updated_at = now() where key = 'echo'");
    // A process listens on one connection (plugin changes, credential invalidations, execution
    // cancels, the job engine's queues), which the two kernels of this test process share.
    const { rows } = await first.sql.query("select pg_terminate_backend(pid) as cut from pg_stat_activity where datname = current_database() and application_name = 'keel-listen'");
    expect(rows).toHaveLength(1);
    const gone = await eventually(() => secondApi.post('/api/plugins/echo/echo', {}), (r) => r.status === 404);
    expect(gone.status).toBe(404);
    expect(await eventually(async () => first.kernel.host.plugins.has('echo'), (has) => !has)).toBe(false);
    // And the listeners are back: a change announced now is followed again.
    expect((await first.api.post('/api/plugins/echo/enable', {})).status).toBe(200);
    expect((await eventually(() => secondApi.post('/api/plugins/echo/echo', {}), (r) => r.status === 200)).status).toBe(200);
    // Credential caching is back on in both, after the listener reconnected.
    expect((await eventually(() => secondApi.get('/api/health'), (r) => r.body.components?.notifications?.status === 'up')).status).toBe(200);
  }, 30_000);

  it('keep one activity chain without forks when both write', async () => {
    const company = (await first.api.post('/api/companies', { name: 'Shared' })).body;
    await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? first.api : secondApi).post(`/api/companies/${company.id}/activity`, { actorId: 'x', action: 'test.concurrent', entityType: 'thing', entityId: String(i) })));
    const { rows } = await first.sql.query('select seq from activity_log where company_id = $1 order by seq', [company.id]);
    expect(rows.map((r: any) => Number(r.seq))).toEqual(Array.from({ length: rows.length }, (_, i) => i + 1));
  });
});
