import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * The configuration `keel plugin test <folder>` runs a plugin's own tests with (`--root` is
 * the plugin folder). No database is started: sdk/testing needs none. Isolates need
 * `--no-node-snapshot` in the test processes; Vite's cache stays in the project's node_modules
 * instead of appearing inside the plugin folder. In the checkout, `@keel/sdk/*` resolves to the
 * SDK's TypeScript sources (the `keel-source` condition of sdk/package.json's exports); an
 * installed SDK resolves to its built dist/, as Node does not strip types under node_modules.
 */
const cache = (name: string) => fileURLToPath(new URL(`../../node_modules/.cache/keel-plugin-tests/${name}`, import.meta.url));
const installed = fileURLToPath(import.meta.url).includes('/node_modules/');

export default defineConfig({
  cacheDir: cache('vite'),
  ssr: installed ? {} : { resolve: { conditions: ['keel-source'] } },
  test: {
    fsModuleCachePath: cache('modules'),
    include: ['**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**'],
    pool: 'forks',
    execArgv: ['--no-node-snapshot'],
    testTimeout: 30_000,
  },
});
