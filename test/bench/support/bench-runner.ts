import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export interface BenchOutcome { file: string; ok: boolean; seconds: number; error?: string }

/** A benchmark's module: its `run()`, and how long it may take when the default does not fit it. */
interface BenchModule { run?: () => Promise<void>; timeLimitSec?: number | (() => number) }

export interface RunOptions {
  /** The time limit of a benchmark that names none of its own (ms). */
  defaultLimitMs?: number;
  /** One limit for every benchmark (ms), over their own: KEEL_BENCH_TIME_LIMIT_SEC. */
  limitMs?: number;
  /** How long a benchmark stopped at its limit is given to end (its cleanup) before the next starts (ms). */
  graceMs?: number;
}

/** A benchmark that declares no limit of its own may run this long. */
export const DEFAULT_TIME_LIMIT_MS = 10 * 60_000;
/** After its limit, a benchmark's processes are stopped; this long is given to its own cleanup before the next one starts. */
const CLEANUP_GRACE_MS = 15_000;

class TimeLimitReached extends Error {}

/**
 * Runs the benchmarks of a folder (`*.bench.ts`, in name order; with filters, those whose file
 * name contains one of them), one after the other, each module's `run()`. A benchmark that
 * throws (or has no `run`) is reported with its error and the next one still runs: one broken
 * benchmark must not hide the figures of the others. So is one that runs past its time limit
 * (its `timeLimitSec`, else 10 minutes): it is reported failed, the processes it started (this
 * process's children: kernels, databases) are stopped so that they do not weigh on the next
 * benchmark's figures, and the next one runs. The caller decides the exit code.
 */
export async function runBenches(dir: string, filters: string[], print: (line: string) => void = console.log, options: RunOptions = {}): Promise<BenchOutcome[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.bench.ts')).sort()
    .filter((file) => !filters.length || filters.some((f) => file.includes(f)));
  const outcomes: BenchOutcome[] = [];
  for (const file of files) {
    print(`\n=== ${file} ===`);
    const started = performance.now();
    try {
      const module = await import(pathToFileURL(join(dir, file)).href) as BenchModule;
      if (typeof module.run !== 'function') throw new Error(`${file} exports no run() function`);
      await withinLimit(module.run(), limitOf(module, options), options.graceMs ?? CLEANUP_GRACE_MS);
      outcomes.push({ file, ok: true, seconds: (performance.now() - started) / 1000 });
    } catch (error) {
      const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
      print(`\n${file} FAILED: ${error instanceof TimeLimitReached ? error.message : text}`);
      outcomes.push({ file, ok: false, seconds: (performance.now() - started) / 1000, error: error instanceof Error ? error.message : String(error) });
    }
  }
  print(summaryOf(outcomes, filters));
  return outcomes;
}

function limitOf(module: BenchModule, options: RunOptions): number {
  if (options.limitMs !== undefined) return options.limitMs;
  const own = typeof module.timeLimitSec === 'function' ? module.timeLimitSec() : module.timeLimitSec;
  return own !== undefined && Number.isFinite(own) && own > 0 ? own * 1000 : (options.defaultLimitMs ?? DEFAULT_TIME_LIMIT_MS);
}

/** The benchmark's end, or a TimeLimitReached once `limitMs` has passed (its processes then stopped, and its end awaited a little while). */
async function withinLimit(running: Promise<void>, limitMs: number, graceMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<'limit'>((resolve) => { timer = setTimeout(() => resolve('limit'), limitMs); });
  const ended = running.then(() => 'ended' as const);
  try {
    if (await Promise.race([ended, limit]) === 'ended') return;
  } finally {
    clearTimeout(timer);
  }
  const stopped = await stopChildren();
  // Its own cleanup (finally blocks) runs as its processes go; it is not waited for past the grace.
  await Promise.race([ended.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, graceMs).unref())]);
  throw new TimeLimitReached(`ran past its time limit of ${Math.round(limitMs / 1000)} s and was stopped${stopped ? ` (${stopped} process(es) it started were sent SIGINT)` : ''}`);
}

/** Sends SIGINT (a kernel's and PostgreSQL's fast stop) to this process's children; answers how many. Linux only (elsewhere none are found). */
async function stopChildren(): Promise<number> {
  const pids = new Set<number>();
  const tasks = await readdir(`/proc/${process.pid}/task`).catch(() => [] as string[]);
  for (const task of tasks) {
    const text = await readFile(`/proc/${process.pid}/task/${task}/children`, 'utf8').catch(() => '');
    for (const pid of text.split(/\s+/).filter(Boolean)) pids.add(Number(pid));
  }
  for (const pid of pids) {
    try { process.kill(pid, 'SIGINT'); } catch { /* already gone */ }
  }
  return pids.size;
}

/** One line per benchmark (ok or failed, with the first line of its error), so the end of a long log says what broke. */
export function summaryOf(outcomes: BenchOutcome[], filters: string[]): string {
  if (!outcomes.length) return `\nNo benchmark matches ${filters.map((f) => `"${f}"`).join(', ')}`;
  const failed = outcomes.filter((o) => !o.ok).length;
  const lines = outcomes.map((o) => `  ${o.ok ? 'ok    ' : 'FAILED'} ${o.file} (${o.seconds.toFixed(0)} s)${o.ok ? '' : `: ${(o.error ?? '').split('\n')[0]}`}`);
  return `\n=== ${outcomes.length - failed} of ${outcomes.length} benchmarks ran${failed ? `, ${failed} failed` : ''} ===\n${lines.join('\n')}`;
}
