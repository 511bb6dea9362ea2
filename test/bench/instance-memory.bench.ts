import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IDLE_CONNECTIONS } from '../../kernel/db/connections.ts';
import { startKernelProcess, type KernelProcess } from './support/kernel-process.ts';
import { printTable } from './support/load.ts';
import { enableBenchPluginCopy } from './support/plugin-copies.ts';
import { mib, processTree, sum } from './support/process-memory.ts';

const COPIES = 4;

/** A copy of the benchmark plugin under another key, installed, enabled and called once. */
async function addPlugin(kernel: KernelProcess, scratch: string, key: string): Promise<void> {
  await enableBenchPluginCopy(kernel, scratch, key);
  await kernel.call('POST', `/api/plugins/${key}/echo`, { warm: true });
}

/**
 * The whole instance after its first-party plugins have served a request each and it has
 * settled: the pools' idle timeout has passed, so each keeps only its one idle connection.
 */
async function settledInstance(kernel: KernelProcess) {
  await new Promise((resolve) => setTimeout(resolve, IDLE_CONNECTIONS.idleTimeoutMillis + 1500));
  return processTree(kernel.pid);
}

async function firstPartyServed(kernel: KernelProcess): Promise<string[]> {
  const company = await kernel.call('POST', '/api/companies', { name: 'Memory Bench', budgetMonthlyCents: 1000 });
  await kernel.call('GET', `/api/companies/${company.id}/costs/summary`);
  const plugins = await kernel.call('GET', '/api/plugins') as Array<{ pluginKey: string; sourceKind: string; status: string }>;
  return plugins.filter((p) => p.sourceKind === 'first_party' && p.status === 'enabled').map((p) => p.pluginKey);
}

/**
 * Memory of a whole instance, all its processes together (kernel, plugin workers with the warm
 * standby, embedded PostgreSQL; not npm, which `npm start` keeps beside them), as resident
 * sizes summed (RSS: pages several processes share, such as the Node.js and PostgreSQL binaries
 * and PostgreSQL's shared buffers, counted once per process) and as proportional set sizes
 * (PSS: shared pages split among their sharers, adding up to what the instance occupies):
 * with every first-party plugin enabled in their shared workers (one per core: what `npm start`
 * runs) and each in a process of its own; and what each additional third-party plugin adds, in
 * its own process (the default) and in the shared ones. The kernel runs with the flags
 * `npm start` passes (kernel/node-flags.ts).
 */
export async function run(): Promise<void> {
  const scratch = await mkdtemp(join(tmpdir(), 'keel-bench-memory-'));
  const sharedKeys = Array.from({ length: COPIES }, (_, i) => `shared-copy-${i + 1}`);
  const rows: Array<Record<string, string | number>> = [];
  const row = (measure: string, tree: Awaited<ReturnType<typeof processTree>>, extra: Record<string, string> = {}) => rows.push({
    measure, 'instance PSS': mib(sum(tree)), 'RSS summed': mib(tree.reduce((total, p) => total + p.rssKb, 0)), kernel: mib(sum(tree, 'kernel')), workers: `${mib(sum(tree, 'worker'))} (${tree.filter((p) => p.kind === 'worker').length})`, postgres: mib(sum(tree, 'postgres')), ...extra,
  });
  try {
    const kernel = await startKernelProcess({}, ['kernel/main.ts'], { plugins: { sharedWorker: { plugins: sharedKeys } } });
    try {
      const firstParty = await firstPartyServed(kernel);
      const base = await settledInstance(kernel);
      row(`first-party plugins (${firstParty.join(', ')}), shared workers`, base);
      for (let i = 1; i <= COPIES; i++) await addPlugin(kernel, scratch, `own-copy-${i}`);
      const withOwn = await settledInstance(kernel);
      row(`+ ${COPIES} third-party plugins, a process each`, withOwn, { 'per plugin': mib((sum(withOwn) - sum(base)) / COPIES) });
      for (const key of sharedKeys) await addPlugin(kernel, scratch, key);
      const withShared = await settledInstance(kernel);
      row(`+ ${COPIES} more in the shared workers (operator's choice)`, withShared, { 'per plugin': mib((sum(withShared) - sum(withOwn)) / COPIES) });
    } finally {
      await kernel.stop();
    }
    const separate = await startKernelProcess({ KEEL_PLUGIN_SHARED_WORKER: 'off' });
    try {
      const firstParty = await firstPartyServed(separate);
      row(`first-party plugins (${firstParty.join(', ')}), a process each`, await settledInstance(separate));
    } finally {
      await separate.stop();
    }
    printTable('instance memory, all processes (RSS summed and PSS); goal: under 600 MiB RSS summed with every first-party plugin', rows);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
