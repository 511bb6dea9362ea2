import { afterAll, beforeAll, expect, it } from 'vitest';
import { createCompany } from '../../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../../support/harness.ts';
import { installAndEnable, waitFor } from './support.ts';

/** SANDBOX.md class 2, and the requirement: the kernel keeps answering during 1,000 plugin crashes in a row. */
let t: TestKernel;
let company: any;
const P = '/api/plugins/attack-crash';

beforeAll(async () => {
  t = await startTestKernel();
  company = await createCompany(t.api);
  await installAndEnable(t, 'attack-crash');
});
afterAll(async () => { await t?.stop(); });

it('keeps the kernel answering during 1,000 plugin crashes in a row, hard crashes of the worker among them', async () => {
  const kernelStatuses: number[] = [];
  const probeFailures = new Set<string>();
  const degradedNames = new Set<string>();
  let done = false;
  const poll = (async () => {
    while (!done) {
      const [health, live, ready, read] = await Promise.all([
        t.api.get('/api/health'), t.api.get('/api/health/live'), t.api.get('/api/health/ready'), t.api.get(`/api/companies/${company.id}`),
      ]);
      kernelStatuses.push(read.status);
      // A load balancer and a supervisor keep the instance every single time; health for people
      // may say the crashing plugin's worker is down while it restarts, and nothing else.
      for (const [name, res] of [['health', health], ['live', live], ['ready', ready]] as const) {
        if (res.status !== 200) probeFailures.add(`${name}: ${res.status} ${res.text}`);
      }
      for (const name of health.body.down ?? []) degradedNames.add(name);
    }
  })();
  const codes: Record<string, number> = {};
  const count = (res: { status: number; text: string; body: any }) => {
    expect(res.status, res.text).toBeGreaterThanOrEqual(500);
    expect(res.status).toBeLessThan(600);
    codes[res.body.code] = (codes[res.body.code] ?? 0) + 1;
  };
  // Ten rounds: a call that blows the heap, which disposes the isolate and ends the worker
  // process (a hard crash), then 100 calls whose handler throws, 25 at a time, once the
  // supervisor has the worker back.
  for (let round = 0; round < 10; round++) {
    count(await t.api.post(`${P}/oom`, {}));
    const back = await waitFor(() => t.api.get(`${P}/ok`), (res) => res.status === 200, 20_000);
    expect(back.status).toBe(200);
    for (let batch = 0; batch < 4; batch++) {
      for (const res of await Promise.all(Array.from({ length: 25 }, () => t.api.post(`${P}/throw`, {})))) count(res);
    }
  }
  // Calls racing a dying worker: sent while the heap blows up, they meet a closing channel
  // (EPIPE in the kernel, which must not take the kernel down) or a restarting worker.
  const raced: Record<string, number> = {};
  for (let round = 0; round < 5; round++) {
    const calls = [t.api.post(`${P}/oom`, {}), ...Array.from({ length: 25 }, () => t.api.post(`${P}/throw`, {}))];
    for (const res of await Promise.all(calls)) {
      expect(res.status, res.text).toBeGreaterThanOrEqual(500);
      raced[res.body.code] = (raced[res.body.code] ?? 0) + 1;
    }
  }
  expect(Object.keys(raced).every((code) => ['plugin_error', 'plugin_out_of_memory', 'plugin_crashed', 'plugin_unavailable'].includes(code)), JSON.stringify(raced)).toBe(true);
  done = true;
  await poll;
  expect(codes).toEqual({ plugin_error: 1000, plugin_out_of_memory: 10 });
  // Every kernel answer during the storm was a success, and there were many.
  expect(kernelStatuses.length).toBeGreaterThan(100);
  expect(kernelStatuses.filter((status) => status !== 200)).toEqual([]);
  expect([...probeFailures]).toEqual([]);
  expect([...degradedNames].filter((name) => name !== 'plugins.attack-crash')).toEqual([]);
  // The plugin recovers: the supervisor restarted the worker after each hard crash.
  const ok = await waitFor(() => t.api.get(`${P}/ok`), (res) => res.status === 200);
  expect(ok.status).toBe(200);
  const health = await t.api.get(`${P}/health`);
  expect(health.body.worker.status).toBe('running');
  expect(health.body.worker.restarts).toBeGreaterThanOrEqual(10);
}, 90_000);

it('replaces a killed worker process by the warm standby, and the plugin answers again', async () => {
  const health = async () => (await t.api.get(`${P}/health`)).body.worker as { pid: number | null; status: string; restarts: number; standbyPid: number | null };
  const before = await waitFor(health, (worker) => worker.status === 'running' && worker.standbyPid !== null, 20_000);
  expect(before.standbyPid).not.toBe(before.pid);
  process.kill(before.pid!, 'SIGKILL');
  const after = await waitFor(health, (worker) => worker.status === 'running' && worker.restarts > before.restarts, 20_000);
  expect(after.pid).toBe(before.standbyPid);
  const ok = await t.api.get(`${P}/ok`);
  expect(ok.status, ok.text).toBe(200);
}, 60_000);
