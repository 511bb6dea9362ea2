import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ParsedLine, ToolDriver } from '../../../plugins/coding-agents/src/tools/driver.ts';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures', 'coding-agents');

/** One captured run of a real tool (test/fixtures/coding-agents/capture-opencode-pi.ts wrote it). */
export interface CapturedRun {
  /** The stdout lines that are JSON objects with a string `type`: what arrives as execution outputs. */
  events: Array<Record<string, unknown>>;
  stdout: string;
  stderr: string;
  exitCode: number | null;
  signal: string | null;
  args: string[];
}

export function capturedRun(tool: 'opencode' | 'pi', scenario: string): CapturedRun {
  const read = (suffix: string) => readFileSync(join(fixtures, tool, `${scenario}.${suffix}`), 'utf8');
  const stdout = read('stdout.jsonl');
  const exit = JSON.parse(read('exit.txt')) as { exitCode: number | null; signal: string | null; args: string[] };
  const events = stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((event) => typeof event.type === 'string');
  return { events, stdout, stderr: read('stderr.txt'), ...exit };
}

/** Every line of a run through one fresh parser, as the core feeds them. */
export function parseRun(driver: ToolDriver, run: CapturedRun): ParsedLine[] {
  const parser = driver.parser();
  return run.events.map((event) => parser.line(event));
}

/** The log's tail as the core hands it to classify: the run's output, both streams. */
export function logTail(run: CapturedRun): string {
  return `${run.stdout}${run.stderr}`;
}
