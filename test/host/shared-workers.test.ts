import { mkdtempSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../kernel/config/load.ts';
import { sharedWorkerCount } from '../../kernel/host/worker-sharing.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable, pluginVariant } from '../support/plugins.ts';
import { eventually, workerPids } from '../support/server-process.ts';

/**
 * The shared plugins are spread over several shared worker processes (one per core by default,
 * `plugins.sharedWorker.processes`), each plugin in one of them, so that plugin load keeps
 * every core busy rather than one. Crash isolation is the process's: a shared process that
 * dies restarts the plugins in it and none in the other.
 */
const ECHO = fileURLToPath(new URL('./fixtures/echo', import.meta.url));
const SHARED = ['echo', 'echo-two', 'echo-three'];
let t: TestKernel;
/** The warm standby as it was when the second shared plugin was enabled. */
let standbyBeforeSecond: number | null = null;

type Worker = { pid: number | null; restarts: number; status: string; standbyPid: number | null };
const variant = (key: string) => pluginVariant(ECHO, (m) => { m.key = key; m.database.namespace = key.replace(/-/g, '_'); });
const worker = async (key: string) => (await t.api.get(`/api/plugins/${key}/health`)).body.worker as Worker;
const serving = (key: string, accept: (w: Worker) => boolean = () => true) =>
  eventually(() => worker(key), (w) => w.status === 'running' && accept(w), 30_000);

beforeAll(async () => {
  t = await startTestKernel({ plugins: { sharedWorker: { processes: 2, plugins: SHARED } } });
  // Enabled in this order, they alternate: echo and echo-three in one process, echo-two in the other.
  // Its CPU slice (min of callTimeoutMs and 5 s) is raised so that a loaded machine's slow
  // collections near the memory limit end in the out-of-memory answer a test here is about.
  await installAndEnable(t, await pluginVariant(ECHO, (m) => { m.limits.callTimeoutMs = 10_000; }));
  standbyBeforeSecond = (await eventually(() => worker('echo'), (w) => w.standbyPid !== null, 20_000)).standbyPid;
  for (const key of SHARED.slice(1)) await installAndEnable(t, await variant(key));
  await installAndEnable(t, await variant('echo-own'));
}, 90_000);
afterAll(async () => { await t?.stop(); });

describe('shared worker processes', () => {
  it('are one per core unless the operator says how many', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'keel-shared-workers-'));
    expect(sharedWorkerCount(loadConfig({ env: {}, overrides: { dataDir } }))).toBe(availableParallelism());
    expect(sharedWorkerCount(loadConfig({ env: { KEEL_PLUGIN_SHARED_WORKERS: '3' }, overrides: { dataDir } }))).toBe(3);
    expect(loadConfig({ env: { KEEL_PLUGIN_SHARED_WORKERS: '3', KEEL_PLUGIN_SHARED_WORKER: 'off' }, overrides: { dataDir } }).plugins?.sharedWorker).toEqual({ firstParty: false, processes: 3 });
    for (const bad of ['0', 'two', '1.5', '65']) expect(() => loadConfig({ env: { KEEL_PLUGIN_SHARED_WORKERS: bad }, overrides: { dataDir } })).toThrow();
  });

  it('hold each shared plugin in one of them, spread over all; any other plugin keeps a process of its own', async () => {
    const [echo, two, three, own] = await Promise.all([...SHARED, 'echo-own'].map((key) => serving(key)));
    expect(echo!.pid).not.toBe(two!.pid);
    expect(three!.pid).toBe(echo!.pid);
    // The second shared process was the warm standby, started beside the first: not a second cold start.
    expect(two!.pid).toBe(standbyBeforeSecond);
    expect([echo!.pid, two!.pid]).not.toContain(own!.pid);
    // Besides them, the one idle standby process.
    const spare = (await eventually(() => worker('echo'), (w) => w.standbyPid !== null, 20_000)).standbyPid!;
    expect((await workerPids(process.pid)).sort()).toEqual([echo!.pid, two!.pid, own!.pid, spare].sort());
    for (const key of SHARED) expect((await t.api.post(`/api/plugins/${key}/echo`, { key })).body).toEqual({ body: { key }, query: {} });
  });

  it('restart the plugins of a shared process that dies, and none of the other process', async () => {
    const [echo, two, three] = await Promise.all(SHARED.map((key) => serving(key)));
    process.kill(two!.pid!, 'SIGKILL');
    const after = await serving('echo-two', (w) => w.restarts > two!.restarts);
    expect(after.pid).not.toBe(two!.pid);
    expect(await worker('echo')).toMatchObject({ pid: echo!.pid, restarts: echo!.restarts, status: 'running' });
    expect(await worker('echo-three')).toMatchObject({ pid: three!.pid, restarts: three!.restarts, status: 'running' });
    for (const key of SHARED) expect((await t.api.post(`/api/plugins/${key}/echo`, { again: key })).status).toBe(200);
  });

  it('keep a plugin in its process across a restart of its own, the plugin beside it untouched', async () => {
    const [echo, three] = await Promise.all(['echo', 'echo-three'].map((key) => serving(key)));
    // Out of memory; on a loaded machine the collections near the limit may overrun the CPU
    // slice first (504): either way the plugin alone is unloaded and loaded again.
    const oom = await t.api.post('/api/plugins/echo/oom', {});
    expect([503, 504], oom.text).toContain(oom.status);
    expect(['plugin_out_of_memory', 'plugin_timeout']).toContain(oom.body.code);
    const after = await serving('echo', (w) => w.restarts > echo!.restarts);
    expect(after.pid).toBe(echo!.pid);
    expect(await worker('echo-three')).toMatchObject({ pid: three!.pid, restarts: three!.restarts, status: 'running' });
  });

  it('place a plugin enabled again in the process holding the fewest plugins', async () => {
    const [echo, two, three] = await Promise.all(SHARED.map((key) => serving(key)));
    // Its process ends with it, its last plugin; echo and echo-three go on in theirs.
    expect((await t.api.post('/api/plugins/echo-two/disable', {})).status).toBe(200);
    expect(await eventually(() => workerPids(process.pid), (pids) => !pids.includes(two!.pid!))).not.toContain(two!.pid);
    expect((await t.api.post('/api/plugins/echo-two/enable', {})).status).toBe(200);
    const back = await serving('echo-two');
    expect([echo!.pid, three!.pid, two!.pid]).not.toContain(back.pid);
    expect((await t.api.post('/api/plugins/echo-two/echo', { back: true })).status).toBe(200);
    expect(await worker('echo')).toMatchObject({ pid: echo!.pid, restarts: echo!.restarts });
  });
});
