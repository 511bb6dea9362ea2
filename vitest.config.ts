import { defineConfig } from 'vitest/config';
import { workerUnitsVitePlugin } from './kernel/host/capabilities/worker-units-module.ts';

export default defineConfig({
  // The worker's list of capability folders is made at build time (kernel/host/capabilities/worker-units-module.ts).
  plugins: [workerUnitsVitePlugin()],
  // `@keel/sdk/*` resolves through the workspace to the SDK's TypeScript sources (sdk/package.json).
  ssr: { resolve: { conditions: ['keel-source'] } },
  test: {
    include: ['test/**/*.test.ts', 'plugins/**/*.test.ts', 'examples/**/*.test.ts', 'sdk/**/*.test.ts'],
    // One embedded PostgreSQL per test run; every test file gets its own database cloned from a migrated template.
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    execArgv: ['--no-node-snapshot'],
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 120_000,
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: '.vitest-report.json' },
  },
});
