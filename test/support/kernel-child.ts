import { join } from 'node:path';
import { loadConfig } from '../../kernel/config/load.ts';
import { startKernel } from '../../kernel/kernel.ts';
import { createLogger } from '../../kernel/logger.ts';

/**
 * A kernel in a process of its own, as `kernel/main.ts` runs it but without the first-party
 * plugins (tests that kill it with SIGKILL need only their own fixtures) unless
 * KEEL_TEST_FIRST_PARTY_DIR names them. Configured by the
 * environment (KEEL_HOME, DATABASE_URL, ...); prints the lines startServer waits for.
 */
const config = loadConfig({ env: process.env, overrides: { server: { host: '127.0.0.1', port: 0, exposure: 'private' } } });
// KEEL_TEST_FIRST_PARTY_DIR: run the first-party plugins after all (a runtime test kills a process that runs agents).
const firstPartyDir = process.env.KEEL_TEST_FIRST_PARTY_DIR ?? join(config.dataDir, 'no-first-party-plugins');
const kernel = await startKernel(config, { log: createLogger(config.logging.level), port: 0, firstPartyDir });
console.log(`Keel is listening on ${kernel.url} (test child)`);
console.log(`Data directory: ${config.dataDir}`);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => { void kernel.stop().then(() => process.exit(0), () => process.exit(1)); });
}
