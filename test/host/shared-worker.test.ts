import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_KEYS, FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable, pluginVariant } from '../support/plugins.ts';
import { eventually, workerPids } from '../support/server-process.ts';

/**
 * First-party plugins share one worker process, and the operator may put other plugins in it
 * (`plugins.sharedWorker.plugins`); every other plugin keeps a process of its own. Sharing a
 * process shares nothing else: each plugin has its own isolate, database role and deadlines,
 * and only a failure of the process itself touches the plugins beside it.
 */
const ECHO = fileURLToPath(new URL('./fixtures/echo', import.meta.url));
let t: TestKernel;
let company: { id: string };

const variant = (key: string) => pluginVariant(ECHO, (m) => { m.key = key; m.database.namespace = key.replace(/-/g, '_'); });
const worker = async (key: string) => (await t.api.get(`/api/plugins/${key}/health`)).body.worker as { pid: number | null; restarts: number; status: string; standbyPid: number | null };
/** The warm standby worker process, once the kernel has started it (one for the whole instance). */
const standby = async () => (await eventually(() => worker('echo-own'), (w) => w.standbyPid !== null, 20_000)).standbyPid!;
const logLines = async (key: string) => (await t.api.get(`/api/plugins/${key}/logs`)).body.logs as Array<{ message: string }>;
const serving = (key: string) => eventually(() => worker(key), (w) => w.status === 'running', 20_000);

beforeAll(async () => {
  // One shared process (the default is one per core: shared-workers.test.ts spreads plugins over two).
  t = await startTestKernel({ plugins: { sharedWorker: { processes: 1, plugins: ['echo', 'echo-two'] } } }, { firstPartyDir: FIRST_PARTY_PLUGINS });
  // Its CPU slice (min of callTimeoutMs and 5 s) is raised so that a loaded machine's slow
  // collections near the memory limit end in the out-of-memory answer this test is about.
  await installAndEnable(t, await pluginVariant(ECHO, (m) => { m.limits.callTimeoutMs = 10_000; }));
  await installAndEnable(t, await variant('echo-two'));
  await installAndEnable(t, await variant('echo-own'));
  company = (await t.api.post('/api/companies', { name: 'Shared worker' })).body;
}, 60_000);
afterAll(async () => { await t?.stop(); });

describe('the shared worker process', () => {
  it('holds the first-party plugins and those the operator names; any other plugin has a process of its own', async () => {
    const [costs, echo, two, own] = await Promise.all(['costs', 'echo', 'echo-two', 'echo-own'].map(worker));
    expect(costs!.pid).toBeTypeOf('number');
    expect([echo!.pid, two!.pid]).toEqual([costs!.pid, costs!.pid]);
    expect(own!.pid).not.toBe(costs!.pid);
    // Besides them, one idle standby process, which serves no plugin until a worker dies.
    const spare = await standby();
    expect([costs!.pid, own!.pid]).not.toContain(spare);
    expect((await workerPids(process.pid)).sort()).toEqual([costs!.pid, own!.pid, spare].sort());
    // Each is served, from its own isolate and its own tables.
    expect((await t.api.post('/api/plugins/echo/echo', { n: 1 })).body).toEqual({ body: { n: 1 }, query: {} });
    expect((await t.api.post('/api/plugins/echo-two/echo', { n: 2 })).body).toEqual({ body: { n: 2 }, query: {} });
    expect((await t.api.get(`/api/companies/${company.id}/costs/summary`)).status).toBe(200);
  });

  it('keeps each plugin to its own database role: a plugin beside another cannot read its tables', async () => {
    expect((await t.api.post(`/api/plugins/echo/companies/${company.id}/notes`, { text: 'mine' })).status).toBe(201);
    const peek = await t.api.post('/api/plugins/echo-two/sql', { sql: 'select text from plugin_echo.notes' });
    expect(peek.status).toBeGreaterThanOrEqual(400);
    expect(peek.status).toBeLessThan(600);
    expect(JSON.stringify(peek.body)).not.toContain('mine');
  });

  it('replaces a dead shared process by the warm standby at once: a call made right after the crash is served', async () => {
    const before = await Promise.all(['costs', 'echo-two'].map(worker));
    const spare = await standby();
    process.kill(before[0]!.pid!, 'SIGKILL');
    // Once the kernel has seen the process end, the next call waits for the plugin's loading
    // into the standby (no backoff for a plugin that crashes now and then), never a 503.
    await eventually(() => worker('echo-two'), (w) => w.pid !== before[1]!.pid);
    const call = await t.api.post('/api/plugins/echo-two/echo', { right: 'after' });
    expect(call.status, call.text).toBe(200);
    const after = await serving('costs');
    expect(after.pid).toBe(spare);
    expect((await worker('echo-two')).pid).toBe(spare);
    expect((await logLines('echo-two')).map((line) => line.message)).toContain('worker exited (code null, SIGKILL); restarting');
    // The next standby is started in the background.
    expect(await standby()).not.toBe(spare);
  });

  it('restarts only the plugin that ran out of memory or overran its deadline; the process and the others go on', async () => {
    const before = await Promise.all(['costs', 'echo', 'echo-two'].map(worker));
    const oom = await t.api.post('/api/plugins/echo/oom', {});
    expect(oom.status, oom.text).toBe(503);
    expect(oom.body.code).toBe('plugin_out_of_memory');
    const afterOom = await eventually(() => worker('echo'), (w) => w.restarts > before[1]!.restarts && w.status === 'running', 20_000);
    const hang = await t.api.post('/api/plugins/echo-two/hang', {});
    expect(hang.status, hang.text).toBe(504);
    const afterHang = await eventually(() => worker('echo-two'), (w) => w.restarts > before[2]!.restarts && w.status === 'running', 20_000);
    // Same process throughout; costs never restarted.
    expect([afterOom.pid, afterHang.pid]).toEqual([before[0]!.pid, before[0]!.pid]);
    expect(await worker('costs')).toMatchObject({ pid: before[0]!.pid, restarts: before[0]!.restarts, status: 'running' });
    expect((await t.api.post('/api/plugins/echo/echo', { again: true })).status).toBe(200);
    expect((await t.api.post('/api/plugins/echo-two/echo', { again: true })).status).toBe(200);
  });

  it('restarts every plugin in it when the process dies, and none outside it', async () => {
    const before = await Promise.all(['costs', 'echo', 'echo-two', 'echo-own'].map(worker));
    process.kill(before[0]!.pid!, 'SIGKILL');
    const after = await Promise.all(['costs', 'echo', 'echo-two'].map((key, i) =>
      eventually(() => worker(key), (w) => w.restarts > before[i]!.restarts && w.status === 'running', 30_000)));
    expect(new Set(after.map((w) => w.pid)).size).toBe(1);
    expect(after[0]!.pid).not.toBe(before[0]!.pid);
    expect(await worker('echo-own')).toMatchObject({ pid: before[3]!.pid, restarts: before[3]!.restarts });
    expect((await t.api.get(`/api/companies/${company.id}/costs/summary`)).status).toBe(200);
    expect((await t.api.get(`/api/plugins/echo/companies/${company.id}/notes`)).body).toEqual([{ id: expect.anything(), text: 'mine' }]);
  });

  it('goes on serving the others when one plugin in it is disabled, and ends with the last one', async () => {
    const shared = (await serving('costs')).pid!;
    expect((await t.api.post('/api/plugins/echo/disable', {})).status).toBe(200);
    expect((await t.api.post('/api/plugins/echo-two/echo', {})).status).toBe(200);
    expect((await worker('echo-two')).pid).toBe(shared);
    expect((await t.api.post('/api/plugins/echo-two/disable', {})).status).toBe(200);
    for (const key of FIRST_PARTY_KEYS) expect((await t.api.post(`/api/plugins/${key}/disable`, {})).status).toBe(200);
    const left = await eventually(() => workerPids(process.pid), (pids) => !pids.includes(shared));
    expect(left.sort()).toEqual([(await worker('echo-own')).pid, await standby()].sort());
    // Enabled again, it is loaded into a new shared process.
    expect((await t.api.post('/api/plugins/echo/enable', {})).status).toBe(200);
    expect((await t.api.post('/api/plugins/echo/echo', { back: true })).status).toBe(200);
    expect((await worker('echo')).pid).not.toBe(shared);
  });
});

describe('first-party plugins in processes of their own', () => {
  it('is what plugins.sharedWorker.firstParty false chooses', async () => {
    const own = await startTestKernel({ plugins: { sharedWorker: { firstParty: false } } }, { firstPartyDir: FIRST_PARTY_PLUGINS });
    try {
      const key = await installAndEnable(own, ECHO);
      const [costs, echo] = await Promise.all(['costs', key].map(async (k) => (await own.api.get(`/api/plugins/${k}/health`)).body.worker));
      expect(costs.pid).not.toBe(echo.pid);
      expect((await own.api.post('/api/plugins/echo/echo', {})).status).toBe(200);
    } finally {
      await own.stop();
    }
  }, 60_000);
});
