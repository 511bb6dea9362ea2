import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startKernelProcess } from './support/kernel-process.ts';
import { printTable } from './support/load.ts';

const FIXTURE = fileURLToPath(new URL('../host/fixtures/exec-fx', import.meta.url));
const ROUNDS = 40;

/**
 * Executions, in one run: the latency from a plugin route asking for an execution (it opens a
 * run and calls ctx.executions.start) to the agent process running (its own `timeOrigin`), for
 * a short Node agent as the unprivileged agent user; and to the end of the execution as the
 * plugin reads it back (exit, log written, run closed). Sequential starts, p50 and p99.
 */
export async function run(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'keel-bench-agent-'));
  await chmod(dir, 0o755);
  const script = join(dir, 'agent.cjs');
  await writeFile(script, "process.stdout.write(JSON.stringify({ type: 'started', at: performance.timeOrigin }) + '\\n');\n", { mode: 0o644 });
  const kernel = await startKernelProcess({}, ['test/bench/support/bench-kernel-main.ts']);
  try {
    await kernel.call('POST', '/api/plugins/install', { localPath: FIXTURE });
    await kernel.call('POST', '/api/plugins/exec-fx/enable', {});
    const company = await kernel.call('POST', '/api/companies', { name: 'Exec Bench' });
    const agent = await kernel.call('POST', `/api/companies/${company.id}/agents`, {
      name: 'Bench agent', role: 'engineer', adapterType: 'process', adapterConfig: { command: process.execPath, args: [script] },
    });
    const agentId = agent.agent?.id ?? agent.id;
    const base = `/api/plugins/exec-fx/companies/${company.id}`;
    const toStart: number[] = [];
    const toEnd: number[] = [];
    for (let i = 0; i < ROUNDS + 3; i++) {
      const asked = Date.now();
      const askedPrecise = performance.now();
      const { execution } = await kernel.call('POST', `${base}/start`, { agentId, execution: { kind: 'process' } });
      let summary = execution;
      while (!['succeeded', 'failed', 'cancelled', 'timed_out', 'lost'].includes(summary.status)) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        summary = await kernel.call('GET', `${base}/executions/${execution.executionId}`);
      }
      const ended = performance.now() - askedPrecise;
      if (summary.status !== 'succeeded') throw new Error(`execution ${summary.status}: ${JSON.stringify(summary)}`);
      const log = await kernel.call('GET', `${base}/executions/${execution.executionId}/log`);
      const started = log.content.split('\n').filter(Boolean).map((line: string) => JSON.parse(line)).map((record: { line: string }) => {
        try { return JSON.parse(record.line) as { type?: string; at?: number }; } catch { return {}; }
      }).find((line: { type?: string }) => line.type === 'started');
      if (i < 3) continue; // warm-up
      toStart.push(started.at - asked);
      toEnd.push(ended);
    }
    const pct = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)]!;
    printTable(`Executions: a plugin's start to the agent process (${ROUNDS} sequential, short Node agent as the agent user)`, [
      { measure: 'start -> process start, p50', value: `${pct(toStart, 50).toFixed(0)} ms` },
      { measure: 'start -> process start, p99', value: `${pct(toStart, 99).toFixed(0)} ms` },
      { measure: 'start -> execution ended and read back, p50', value: `${pct(toEnd, 50).toFixed(0)} ms` },
      { measure: 'start -> execution ended and read back, p99', value: `${pct(toEnd, 99).toFixed(0)} ms` },
    ]);
  } finally {
    await kernel.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
