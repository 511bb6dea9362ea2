import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startKernelProcess, type KernelProcess } from './support/kernel-process.ts';
import { printTable } from './support/load.ts';

const ROUNDS = 30;
const AGENTS = 50;
const REPORTS = 200;
const ENDED = ['succeeded', 'failed', 'cancelled', 'timed_out', 'lost'];

/**
 * The agent runtime, in one run: wakeup to agent process start (the process's own timeOrigin)
 * through the whole path (wakeup route, ledger run, job queue, executor), sequential, p50/p99;
 * runs completed per second with 50 agents woken at once (each run a short Node process); and
 * the cost of the usage protocol per report (a run printing 200 usage lines against one printing
 * none, each report a cost event with budgets evaluated).
 */
export async function run(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'keel-bench-runtime-'));
  await chmod(dir, 0o755);
  const started = join(dir, 'started.cjs');
  await writeFile(started, "process.stdout.write(JSON.stringify({ type: 'started', at: performance.timeOrigin }) + '\\n');\n", { mode: 0o644 });
  const reporter = join(dir, 'reporter.cjs');
  await writeFile(reporter, `const n = Number(process.env.REPORTS || 0); for (let i = 0; i < n; i++) process.stdout.write(JSON.stringify({ type: 'service.usage', provider: 'bench', model: 'm', costCents: 1 }) + '\\n');\n`, { mode: 0o644 });
  const kernel = await startKernelProcess({}, ['test/bench/support/bench-kernel-main.ts']);
  try {
    const company = await kernel.call('POST', '/api/companies', { name: 'Runtime Bench' });
    const agentOf = async (script: string, env: Record<string, string> = {}) => {
      const created = await kernel.call('POST', `/api/companies/${company.id}/agents`, {
        name: `Bench ${Math.random().toString(36).slice(2, 8)}`, role: 'engineer', adapterType: 'process', adapterConfig: { command: process.execPath, args: [script], env },
      });
      return String(created.agent?.id ?? created.id);
    };
    const ended = async (runId: string) => {
      for (;;) {
        const runRow = await kernel.call('GET', `/api/heartbeat-runs/${runId}`);
        if (ENDED.includes(runRow.status) && runRow.finishedAt) return runRow;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };

    const single = await agentOf(started);
    const toStart: number[] = [];
    for (let i = 0; i < ROUNDS + 3; i++) {
      const asked = Date.now();
      const { run: queued } = await kernel.call('POST', `/api/agents/${single}/wakeup`, {});
      await ended(queued.id);
      const log = await kernel.call('GET', `/api/heartbeat-runs/${queued.id}/log`);
      const line = log.content.split('\n').filter(Boolean).map((record: string) => JSON.parse(record).line as string).find((text: string) => text.includes('"started"'));
      if (i >= 3) toStart.push(JSON.parse(line).at - asked);
    }

    const many = await Promise.all(Array.from({ length: AGENTS }, () => agentOf(started)));
    const t0 = performance.now();
    const runs = await Promise.all(many.map((agentId) => kernel.call('POST', `/api/agents/${agentId}/wakeup`, {})));
    await Promise.all(runs.map((answer: { run: { id: string } }) => ended(answer.run.id)));
    const burstSec = (performance.now() - t0) / 1000;

    const measure = async (reports: number) => {
      const agentId = await agentOf(reporter, { REPORTS: String(reports) });
      const t1 = performance.now();
      const { run: queued } = await kernel.call('POST', `/api/agents/${agentId}/wakeup`, {});
      const done = await ended(queued.id);
      if (reports > 0 && done.usageJson?.reports !== reports) await waitReports(kernel, queued.id, reports);
      return performance.now() - t1;
    };
    await measure(0);
    const none = await measure(0);
    const withReports = await measure(REPORTS);

    const pct = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)]!;
    printTable('Agent runtime (short Node agents as the agent user)', [
      { measure: `wakeup -> process start, p50 (${ROUNDS} sequential)`, value: `${pct(toStart, 50).toFixed(0)} ms` },
      { measure: `wakeup -> process start, p99 (${ROUNDS} sequential)`, value: `${pct(toStart, 99).toFixed(0)} ms` },
      { measure: `runs completed per second, ${AGENTS} agents woken at once`, value: (AGENTS / burstSec).toFixed(1) },
      { measure: `usage protocol, per report (${REPORTS} reports in one run)`, value: `${((withReports - none) / REPORTS).toFixed(2)} ms` },
    ]);
  } finally {
    await kernel.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Usage reports are events handled after the process ends; wait for the last one. */
async function waitReports(kernel: KernelProcess, runId: string, reports: number): Promise<void> {
  for (;;) {
    const runRow = await kernel.call('GET', `/api/heartbeat-runs/${runId}`);
    if ((runRow.usageJson?.reports ?? 0) >= reports) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
