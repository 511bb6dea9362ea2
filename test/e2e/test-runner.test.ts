import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/**
 * `npm test` must fail when a test fails or an error escapes a test: the project's own
 * configuration is run over fixture files in a child vitest, and its exit code is checked.
 */
function runFixture(name: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const env: NodeJS.ProcessEnv = { ...process.env };
    // A child run must neither write the CI report nor believe it is a worker of this run.
    delete env.CI;
    for (const key of Object.keys(env)) if (key.startsWith('VITEST')) delete env[key];
    const child = spawn(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', '--config', 'test/e2e/fixtures/runner/vitest.config.ts', `test/e2e/fixtures/runner/${name}.fixture.ts`], {
      env, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    child.once('exit', (code) => resolve({ code, output }));
  });
}

describe('the test runner', () => {
  it('exits 0 when every test passes', async () => {
    const run = await runFixture('passing');
    expect(run.code, run.output).toBe(0);
  }, 120_000);

  it('exits non-zero when a test fails', async () => {
    const run = await runFixture('failing');
    expect(run.output).toMatch(/1 failed/);
    expect(run.code, run.output).not.toBe(0);
  }, 120_000);

  it('exits non-zero when an error escapes a passing test', async () => {
    const run = await runFixture('unhandled');
    expect(run.output).toMatch(/1 passed/);
    expect(run.output).toMatch(/unhandled on purpose/);
    expect(run.code, run.output).not.toBe(0);
  }, 120_000);
});
