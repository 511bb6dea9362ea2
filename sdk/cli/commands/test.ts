import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { CliError, userPath, type GlobalOptions } from '../output.ts';
import { sdkRoot } from '../sdk-root.ts';

const CONFIG = join(sdkRoot(), 'testing', 'vitest.config.ts');

/** vitest's CLI: the plugin project's own (a devDependency of a scaffolded plugin), else the one beside the SDK. */
function vitestBin(root: string): string {
  for (const from of [join(root, 'package.json'), join(sdkRoot(), 'package.json')]) {
    try {
      return join(dirname(createRequire(from).resolve('vitest/package.json')), 'vitest.mjs');
    } catch { /* not installed there */ }
  }
  throw new CliError('vitest_not_found', `vitest is not installed; add it to the plugin's devDependencies (npm install --save-dev vitest) in ${root}`);
}

/**
 * Runs the plugin's own tests (`*.test.ts` in its folder) with the configuration sdk/testing
 * needs: no database, isolates allowed. The exit code is vitest's.
 */
export async function testCommand(folder: string, options: GlobalOptions): Promise<void> {
  const root = userPath(folder);
  if (!existsSync(join(root, 'plugin.json'))) throw new CliError('plugin_not_found', `No plugin.json in ${root}`);
  const args = [vitestBin(root), 'run', '--config', CONFIG, '--root', root];
  if (options.json) args.push('--reporter=json');
  const code = await new Promise<number>((resolvePromise, reject) => {
    const child = spawn(process.execPath, args, { stdio: 'inherit', cwd: root, env: process.env });
    child.once('error', reject);
    child.once('exit', (exitCode, signal) => resolvePromise(exitCode ?? (signal ? 1 : 0)));
  });
  if (code !== 0) process.exitCode = code;
}
