import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startKernelProcess, type KernelProcess } from './support/kernel-process.ts';
import { printTable } from './support/load.ts';
import { enableBenchPluginCopy } from './support/plugin-copies.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/bench-plugin', import.meta.url));
const CRASHES = 20;
/** Plugins enabled one after another, each in a process of its own, for the cold starts. */
const COLD_STARTS = 6;
const STORM_SECONDS = 20;
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

/**
 * How fast a crashed plugin worker serves again, in one run: the time from a SIGKILL of the
 * plugin's worker process to the first 200 from its route (p50 / p99 over 20 crashes a
 * second or more apart), and how much of the time the route answers 200 during a storm of
 * one worker crash per second. Once with the plugin in a worker process of its own, once in
 * one of the processes the first-party plugins share (where a crash restarts the plugins of
 * that process). Then the cold start of a plugin: copies of the plugin enabled one after
 * another, each in a new process of its own, from asking for a worker process to the plugin
 * loaded (`lastStartMs`); the goal is under 50 ms after the kernel's first worker process.
 */
export async function run(): Promise<void> {
  const rows: Array<Record<string, string | number>> = [];
  for (const [where, config] of [['own process', undefined], ['shared process', { plugins: { sharedWorker: { plugins: ['bench-plugin'] } } }]] as const) {
    const kernel = await startKernelProcess({}, ['kernel/main.ts'], config);
    try {
      await kernel.call('POST', '/api/plugins/install', { localPath: FIXTURE });
      await kernel.call('POST', '/api/plugins/bench-plugin/enable', {});
      await kernel.call('POST', '/api/plugins/bench-plugin/echo', { warm: true });
      const restart = await restartTimes(kernel);
      const storm = await crashStorm(kernel);
      const standby = await standbyRssMiB(kernel);
      rows.push({
        worker: where,
        'restart p50 (kill -> first 200)': `${restart.p50.toFixed(0)} ms`,
        'restart p99': `${restart.p99.toFixed(0)} ms`,
        [`available during ${STORM_SECONDS} s of 1 crash/s (probes)`]: `${storm.available.toFixed(1)}% of ${storm.probes}`,
        'crashes in storm': storm.crashes,
        'standby worker RSS': standby === null ? 'none' : `${standby.toFixed(0)} MiB`,
        'plugin boot in the worker (last)': `${(await kernel.call('GET', '/api/plugins/bench-plugin/health')).worker.lastBootMs} ms`,
      });
    } finally {
      await kernel.stop();
    }
  }
  printTable(`plugin worker restarts: SIGKILL of the worker process, ${CRASHES} crashes, then a storm`, rows);
  printTable(`cold start of a plugin in a process of its own: ${COLD_STARTS} enabled one after another (goal: under 50 ms after the kernel's first worker)`, [await coldStarts()]);
}

/** `lastStartMs` of copies of the benchmark plugin enabled one after another, in a fresh kernel whose first-party plugins already run (in their shared processes, started first). */
async function coldStarts(): Promise<Record<string, string>> {
  const scratch = await mkdtemp(join(tmpdir(), 'keel-bench-cold-'));
  const kernel = await startKernelProcess();
  try {
    const starts: number[] = [];
    for (let i = 1; i <= COLD_STARTS; i++) {
      const key = `cold-copy-${i}`;
      await enableBenchPluginCopy(kernel, scratch, key);
      starts.push((await kernel.call('GET', `/api/plugins/${key}/health`)).worker.lastStartMs);
    }
    const later = starts.slice(1).sort((a, b) => a - b);
    return {
      'first copy': `${starts[0]} ms`,
      'others, median': `${later[Math.floor(later.length / 2)]} ms`,
      'others, max': `${later[later.length - 1]} ms`,
      each: starts.map((ms) => `${ms}`).join(', '),
    };
  } finally {
    await kernel.stop();
    await rm(scratch, { recursive: true, force: true });
  }
}

function kill(pid: number): boolean {
  try {
    process.kill(pid, 'SIGKILL');
    return true;
  } catch {
    return false;
  }
}

function post(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      res.on('data', () => undefined);
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.end('{"n":1}');
  });
}

async function workerPid(kernel: KernelProcess): Promise<number | null> {
  const health = await kernel.call('GET', '/api/plugins/bench-plugin/health');
  return health.worker.status === 'running' ? health.worker.pid : null;
}

async function waitForPid(kernel: KernelProcess, not: number | null): Promise<number> {
  for (;;) {
    const pid = await workerPid(kernel);
    if (pid !== null && pid !== not) return pid;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function restartTimes(kernel: KernelProcess): Promise<{ p50: number; p99: number }> {
  const echo = `${kernel.url}/api/plugins/bench-plugin/echo`;
  const samples: number[] = [];
  let pid = await waitForPid(kernel, null);
  for (let i = 0; i < CRASHES; i++) {
    const killed = performance.now();
    if (!kill(pid)) { pid = await waitForPid(kernel, pid); i--; continue; }
    while (await post(echo) !== 200) { /* probe again at once */ }
    samples.push(performance.now() - killed);
    pid = await waitForPid(kernel, pid);
    // Crashes a second or more apart: a plugin that crashes now and then, not a crash loop.
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  samples.sort((a, b) => a - b);
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!;
  return { p50: at(0.5), p99: at(0.99) };
}

/** One probe every 20 ms, whatever the previous ones are doing (as a load balancer's would), while the worker is killed once a second. */
async function crashStorm(kernel: KernelProcess): Promise<{ available: number; probes: number; crashes: number }> {
  const echo = `${kernel.url}/api/plugins/bench-plugin/echo`;
  const until = performance.now() + STORM_SECONDS * 1000;
  const probes: Array<Promise<number>> = [];
  const prober = (async () => {
    while (performance.now() < until) {
      probes.push(post(echo));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  let crashes = 0;
  while (performance.now() < until) {
    const pid = await workerPid(kernel);
    // The health may name a process that has just ended (the kernel not yet told): no crash then.
    if (pid !== null && kill(pid)) crashes++;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  await prober;
  const statuses = await Promise.all(probes);
  return { available: (statuses.filter((s) => s === 200).length / statuses.length) * 100, probes: statuses.length, crashes };
}

/** The resident memory of the warm standby worker process, if the kernel keeps one. */
async function standbyRssMiB(kernel: KernelProcess): Promise<number | null> {
  const health = await kernel.call('GET', '/api/plugins/bench-plugin/health');
  const pid = health.worker.standbyPid as number | undefined;
  if (!pid) return null;
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}
