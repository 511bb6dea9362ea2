import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runBenches } from './support/bench-runner.ts';

const FIXTURES = fileURLToPath(new URL('./fixtures/runner', import.meta.url));
const LIMIT_FIXTURES = fileURLToPath(new URL('./fixtures/runner-limit', import.meta.url));

/** `npm run bench`: one failing benchmark prints why, the others still run, and the end says which failed. */
describe('the benchmark runner', () => {
  it('reports a failing benchmark with its error and runs the ones after it', async () => {
    const lines: string[] = [];
    const outcomes = await runBenches(FIXTURES, [], (line) => lines.push(line));
    expect(outcomes.map((o) => [o.file, o.ok])).toEqual([['a-throws.bench.ts', false], ['b-measures.bench.ts', true], ['c-no-run.bench.ts', false]]);
    const { ran } = await import('./fixtures/runner/b-measures.bench.ts');
    expect(ran).toEqual(['b-measures']);
    const output = lines.join('\n');
    expect(output).toContain('a-throws.bench.ts FAILED: Error: the kernel did not start: port in use');
    expect(output).toContain('c-no-run.bench.ts exports no run() function');
    expect(output).toMatch(/1 of 3 benchmarks ran, 2 failed/);
    expect(output).toMatch(/FAILED a-throws\.bench\.ts \(\d+ s\): the kernel did not start: port in use/);
  });

  it('stops a benchmark past its time limit, with the processes it started, reports it failed and runs the next', async () => {
    const lines: string[] = [];
    const outcomes = await runBenches(LIMIT_FIXTURES, [], (line) => lines.push(line), { graceMs: 0 });
    expect(outcomes.map((o) => [o.file, o.ok])).toEqual([['a-hangs.bench.ts', false], ['b-measures.bench.ts', true]]);
    const hanging = await import('./fixtures/runner-limit/a-hangs.bench.ts');
    const child = hanging.child!;
    // The runner sent its child SIGINT: it ends (or has ended) by that signal, not on its own.
    const signal = child.signalCode ?? (await new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, sig) => resolve(sig))));
    expect(signal).toBe('SIGINT');
    const { ran } = await import('./fixtures/runner-limit/b-measures.bench.ts');
    expect(ran).toEqual(['b-measures']);
    expect(lines.join('\n')).toMatch(/a-hangs\.bench\.ts FAILED: ran past its time limit of \d+ s and was stopped \(1 process\(es\) it started were sent SIGINT\)/);
    expect(lines.join('\n')).toMatch(/1 of 2 benchmarks ran, 1 failed/);
  });

  it('runs only the benchmarks a filter names', async () => {
    const outcomes = await runBenches(FIXTURES, ['measures'], () => undefined);
    expect(outcomes.map((o) => o.file)).toEqual(['b-measures.bench.ts']);
  });

  it('exits non-zero when nothing ran', async () => {
    const child = spawn(process.execPath, ['--no-node-snapshot', fileURLToPath(new URL('./run.ts', import.meta.url)), 'no-such-benchmark'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(output).toContain('No benchmark matches "no-such-benchmark"');
    expect(code).toBe(1);
  });
});
