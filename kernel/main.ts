import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config/load.ts';
import { createLogger } from './logger.ts';
import { startKernel, type RunningKernel } from './kernel.ts';
import { releaseStartupMemory } from './startup-memory.ts';
import { installProcessGuards } from './process-guards.ts';
import { onStopSignals } from './stop-signals.ts';

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

/**
 * SIGINT (Ctrl-C), SIGTERM and SIGHUP stop the server in order: HTTP drains, then the job
 * engine, the plugin workers and PostgreSQL. The handlers are installed before anything starts,
 * so a signal during start-up stops what was started once the start completes, instead of
 * ending the process with PostgreSQL and workers left running. A repeated signal (a process
 * group's SIGTERM plus npm's forward of it, or a second Ctrl-C) hurries the stop and never
 * skips it (stop-signals.ts).
 */
let kernel: RunningKernel | undefined;
let stopRequested: NodeJS.Signals | null = null;
let hurried = false;
onStopSignals({
  stop(signal) {
    stopRequested = signal;
    console.log(`Received ${signal}, stopping`);
    if (kernel) void stop(kernel);
  },
  hurry(signal) {
    console.log(`Received ${signal} again: cutting requests in flight short; the plugin workers and PostgreSQL still stop before Keel exits`);
    hurried = true;
    kernel?.hurry();
  },
});

function stop(running: RunningKernel): Promise<never> {
  return running.stop().then(() => {
    console.log('Keel stopped');
    process.exit(0);
  }, (error: Error) => {
    console.error(`Keel did not stop cleanly: ${error.message}`);
    process.exit(1);
  });
}

try {
  kernel = await startKernel(config, { log });
} catch (error) {
  // One plain line that says why; the details (a stack) only at debug level.
  log.debug({ err: error }, 'start-up failed');
  console.error(`Keel could not start: ${(error as Error).message}`);
  process.exit(1);
}

// From here on a stray error is logged, not fatal; a start that fails still ends the process.
installProcessGuards(log);

if (stopRequested) {
  const stopped = stop(kernel);
  if (hurried) kernel.hurry();
  await stopped;
} else {
  const where = kernel.embedded ? `embedded PostgreSQL in ${kernel.embedded.clusterDir}` : 'external PostgreSQL (DATABASE_URL)';
  console.log(`Keel is listening on ${kernel.url} (mode ${config.deploymentMode}, ${config.server.exposure} exposure)`);
  console.log(`Data directory: ${config.dataDir}; database: ${where}`);
  // Once the first requests had their turn: a collection of the whole heap pauses the process.
  setTimeout(releaseStartupMemory, 200).unref();
}
