import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config/load.ts';
import { createLogger } from './logger.ts';
import { startKernel } from './kernel.ts';
import { installProcessGuards } from './process-guards.ts';

const [major] = process.versions.node.split('.').map(Number);
if ((major ?? 0) < 24) {
  console.error(`Keel needs Node.js 24 or newer (this is ${process.version}). Run it through npm (npm start), which uses the Node.js 24 the project installs.`);
  process.exit(1);
}

const { values } = parseArgs({
  options: {
    port: { type: 'string' },
    host: { type: 'string' },
    'data-dir': { type: 'string' },
    config: { type: 'string' },
    mode: { type: 'string' },
    exposure: { type: 'string' },
    'public-base-url': { type: 'string' },
    'database-url': { type: 'string' },
  },
  strict: true,
});

let config;
try {
  config = loadConfig({
    flags: {
      port: values.port, host: values.host, dataDir: values['data-dir'], config: values.config, mode: values.mode,
      exposure: values.exposure, publicBaseUrl: values['public-base-url'], databaseUrl: values['database-url'],
    },
  });
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(78);
  }
  throw error;
}

const log = createLogger(config.logging.level);
const kernel = await startKernel(config, { log }).catch((error: Error) => {
  log.fatal({ err: error }, `Keel could not start: ${error.message}`);
  process.exit(1);
});

// From here on a stray error is logged, not fatal; a start that fails still ends the process.
installProcessGuards(log);

const where = kernel.embedded ? `embedded PostgreSQL in ${kernel.embedded.clusterDir}` : 'external PostgreSQL (DATABASE_URL)';
console.log(`Keel is listening on ${kernel.url} (mode ${config.deploymentMode}, ${config.server.exposure} exposure)`);
console.log(`Data directory: ${config.dataDir}; database: ${where}`);

let shuttingDown = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (shuttingDown) return;
    shuttingDown = true;
    console.log(`Received ${signal}, stopping`);
    kernel.stop().then(() => process.exit(0), (error: Error) => {
      log.error({ err: error }, 'error while stopping');
      process.exit(1);
    });
  });
}
