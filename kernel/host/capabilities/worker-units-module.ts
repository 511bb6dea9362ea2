import { fileURLToPath } from 'node:url';
import type { Plugin } from 'esbuild';
import { CAPABILITY_FOLDERS, unitFolders } from './folders.ts';

/**
 * The worker's list of capability folders, made when the worker is bundled. The worker process
 * runs from one esbuild bundle (kernel/host/worker-entry.ts), which cannot import files found at
 * run time, and must not load the kernel side of a capability. So worker-units.ts imports this
 * virtual module, which the build resolves to a static import of every folder's worker.ts found
 * at build time (and nothing else): adding a folder edits no list, and the bundle holds only
 * worker.ts files. Its type is declared in keel-capability-worker-units.d.ts. Tests that import the worker
 * code directly get the same module from vitest.config.ts (workerUnitsVitePlugin).
 */
export const WORKER_UNITS_MODULE = 'keel:capability-worker-units';

/** The module's text: one static import per folder holding a worker.ts, with its folder name. */
export function workerUnitsSource(): string {
  const folders = unitFolders('worker');
  const imports = folders.map((folder, index) => `import * as unit${index} from ${JSON.stringify(fileURLToPath(new URL(`${folder}/worker.ts`, CAPABILITY_FOLDERS)))};`);
  const entries = folders.map((folder, index) => `  { folder: ${JSON.stringify(folder)}, module: unit${index} },`);
  return `${imports.join('\n')}\nexport const WORKER_UNIT_MODULES = [\n${entries.join('\n')}\n];\n`;
}

/** The esbuild plugin the worker's bundle is built with. */
export function workerUnitsPlugin(): Plugin {
  return {
    name: 'keel-capability-worker-units',
    setup(build) {
      build.onResolve({ filter: /^keel:capability-worker-units$/ }, (args) => ({ path: args.path, namespace: 'keel-capability-worker-units' }));
      build.onLoad({ filter: /.*/, namespace: 'keel-capability-worker-units' }, () => ({
        contents: workerUnitsSource(), loader: 'js', resolveDir: fileURLToPath(CAPABILITY_FOLDERS),
      }));
    },
  };
}

/** The same module for vitest (a Vite plugin: resolveId and load), for tests that import worker code. */
export function workerUnitsVitePlugin(): { name: string; enforce: 'pre'; resolveId(id: string): string | undefined; load(id: string): string | undefined } {
  const resolved = `\0${WORKER_UNITS_MODULE}`;
  return {
    name: 'keel-capability-worker-units',
    enforce: 'pre',
    resolveId: (id) => (id === WORKER_UNITS_MODULE ? resolved : undefined),
    load: (id) => (id === resolved ? workerUnitsSource() : undefined),
  };
}
