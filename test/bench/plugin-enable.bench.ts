import { fileURLToPath } from 'node:url';
import { startKernelProcess, type KernelProcess } from './support/kernel-process.ts';
import { printTable } from './support/load.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/bench-plugin', import.meta.url));
const ROUNDS = Number(process.env.ENABLE_BENCH_ROUNDS ?? 3);

/**
 * Enabling the knowledge wiki (llm-wiki: a bundle, migrations, a worker, jobs and a folder
 * watch), in one run: alone, then while other plugins' lifecycle work runs (the work plugin
 * upgraded in place, the benchmark plugin enabled), started just before the wiki's enable.
 * Each figure is the wiki's enable request, client-timed (median of the rounds), beside how
 * long the other work took.
 */
export async function run(): Promise<void> {
  const kernel = await startKernelProcess({}, ['test/bench/support/bench-kernel-main.ts']);
  try {
    await kernel.call('POST', '/api/plugins/install', { packageName: '@keel/plugin-wiki' });
    await kernel.call('POST', '/api/plugins/install', { localPath: FIXTURE });
    const alone: number[] = [];
    const beside: number[] = [];
    const others: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      alone.push(await enableWiki(kernel));
      await kernel.call('POST', '/api/plugins/llm-wiki/disable', {});
    }
    for (let round = 0; round < ROUNDS; round++) {
      const otherStarted = performance.now();
      const other = Promise.all([
        kernel.call('POST', '/api/plugins/work/upgrade', {}),
        kernel.call('POST', '/api/plugins/bench-plugin/enable', {}),
      ]).then(() => performance.now() - otherStarted);
      beside.push(await enableWiki(kernel));
      others.push(await other);
      await kernel.call('POST', '/api/plugins/llm-wiki/disable', {});
      await kernel.call('POST', '/api/plugins/bench-plugin/disable', {});
    }
    // The ratio is the figure to compare across machines: 1 means the wiki did not wait for the others
    // (above 1 they only share the CPU; near 1 + others/alone it queued behind them).
    printTable(`enable llm-wiki, median of ${ROUNDS} rounds (client-timed ms)`, [
      { measure: 'alone', 'wiki enable ms': median(alone), 'other lifecycle work ms': '-', 'ratio to alone': 1 },
      { measure: 'while work upgrades and bench-plugin enables', 'wiki enable ms': median(beside), 'other lifecycle work ms': median(others), 'ratio to alone': Math.round((median(beside) / median(alone)) * 100) / 100 },
    ]);
  } finally {
    await kernel.stop();
  }
}

async function enableWiki(kernel: KernelProcess): Promise<number> {
  const started = performance.now();
  await kernel.call('POST', '/api/plugins/llm-wiki/enable', {});
  return performance.now() - started;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.floor(sorted.length / 2)]!);
}
