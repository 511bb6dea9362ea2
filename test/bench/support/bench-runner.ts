import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export interface BenchOutcome { file: string; ok: boolean; seconds: number; error?: string }

/**
 * Runs the benchmarks of a folder (`*.bench.ts`, in name order; with filters, those whose file
 * name contains one of them), one after the other, each module's `run()`. A benchmark that
 * throws (or has no `run`) is reported with its error and the next one still runs: one broken
 * benchmark must not hide the figures of the others. The caller decides the exit code.
 */
export async function runBenches(dir: string, filters: string[], print: (line: string) => void = console.log): Promise<BenchOutcome[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.bench.ts')).sort()
    .filter((file) => !filters.length || filters.some((f) => file.includes(f)));
  const outcomes: BenchOutcome[] = [];
  for (const file of files) {
    print(`\n=== ${file} ===`);
    const started = performance.now();
    try {
      const module = await import(pathToFileURL(join(dir, file)).href) as { run?: () => Promise<void> };
      if (typeof module.run !== 'function') throw new Error(`${file} exports no run() function`);
      await module.run();
      outcomes.push({ file, ok: true, seconds: (performance.now() - started) / 1000 });
    } catch (error) {
      const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
      print(`\n${file} FAILED: ${text}`);
      outcomes.push({ file, ok: false, seconds: (performance.now() - started) / 1000, error: error instanceof Error ? error.message : String(error) });
    }
  }
  print(summaryOf(outcomes, filters));
  return outcomes;
}

/** One line per benchmark (ok or failed, with the first line of its error), so the end of a long log says what broke. */
export function summaryOf(outcomes: BenchOutcome[], filters: string[]): string {
  if (!outcomes.length) return `\nNo benchmark matches ${filters.map((f) => `"${f}"`).join(', ')}`;
  const failed = outcomes.filter((o) => !o.ok).length;
  const lines = outcomes.map((o) => `  ${o.ok ? 'ok    ' : 'FAILED'} ${o.file} (${o.seconds.toFixed(0)} s)${o.ok ? '' : `: ${(o.error ?? '').split('\n')[0]}`}`);
  return `\n=== ${outcomes.length - failed} of ${outcomes.length} benchmarks ran${failed ? `, ${failed} failed` : ''} ===\n${lines.join('\n')}`;
}
