import type { Server } from 'node:http';
import type { Logger } from 'pino';
import { ActivityLog } from './activity/activity-log.ts';
import { assertSharedAgentSecret } from './auth/shared-secret-check.ts';
import { AgentJwt } from './auth/agent-jwt.ts';
import { AuthCache, NOTIFY_SQL } from './auth/auth-cache.ts';
import { LastUsedRecorder } from './auth/last-used.ts';
import { ActorResolver } from './auth/resolve-actor.ts';
import type { KeelConfig } from './config/schema.ts';
import { CompanyCache } from './db/company-cache.ts';
import { Database } from './db/database.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from './db/embedded-postgres.ts';
import { DataDirLock } from './config/data-dir-lock.ts';
import { startBackupSchedule } from './backup/backup-schedule.ts';
import { ensureDatabase } from './db/ensure-database.ts';
import { HealthChecks } from './http/health.ts';
import { isDatabaseUnavailable } from './db/connection-errors.ts';
import { connectionTimeouts } from './http/connection-limits.ts';
import { listenEarly, type EarlyListener } from './http/early-listener.ts';
import { EventBus } from './events/event-bus.ts';
import { KernelPoints } from './points/kernel-points.ts';
import { PortabilityParts } from './portability/parts.ts';
import { buildKernelRouter, createApp } from './http/app.ts';
import { ServedHosts } from './http/served-hosts.ts';
import { consoleAssets, loadConsoleAssets } from './http/console-assets.ts';
import { ExtensionHost } from './host/extension-host.ts';
import { pluginRouteDispatch } from './host/contributions/route-dispatch.ts';
import { isProxyRoute } from './host/contributions/route-proxy.ts';
import { SelfRequest } from './mcp/self-request.ts';
import { startContributionPoints } from './host/contributions/contribution-points.ts';
import { createLogger } from './logger.ts';
import { routeModules } from './routes.ts';
import { RunLedger } from './runs/run-ledger.ts';
import { Executor } from './executions/executor.ts';
import { ModelGateway } from './gateway/model-gateway.ts';
import { Keyring } from './vault/keyring.ts';
import { Vault } from './vault/vault.ts';
import { ResourceDirectory } from './tenancy/resource-resolvers.ts';
import type { KernelServices } from './services.ts';

export interface RunningKernel {
  services: KernelServices;
  /** The extension host: the kernel's core never reaches it; routes and tests are handed it here. */
  host: ExtensionHost;
  server: Server;
  url: string;
  databaseUrl: string;
  embedded: EmbeddedDatabase | null;
  /** Drains HTTP, then stops the job engine, the plugin workers, the kernel's services and PostgreSQL, in that order. */
  stop(): Promise<void>;
  /** Cuts the HTTP drain of a stop short (a repeated stop signal): requests in flight are closed now, the rest still stops in order. */
  hurry(): void;
}

export interface StartOptions {
  log?: Logger;
  /** Skip listening on config.server.port and listen on this one instead (tests use 0). */
  port?: number;
  /** Install and enable the first-party plugins of plugins/ on a fresh instance (default true). */
  bootstrapFirstParty?: boolean;
  /** Where first-party plugins are found (default: the project's plugins/ folder). */
  firstPartyDir?: string;
  /** Route modules added after the kernel's own (benchmarks mount their baseline routes this way). */
  extraRouteModules?: import('./http/app.ts').RouteModule[];
  /** How long a stop waits for requests in flight before it closes their connections (default 10 s). */
  drainMs?: number;
}

const DEFAULT_DRAIN_MS = 10_000;
const PART_STOP_TIMEOUT_MS = 10_000;

/**
 * data-directory lock -> HTTP listen -> database -> kernel services -> extension host ->
 * ready. The port is taken before anything else starts, so a port in use fails at once
 * with nothing to undo; until the kernel is ready the server answers 503 `starting`.
 * Whatever a failed start had started is stopped again, in reverse order, before it throws.
 */
export async function startKernel(config: KeelConfig, options: StartOptions = {}): Promise<RunningKernel> {
  const log = options.log ?? createLogger(config.logging.level);
  const started = new StartedParts(log);
  let listener: EarlyListener | undefined;
  try {
    const lock = await DataDirLock.acquire(config.dataDir);
    started.add('data directory lock', () => lock.release());
    listener = await listenEarly(config.server.host, options.port ?? config.server.port, connectionTimeouts(config));
    let embedded: EmbeddedDatabase | null = null;
    let databaseUrl = config.database.url;
    if (!databaseUrl) {
      embedded = await startEmbeddedPostgres(config.dataDir, log);
      started.add('PostgreSQL', () => embedded!.stop());
      databaseUrl = embedded.url.replace(/\/postgres$/, '/keel');
      await ensureDatabase(embedded.url, 'keel');
    }
    const db = await Database.connect(databaseUrl, { poolSize: config.database.poolSize, log });
    started.add('database pool', () => db.close());
    const applied = await db.migrate();
    if (applied.length) log.info({ migrations: applied }, 'applied kernel migrations');
    const services = await buildServices(config, log, db, databaseUrl, started);
    // The names this instance answers to: requests are refused otherwise, and an address handed to a remote side as Keel's must be one.
    const served = new ServedHosts({
      bindHost: config.server.host, port: Number(new URL(listener.url).port),
      publicBaseUrl: config.auth.publicBaseUrl, allowedHostnames: config.server.allowedHostnames,
    });
    // Before plugins start (they may start executions) and stopped after them, before the pool.
    await services.executions.start(databaseUrl, listener.url, served);
    started.add('executions', () => services.executions.stop());
    services.gateway.start();
    started.add('model gateway', () => services.gateway.stop());
    const host = new ExtensionHost(services, { hostSecret: services.jwt.derive('plugin-database-roles'), databaseUrl });
    services.executions.streams = host.streams;
    started.add('plugin workers', () => host.stop());
    // MCP's core tools call the kernel's own routes through the address it listens on.
    const self = new SelfRequest();
    self.setUrl(listener.url);
    const router = buildKernelRouter(services, [...routeModules(host, self), ...(options.extraRouteModules ?? [])]);
    host.attachKernelRouter(router);
    const contributions = await startContributionPoints(host, { databaseUrl });
    started.add('job engine', () => contributions.stop());
    await host.start({ bootstrapFirstParty: options.bootstrapFirstParty ?? true, firstPartyDir: options.firstPartyDir });
    const backupSchedule = startBackupSchedule({ db, config, log });
    started.add('backup schedule', () => backupSchedule.stop());
    const app = createApp(services, router, {
      served, after: [pluginRouteDispatch(host), consoleAssets(loadConsoleAssets())],
      answersOwnRefusals: (method, path) => isProxyRoute(host, method, path),
    });
    const http = listener;
    http.serve(app.callback());
    await lock.listening(http.url);
    let stopping: Promise<void> | undefined;
    return {
      services, host, server: http.server, url: http.url, databaseUrl, embedded,
      stop() {
        stopping ??= started.stopAll(options.drainMs ?? DEFAULT_DRAIN_MS, http);
        return stopping;
      },
      hurry() {
        // Only once the stop has begun: the server no longer accepts, so closing is final.
        if (stopping) http.server.closeAllConnections();
      },
    };
  } catch (error) {
    await started.stopAll(0, listener);
    throw error;
  }
}

/**
 * What a start has brought up, stopped in reverse order. The HTTP server goes first
 * whatever its place (requests drain while everything they need still runs), and one
 * part that fails to stop does not keep the others running.
 */
class StartedParts {
  private readonly parts: Array<{ name: string; stop: () => Promise<void> | void }> = [];
  private readonly log: Logger;
  constructor(log: Logger) { this.log = log; }

  add(name: string, stop: () => Promise<void> | void): void {
    this.parts.push({ name, stop });
  }

  async stopAll(drainMs: number, listener?: EarlyListener): Promise<void> {
    if (listener) {
      await listener.close(drainMs);
      this.log.info({ part: 'HTTP server' }, 'stopped HTTP server');
    }
    for (const part of this.parts.reverse()) {
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timed out'>((resolve) => { timer = setTimeout(() => resolve('timed out'), PART_STOP_TIMEOUT_MS); });
      try {
        // A part that hangs (a pool waiting for a connection still checked out) is left behind
        // after the timeout: a stop, and above all a failed start, must always end the process.
        const outcome = await Promise.race([Promise.resolve().then(part.stop), timedOut]);
        if (outcome === 'timed out') this.log.warn({ part: part.name, timeoutMs: PART_STOP_TIMEOUT_MS }, `${part.name} did not stop in time; going on`);
        else this.log.info({ part: part.name }, `stopped ${part.name}`);
      } catch (error) {
        this.log.warn({ err: error, part: part.name }, `could not stop ${part.name} cleanly`);
      } finally {
        clearTimeout(timer);
      }
    }
    this.parts.length = 0;
  }
}

async function buildServices(config: KeelConfig, log: Logger, db: Database, databaseUrl: string, started: StartedParts): Promise<KernelServices> {
  const authCache = new AuthCache();
  await authCache.listen(databaseUrl, log);
  started.add('credential cache listener', () => authCache.close());
  const jwt = await AgentJwt.load(config.dataDir, config.auth.agentJwtSecret, config.auth.agentJwtTtlSeconds);
  await assertSharedAgentSecret(db, jwt);
  const lastUsed = new LastUsedRecorder(db, log);
  lastUsed.start();
  started.add('last-used recorder', () => lastUsed.stop());
  db.afterEveryCommit = () => authCache.sync();
  db.companyCache = new CompanyCache({
    get: (id) => authCache.companies.get(id),
    set: (id, row, since) => authCache.companies.set(id, row, since),
    epoch: () => authCache.epoch,
  });
  const keyring = await Keyring.open(config.dataDir);
  started.add('key watcher', keyring.watch());
  const invalidate: KernelServices['invalidate'] = async (tx, invalidation) => {
    await tx.query(NOTIFY_SQL, [JSON.stringify(invalidation)]);
    tx.afterCommit(() => authCache.apply(invalidation));
  };
  const events = new EventBus(log);
  const runs = new RunLedger({ db, jwt, cache: authCache, invalidate, events });
  const resolver = new ActorResolver({ config, db, cache: authCache, jwt, lastUsed, liveRun: (runId) => runs.liveRun(runId) });
  const health = new HealthChecks();
  health.register('database', async () => {
    const started = performance.now();
    try {
      await db.query('select 1');
      return { status: 'up', latencyMs: Math.round((performance.now() - started) * 10) / 10 };
    } catch (error) {
      return { status: 'down', detail: isDatabaseUnavailable(error) ? 'unreachable' : 'query failed' };
    }
  }, { readiness: true });
  health.register('notifications', async () => authCache.listenerState === 'listening'
    ? { status: 'up' }
    : { status: 'degraded', detail: 'reconnecting to the database; credential caching is off until it listens again' });
  const vault = new Vault(keyring, log);
  const activity = new ActivityLog();
  return {
    config, log, db, authCache, resolver, jwt, lastUsed, keyring, runs, invalidate, health, vault, activity, events,
    executions: new Executor({ config, log, db, events, runs, vault, activity }),
    gateway: new ModelGateway({ config, log, db, events, vault }),
    points: new KernelPoints(),
    portability: new PortabilityParts(),
    resources: new ResourceDirectory(),
  };
}

