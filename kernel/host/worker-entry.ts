import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type BuildOptions } from 'esbuild';
import { bundling } from '../../sdk/build/bundler.ts';
import { workerUnitsPlugin } from './capabilities/worker-units-module.ts';
import { REPO_ROOT } from './plugin-sources.ts';

const SOURCE = fileURLToPath(new URL('./worker/worker-main.ts', import.meta.url));
let entry: Promise<string> | null = null;

/**
 * How the worker is bundled: every capability folder's worker.ts is found when the bundle is
 * built (capabilities/worker-units-module.ts). test/host/capability-servers.test.ts builds it
 * the same way to check what the bundle holds.
 */
export function workerBundleOptions(): BuildOptions & { write: false } {
  return {
    entryPoints: [SOURCE], bundle: true, platform: 'node', format: 'esm', target: 'node24', write: false,
    external: ['isolated-vm', 'pg', 'pg-native'], logLevel: 'silent', legalComments: 'none', plugins: [workerUnitsPlugin()],
  };
}

/**
 * The worker's entry script. Workers run from one pre-bundled JavaScript file rather than
 * from TypeScript sources: a process that never loads the type stripper starts faster and
 * keeps about 30 MiB less resident, which every enabled plugin pays. The bundle lives under
 * node_modules/.cache so that `pg` and `isolated-vm` resolve from the project.
 */
export function workerEntry(): Promise<string> {
  entry ??= (async () => {
    const dir = join(REPO_ROOT, 'node_modules', '.cache', 'keel');
    await mkdir(dir, { recursive: true });
    const result = await bundling(() => build(workerBundleOptions()));
    const file = join(dir, 'plugin-worker.mjs');
    const temp = `${file}.${process.pid}.${Date.now()}.tmp`;
    await writeFile(temp, result.outputFiles[0]!.text);
    await rename(temp, file);
    return file;
  })().catch((error) => { entry = null; throw error; });
  return entry;
}
