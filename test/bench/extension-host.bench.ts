import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startKernelProcess } from './support/kernel-process.ts';
import { inTurns, load, printTable, type LoadResult } from './support/load.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/bench-plugin', import.meta.url));

async function rssKb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
}

/** The kernel's plugin worker processes (its other children are the embedded PostgreSQL). */
async function workerPids(pid: number): Promise<number[]> {
  const text = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
  const children = text.trim().split(/\s+/).filter(Boolean).map(Number);
  const workers: number[] = [];
  for (const child of children) {
    const cmdline = await readFile(`/proc/${child}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes('plugin-worker')) workers.push(child);
  }
  return workers;
}

/**
 * The extension host's costs, in one run: cold start (enable to first answered request),
 * a tool call's round trip through tools/execute, memory with ten plugins enabled, and the
 * throughput of an echo route and a one-row read-and-write route served by a plugin against
 * the same routes served by the kernel itself.
 */
export async function run(): Promise<void> {
  const kernel = await startKernelProcess({}, ['test/bench/support/bench-kernel-main.ts']);
  const scratch = await mkdtemp(join(tmpdir(), 'keel-bench-plugins-'));
  try {
    const { call } = kernel;
    const company = await call('POST', '/api/companies', { name: 'Host Bench' });

    // Cold start: from the enable request to the first answered plugin request.
    await call('POST', '/api/plugins/install', { localPath: FIXTURE });
    const coldStarted = performance.now();
    await call('POST', '/api/plugins/bench-plugin/enable', {});
    await call('POST', '/api/plugins/bench-plugin/echo', { warm: true });
    const coldStartMs = performance.now() - coldStarted;

    const toolMs = await toolRoundTrip(call);

    const results = await throughput(kernel.url, company.id);
    // The same plugin in the shared worker process (where first-party plugins run), measured in this run.
    const shared = await startKernelProcess({}, ['test/bench/support/bench-kernel-main.ts'], { plugins: { sharedWorker: { plugins: ['bench-plugin'] } } });
    let sharedResults;
    try {
      const sharedCompany = await shared.call('POST', '/api/companies', { name: 'Host Bench, shared worker' });
      await shared.call('POST', '/api/plugins/install', { localPath: FIXTURE });
      await shared.call('POST', '/api/plugins/bench-plugin/enable', {});
      // The same calls before the throughput runs as the plugin in its own process had: both
      // kernels and both plugins go into them equally warm.
      await toolRoundTrip(shared.call);
      sharedResults = await throughput(shared.url, sharedCompany.id);
    } finally {
      await shared.stop();
    }

    // Memory with ten plugins enabled (the benchmark plugin plus nine copies under other keys).
    for (let i = 1; i <= 9; i++) {
      const folder = join(scratch, `copy-${i}`);
      await cp(FIXTURE, folder, { recursive: true });
      const manifest = JSON.parse(await readFile(join(folder, 'plugin.json'), 'utf8'));
      manifest.key = `bench-copy-${i}`;
      manifest.database.namespace = `bench_copy_${i}`;
      manifest.routes = manifest.routes.filter((r: { absolute?: boolean }) => !r.absolute);
      await writeFile(join(folder, 'plugin.json'), JSON.stringify(manifest));
      await call('POST', '/api/plugins/install', { localPath: folder });
      await call('POST', `/api/plugins/bench-copy-${i}/enable`, {});
      await call('POST', `/api/plugins/bench-copy-${i}/echo`, { warm: true });
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const kernelRss = await rssKb(kernel.pid);
    const workers = await workerPids(kernel.pid);
    const workerRss = await Promise.all(workers.map(rssKb));
    const pluginWorkers = workerRss.filter((kb) => kb > 0);
    const total = kernelRss + pluginWorkers.reduce((a, b) => a + b, 0);

    printTable('plugin costs', [
      { measure: 'cold start: enable -> first answered request', value: `${coldStartMs.toFixed(0)} ms` },
      { measure: 'tool call round trip (POST /api/plugins/tools/execute, sequential)', value: `${toolMs.toFixed(2)} ms` },
      { measure: 'kernel process RSS with 10 plugins enabled', value: `${(kernelRss / 1024).toFixed(0)} MiB` },
      { measure: `plugin worker processes (${pluginWorkers.length}), RSS each (mean)`, value: `${(pluginWorkers.reduce((a, b) => a + b, 0) / Math.max(1, pluginWorkers.length) / 1024).toFixed(0)} MiB` },
      { measure: 'kernel + workers RSS', value: `${(total / 1024).toFixed(0)} MiB` },
    ]);
    printTable(`requests per second, 10 connections, 1 KB JSON body, mean of ${ROUNDS} interleaved rounds of ${ROUND_SECONDS} s: the plugin in its own worker process, then in the shared one`, [
      ...ratios('own process', results),
      ...ratios('shared process', sharedResults),
    ]);
  } finally {
    await kernel.stop();
    await rm(scratch, { recursive: true, force: true });
  }
}

/** A tool call's round trip through tools/execute, sequential: milliseconds each, after 50 not counted. */
async function toolRoundTrip(call: (method: string, path: string, body?: unknown) => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 50; i++) await call('POST', '/api/plugins/tools/execute', { tool: 'bench-plugin.ping', input: {} });
  const runs = 500;
  const started = performance.now();
  for (let i = 0; i < runs; i++) await call('POST', '/api/plugins/tools/execute', { tool: 'bench-plugin.ping', input: {} });
  return (performance.now() - started) / runs;
}

/** Plugin routes against the same routes served by the kernel itself, in one kernel. */
async function throughput(url: string, companyId: string): Promise<LoadResult[]> {
  const echoBody = JSON.stringify({ message: 'x'.repeat(900), n: 1 });
  let counter = 0;
  const rowBody = () => JSON.stringify({ key: `k${counter++ % 1000}`, value: 'v'.repeat(100) });
  const headers = { 'content-type': 'application/json' };
  const cases: Array<[string, string, (() => string) | null]> = [
    ['echo, kernel', `${url}/api/bench/echo`, () => echoBody],
    ['echo, plugin', `${url}/api/plugins/bench-plugin/echo`, () => echoBody],
    ['row write+read, kernel', `${url}/api/bench/companies/${companyId}/rows`, rowBody],
    ['row write+read, plugin', `${url}/api/plugins/bench-plugin/companies/${companyId}/rows`, rowBody],
    ['row write+read, plugin, batched route', `${url}/api/plugins/bench-plugin/companies/${companyId}/rows-batched`, rowBody],
    // A read-only call: one statement, no transaction (kernel/host/README.md, "Read-only calls").
    ['row read, kernel', `${url}/api/bench/companies/${companyId}/rows/read-me`, null],
    ['row read, plugin', `${url}/api/plugins/bench-plugin/companies/${companyId}/rows/read-me`, null],
  ];
  // The row both read routes read, written through each route that writes one.
  const seed = JSON.stringify({ key: 'read-me', value: 'v'.repeat(100) });
  for (const path of [`/api/bench/companies/${companyId}/rows`, `/api/plugins/bench-plugin/companies/${companyId}/rows`]) {
    const res = await fetch(url + path, { method: 'POST', headers, body: seed });
    if (!res.ok) throw new Error(`seeding ${path}: ${res.status} ${await res.text()}`);
  }
  const request = (body: (() => string) | null) => (body ? { method: 'POST', headers, body: body() } : { method: 'GET' });
  for (const [name, target, body] of cases) await load(`${name} (warm-up)`, target, { ...request(body), seconds: 1 });
  // Kernel and plugin routes take turns, round after round (support/load.ts).
  return inTurns(cases.map(([name, target, body]) => ({ name, url: target, options: () => request(body) })), ROUNDS, ROUND_SECONDS);
}

const ROUNDS = 3;
const ROUND_SECONDS = 2;

function ratios(where: string, results: LoadResult[]): Array<Record<string, string | number>> {
  const [echoKernel, echoPlugin, rowKernel, rowPlugin, rowBatched, readKernel, readPlugin] = results;
  const ratio = (plugin: LoadResult, kernel: LoadResult) => `${((plugin.requestsPerSecond / kernel.requestsPerSecond) * 100).toFixed(0)}%`;
  return [
    { worker: where, route: 'echo', kernel: echoKernel!.requestsPerSecond, plugin: echoPlugin!.requestsPerSecond, 'plugin / kernel': ratio(echoPlugin!, echoKernel!), errors: echoKernel!.errors + echoKernel!.non2xx + echoPlugin!.errors + echoPlugin!.non2xx },
    { worker: where, route: 'row write+read (transaction + activity)', kernel: rowKernel!.requestsPerSecond, plugin: rowPlugin!.requestsPerSecond, 'plugin / kernel': ratio(rowPlugin!, rowKernel!), errors: rowKernel!.errors + rowKernel!.non2xx + rowPlugin!.errors + rowPlugin!.non2xx },
    { worker: where, route: 'row write+read, batched plugin route (group commit)', kernel: rowKernel!.requestsPerSecond, plugin: rowBatched!.requestsPerSecond, 'plugin / kernel': ratio(rowBatched!, rowKernel!), errors: rowBatched!.errors + rowBatched!.non2xx },
    { worker: where, route: 'row read (GET, read-only: one statement, no transaction)', kernel: readKernel!.requestsPerSecond, plugin: readPlugin!.requestsPerSecond, 'plugin / kernel': ratio(readPlugin!, readKernel!), errors: readKernel!.errors + readKernel!.non2xx + readPlugin!.errors + readPlugin!.non2xx },
  ];
}
