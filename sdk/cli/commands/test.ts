import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CliError, userPath, type GlobalOptions } from '../output.ts';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const VITEST = join(REPO_ROOT, 'node_modules', 'vitest', 'vitest.mjs');
const CONFIG = join(REPO_ROOT, 'sdk', 'testing', 'vitest.config.ts');

/**
 * Runs the plugin's own tests (`*.test.ts` in its folder) with the configuration sdk/testing
 * needs: no database, isolates allowed. The exit code is vitest's.
 */
export async function testCommand(folder: string, options: GlobalOptions): Promise<void> {
  const root = userPath(folder);
  if (!existsSync(join(root, 'plugin.json'))) throw new CliError('plugin_not_found', `No plugin.json in ${root}`);
  const args = [VITEST, 'run', '--config', CONFIG, '--root', root];
  if (options.json) args.push('--reporter=json');
  const code = await new Promise<number>((resolvePromise, reject) => {
    const child = spawn(process.execPath, args, { stdio: 'inherit', cwd: root, env: process.env });
    child.once('error', reject);
    child.once('exit', (exitCode, signal) => resolvePromise(exitCode ?? (signal ? 1 : 0)));
  });
  if (code !== 0) process.exitCode = code;
}
