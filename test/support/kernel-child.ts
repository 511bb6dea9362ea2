import { join } from 'node:path';
import { loadConfig } from '../../kernel/config/load.ts';
import { startKernel } from '../../kernel/kernel.ts';
import { createLogger } from '../../kernel/logger.ts';

/**
 * A kernel in a process of its own, as `kernel/main.ts` runs it but without the first-party
 * plugins (tests that kill it with SIGKILL need only their own fixtures). Configured by the
 * environment (KEEL_HOME, DATABASE_URL, ...); prints the lines startServer waits for.
 */
const config = loadConfig({ env: process.env, overrides: { server: { host: '127.0.0.1', port: 0, exposure: 'private' } } });
const kernel = await startKernel(config, { log: createLogger(config.logging.level), port: 0, firstPartyDir: join(config.dataDir, 'no-first-party-plugins') });
console.log(`Keel is listening on ${kernel.url} (test child)`);
console.log(`Data directory: ${config.dataDir}`);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => { void kernel.stop().then(() => process.exit(0), () => process.exit(1)); });
}
