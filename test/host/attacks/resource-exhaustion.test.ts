import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../../support/harness.ts';
import { expectKernelAlive, expectKernelComponentsUp, installAndEnable, waitFor } from './support.ts';

/** SANDBOX.md class 2: resource exhaustion. The fixture's limits: 32 MB, 2,500 ms per call, 3 calls at once. */
let t: TestKernel;
let company: any;
let agent: any;
const P = '/api/plugins/attack-exhaust';

beforeAll(async () => {
  t = await startTestKernel();
  company = await createCompany(t.api);
  agent = await createAgent(t.api, company.id);
  await installAndEnable(t, 'attack-exhaust');
});
afterAll(async () => { await t?.stop(); });

/** Each attack starts from a running worker (an earlier one may have had it restarted). */
beforeEach(async () => {
  const ok = await waitFor(() => t.api.get(`${P}/ok`), (res) => res.status === 200, 20_000);
  expect(ok.status, ok.text).toBe(200);
});

/** Runs an attack while timing a kernel route alongside it. */
async function during(attack: () => Promise<any>): Promise<{ res: any; kernelMs: number[] }> {
  const kernelMs: number[] = [];
  let done = false;
  const poll = (async () => {
    while (!done) {
      const started = performance.now();
      const [health, companies] = await Promise.all([t.api.get('/api/health'), t.api.get(`/api/companies/${company.id}`)]);
      expectKernelComponentsUp(health);
      expect(companies.status).toBe(200);
      kernelMs.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  })();
  const res = await attack().finally(() => { done = true; });
  await poll;
  return { res, kernelMs };
}

describe('runaway code', () => {
  it('stops a synchronous loop, a loop inside settle and a loop in a microtask at the CPU limit', async () => {
    for (const path of ['spin', 'spin-after-await', 'spin-microtask']) {
      const started = Date.now();
      const { res, kernelMs } = await during(() => t.api.post(`${P}/${path}`, {}));
      expect(res.status, `${path}: ${res.text}`).toBe(504);
      expect(res.body.code).toBe('plugin_timeout');
      expect(Date.now() - started).toBeLessThan(6_000);
      expect(Math.max(...kernelMs)).toBeLessThan(1_000);
      await waitFor(() => t.api.get(`${P}/ok`), (r) => r.status === 200);
    }
  });

  it('ends never-settling promises and endless chains of awaited host calls at the wall-clock deadline, then restarts the worker', async () => {
    let restarts = (await t.api.get(`${P}/health`)).body.worker.restarts as number;
    for (const path of ['hang', 'chain-db', `companies/${company.id}/chain-kernel`]) {
      const started = Date.now();
      const { res, kernelMs } = await during(() => t.api.post(`${P}/${path}`, {}));
      expect(res.status, `${path}: ${res.text}`).toBe(504);
      expect(res.body.code).toBe('plugin_timeout');
      expect(Date.now() - started).toBeLessThan(6_000);
      expect(Math.max(...kernelMs)).toBeLessThan(1_000);
      // The worker answers, then exits; wait for its successor before the next attack.
      restarts += 1;
      const health = await waitFor(() => t.api.get(`${P}/health`), (r) => r.body.worker.restarts >= restarts && r.body.worker.status === 'running');
      expect(health.body.worker.restarts).toBeGreaterThanOrEqual(restarts);
      expect((await t.api.get(`${P}/ok`)).status).toBe(200);
    }
  });
});

describe('statements that outlive their call', () => {
  const running = async (tag: string) => (await t.sql.query(
    "select count(*)::int as n from pg_stat_activity where state = 'active' and query like $1 and pid <> pg_backend_pid()", [`%${tag}%`])).rows[0].n as number;

  it('cancels a statement that overruns the call\'s deadline, in a transaction or not, within a short bound', async () => {
    for (const path of ['overrun', 'overrun-free']) {
      const tag = `keel-overrun-${path}-${Date.now()}`;
      const restarts = (await t.api.get(`${P}/health`)).body.worker.restarts as number;
      const res = await t.api.post(`${P}/${path}`, { tag });
      expect(res.status, `${path}: ${res.text}`).toBe(504);
      expect(res.body.code).toBe('plugin_timeout');
      const left = await waitFor(() => running(tag), (n) => n === 0, 3_000);
      expect(left, `${path}: pg_sleep(30) still running after the call failed`).toBe(0);
      // The worker answers, then exits: wait for its successor before the next attack.
      await waitFor(() => t.api.get(`${P}/health`), (r) => r.body.worker.restarts > restarts && r.body.worker.status === 'running');
    }
  });

  it('ends the statements of a worker that died mid-call (the kernel ends its sessions)', async () => {
    const tag = `keel-killed-${Date.now()}`;
    const health = (await t.api.get(`${P}/health`)).body.worker;
    const call = t.api.post(`${P}/overrun-free`, { tag });
    await waitFor(() => running(tag), (n) => n === 1, 3_000);
    process.kill(health.pid, 'SIGKILL');
    const res = await call;
    expect(res.status, res.text).toBe(503);
    expect(res.body.code).toBe('plugin_crashed');
    expect(await waitFor(() => running(tag), (n) => n === 0, 3_000)).toBe(0);
    await waitFor(() => t.api.get(`${P}/health`), (r) => r.body.worker.restarts > health.restarts && r.body.worker.status === 'running');
  });

  it('cancels a statement still running when the handler answers; a transaction it was part of does not commit', async () => {
    const free = `keel-stray-free-${Date.now()}`;
    const res = await t.api.post(`${P}/answer-while-running`, { tag: free });
    expect(res.status, res.text).toBe(200);
    expect(await waitFor(() => running(free), (n) => n === 0, 3_000)).toBe(0);
    const inTx = `keel-stray-tx-${Date.now()}`;
    const started = Date.now();
    const tx = await t.api.post(`${P}/companies/${company.id}/answer-while-running-tx`, { tag: inTx });
    expect(tx.status, tx.text).toBe(500);
    expect(tx.body.code).toBe('plugin_transaction_failed');
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await running(inTx)).toBe(0);
  });
});

describe('floods', () => {
  it('refuses un-awaited host calls beyond 64 in flight per invocation, so the kernel keeps answering quickly', async () => {
    const { res, kernelMs } = await during(() => t.api.post(`${P}/companies/${company.id}/flood-kernel`, {}));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ fulfilled: 64, refused: { too_many_pending_calls: 5_000 - 64 } });
    expect(Math.max(...kernelMs)).toBeLessThan(1_000);
    const db = await t.api.post(`${P}/flood-db`, {});
    expect(db.status, db.text).toBe(200);
    expect(db.body).toEqual({ fulfilled: 64, refused: { too_many_pending_calls: 5_000 - 64 } });
    await expectKernelAlive(t);
  });

  it('answers calls above maxConcurrentCalls with 503 plugin_busy at once', async () => {
    const sleeping = [1, 2, 3].map(() => t.api.post(`${P}/sleep`, {}));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const started = Date.now();
    const busy = await t.api.post(`${P}/sleep`, {});
    expect(busy.status).toBe(503);
    expect(busy.body.code).toBe('plugin_busy');
    expect(Date.now() - started).toBeLessThan(300);
    for (const res of await Promise.all(sleeping)) expect(res.status, res.text).toBe(200);
  });

  it('bounds log volume: lines per minute, line length and the kept ring', async () => {
    const res = await t.api.post(`${P}/log-flood`, {});
    expect(res.status, res.text).toBe(200);
    const logs = await t.api.get(`${P}/logs?limit=500`);
    expect(logs.status).toBe(200);
    const lines = logs.body.logs as Array<{ message: string; fields?: unknown }>;
    expect(lines.length).toBeLessThanOrEqual(500);
    for (const line of lines) {
      expect(line.message.length).toBeLessThanOrEqual(2000);
      expect(JSON.stringify(line.fields ?? {}).length).toBeLessThan(9000);
    }
    expect(lines.filter((line) => /^\d+ y/.test(line.message)).length).toBeLessThanOrEqual(600);
    expect((await t.api.get(`${P}/ok`)).status).toBe(200);
  });

  it('refuses a response over the size limit', async () => {
    const res = await t.api.post(`${P}/huge-result`, {});
    expect(res.status).toBe(502);
    expect(res.body).toEqual({ code: 'plugin_response_too_large', error: 'Plugin response exceeds 5242880 bytes' });
  });
});

describe('memory', () => {
  it('disposes an isolate that blows its heap limit and restarts the worker', async () => {
    const { res } = await during(() => t.api.post(`${P}/oom`, {}));
    expect(res.status, res.text).toBe(503);
    expect(res.body.code).toBe('plugin_out_of_memory');
    await expectKernelAlive(t);
  });

  it('offers no memory outside the heap limit: no resizable buffers, WebAssembly or shared memory', async () => {
    const res = await t.api.post(`${P}/memory`, {});
    expect(res.status, res.text).toBe(200);
    const out = res.body as Record<string, string>;
    for (const name of ['globalCtor', 'prototypeCtor', 'bufferCtor', 'protoOfCtor', 'reflectConstruct']) expect(out[name], name).toMatch(/^threw:/);
    expect(out.resizeMethod).toBe('ok:undefined');
    expect(out.webAssembly).toBe('ok:undefined');
    expect(out.webAssemblyViaFunction).toBe('ok:undefined');
    expect(out.sharedArrayBuffer).toBe('ok:undefined');
    expect(out.atomics).toBe('ok:undefined');
    expect(out.plainBuffer).toBe('ok:1024');
  });
});

describe('work after the call', () => {
  it('stops code that keeps running after its call answered at its first host call, withdrawing the answer: no log line, no write, and the next call is served at once', async () => {
    const tag = `stray-${Date.now()}`;
    const restarts = (await t.api.get(`${P}/health`)).body.worker.restarts as number;
    const started = Date.now();
    const [res, next] = await Promise.all([
      t.api.post(`${P}/answer-then-loop`, { tag }),
      new Promise((resolve) => setTimeout(resolve, 50)).then(() => t.api.get(`${P}/ok`)),
    ]);
    // The answer was given while the code it scheduled still ran: it is withdrawn, the call fails.
    expect(res.status, res.text).toBe(503);
    expect(res.body.code).toBe('plugin_crashed');
    expect(res.body.error).toMatch(/answer was withdrawn/);
    expect(next.status, next.text).toBe(200);
    expect(Date.now() - started, 'both answered well within the CPU slice (2,500 ms)').toBeLessThan(1_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const logs = (await t.api.get(`${P}/logs?limit=500`)).body.logs as Array<{ message: string }>;
    expect(logs.filter((line) => line.message.includes(tag))).toEqual([]);
    expect(logs.some((line) => /kept running after its call answered/.test(line.message))).toBe(true);
    expect((await t.sql.query('select count(*)::int as n from plugin_attack_exhaust.marks where note = $1', [tag])).rows[0].n).toBe(0);
    // The same worker process goes on serving (its isolate was replaced, not the process).
    expect((await t.api.get(`${P}/ok`)).status).toBe(200);
    expect((await t.api.get(`${P}/health`)).body.worker.restarts).toBe(restarts);
  });

  it('fails a call whose answer came with computation still running, at the CPU slice, and the worker goes on serving', async () => {
    const started = Date.now();
    const res = await t.api.post(`${P}/answer-then-spin`, {});
    expect(res.status, res.text).toBe(504);
    expect(res.body.code).toBe('plugin_timeout');
    expect((await waitFor(() => t.api.get(`${P}/ok`), (r) => r.status === 200)).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(6_000);
  });

  it('never reports an answer while a microtask that re-queues itself keeps the isolate busy: the call fails, its write is rolled back, and the plugin recovers', async () => {
    // The chain also grows the heap: its CPU slice or the memory limit ends it, whichever comes first.
    const free = await t.api.post(`${P}/answer-then-requeue`, {});
    expect(free.status, free.text).not.toBe(200);
    expect(['plugin_timeout', 'plugin_out_of_memory']).toContain(free.body.code);
    expect(free.body.error).toMatch(/answer was withdrawn/);
    expect((await waitFor(() => t.api.get(`${P}/ok`), (r) => r.status === 200)).status).toBe(200);

    // The answer given after an awaited write (from the entry that resumed the handler): the write is undone.
    const restarts = (await t.api.get(`${P}/health`)).body.worker.restarts as number;
    const tag = `requeue-${Date.now()}`;
    const inTx = await t.api.post(`${P}/write-then-requeue`, { tag });
    expect(inTx.status, inTx.text).toBe(504);
    expect(inTx.body.code).toBe('plugin_timeout');
    expect((await t.sql.query('select count(*)::int as n from plugin_attack_exhaust.marks where note = $1', [tag])).rows[0].n).toBe(0);

    // The same worker goes on serving: the isolate was replaced, the process not restarted.
    expect((await t.api.get(`${P}/ok`)).status).toBe(200);
    expect((await t.api.get(`${P}/health`)).body.worker.restarts).toBe(restarts);
    const logs = (await t.api.get(`${P}/logs?limit=500`)).body.logs as Array<{ message: string }>;
    expect(logs.some((line) => /kept running after its call answered, until its CPU slice ran out/.test(line.message))).toBe(true);
  });

  it('never runs host work a plugin started but did not await before its call ended', async () => {
    const failed = await t.api.post(`${P}/write-then-throw`, { tag: 'after-throw' });
    expect(failed.status).toBe(409);
    const returned = await t.api.post(`${P}/write-then-return`, { tag: 'after-return' });
    expect(returned.status).toBe(200);
    const kept = await t.api.post(`${P}/keep-going`, { tag: 'kept' });
    expect(kept.status).toBe(200);
    const paused = await t.api.post(`${P}/companies/${company.id}/pause-then-throw`, { agentId: agent.id });
    expect(paused.status).toBe(409);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const marks = await t.sql.query('select note from plugin_attack_exhaust.marks');
    expect(marks.rows).toEqual([]);
    const report = await t.api.get(`${P}/report`);
    expect(report.body.kept).toEqual(['started']);
    const stored = await t.sql.query('select status from agents where id = $1', [agent.id]);
    expect(stored.rows[0].status).not.toBe('paused');
    await expectKernelAlive(t);
  });
});
