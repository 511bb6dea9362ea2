import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type pg from 'pg';
import { ActivityLog } from './activity/activity-log.ts';
import { AgentJwt } from './auth/agent-jwt.ts';
import { AuthCache, NOTIFY_SQL } from './auth/auth-cache.ts';
import { LastUsedRecorder } from './auth/last-used.ts';
import { ActorResolver } from './auth/resolve-actor.ts';
import type { KeelConfig } from './config/schema.ts';
import { Database } from './db/database.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from './db/embedded-postgres.ts';
import { EventBus } from './events/event-bus.ts';
import { buildKernelRouter, createApp } from './http/app.ts';
import { ExtensionHost } from './host/extension-host.ts';
import { pluginRouteDispatch } from './host/contributions/route-dispatch.ts';
import { startContributionPoints, type ContributionPoints } from './host/contributions/contribution-points.ts';
import { createLogger } from './logger.ts';
import { releaseAfterFailedStart } from './start-failure.ts';
import { kernelRouteModules } from './routes.ts';
import { RunLedger } from './runs/run-ledger.ts';
import { Keyring } from './vault/keyring.ts';
import { Vault } from './vault/vault.ts';
import type { KernelServices } from './services.ts';

export interface RunningKernel {
  services: KernelServices;
  server: Server;
  url: string;
  databaseUrl: string;
  embedded: EmbeddedDatabase | null;
  stop(): Promise<void>;
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
}

/** config -> database -> kernel services -> HTTP listen. The extension host joins here later. */
export async function startKernel(config: KeelConfig, options: StartOptions = {}): Promise<RunningKernel> {
  const log = options.log ?? createLogger(config.logging.level);
  let embedded: EmbeddedDatabase | null = null;
  let databaseUrl = config.database.url;
  if (!databaseUrl) {
    embedded = await startEmbeddedPostgres(config.dataDir, log);
    databaseUrl = embedded.url.replace(/\/postgres$/, '/keel');
    await ensureDatabase(embedded.url, 'keel');
  }
  let db: Database | undefined;
  let contributions: ContributionPoints | undefined;
  // What a failed start must release (below), beyond the database and contribution points.
  const started: { services?: KernelServices; stopWatchingKeys?: () => void } = {};
  try {
    db = await Database.connect(databaseUrl, { poolSize: config.database.poolSize, log });
    const applied = await db.migrate();
    if (applied.length) log.info({ migrations: applied }, 'applied kernel migrations');
    const services = await buildServices(config, log, db);
    const stopWatchingKeys = services.keyring.watch();
    Object.assign(started, { services, stopWatchingKeys });
    const host = new ExtensionHost(services, { hostSecret: services.jwt.derive('plugin-database-roles'), databaseUrl });
    services.extensionHost = host;
    const router = buildKernelRouter(services, [...kernelRouteModules, ...(options.extraRouteModules ?? [])]);
    host.attachKernelRouter(router);
    contributions = await startContributionPoints(host, { databaseUrl });
    await host.start({ bootstrapFirstParty: options.bootstrapFirstParty ?? true, firstPartyDir: options.firstPartyDir });
    const app = createApp(services, router, { after: [pluginRouteDispatch(host)] });
    const server = createServer(app.callback());
    server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? config.server.port, config.server.host, () => resolve());
    });
    const address = server.address() as AddressInfo;
    const hostname = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    const url = `http://${hostname}:${address.port}`;
    let stopping: Promise<void> | undefined;
    return {
      services, server, url, databaseUrl, embedded,
      stop() {
        stopping ??= (async () => {
          await new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections(); });
          stopWatchingKeys();
          await contributions!.stop();
          await host.stop();
          await services.lastUsed.stop();
          await services.authCache.close();
          await db!.close();
          await embedded?.stop();
        })();
        return stopping;
      },
    };
  } catch (error) {
    // Everything started so far, or the process stays up: the listeners' connections (checked
    // out of the pool) keep the pool from closing, and plugin workers keep the process alive.
    await releaseAfterFailedStart(log, [
      ['contribution points', () => contributions?.stop()],
      ['extension host', () => started.services?.extensionHost?.stop()],
      ['key watch', () => started.stopWatchingKeys?.()],
      ['last-used recorder', () => started.services?.lastUsed.stop()],
      ['auth cache listener', () => started.services?.authCache.close()],
      ['database pool', () => db?.close()],
      ['embedded PostgreSQL', () => embedded?.stop()],
    ]);
    throw error;
  }
}

async function buildServices(config: KeelConfig, log: Logger, db: Database): Promise<KernelServices> {
  const authCache = new AuthCache();
  const pool = await (db.orm.em.getConnection() as unknown as { getNativeClient(): Promise<pg.Pool> }).getNativeClient();
  await authCache.listen(pool, log);
  const jwt = await AgentJwt.load(config.dataDir, config.auth.agentJwtSecret, config.auth.agentJwtTtlSeconds);
  const lastUsed = new LastUsedRecorder(db, log);
  lastUsed.start();
  const resolver = new ActorResolver({ config, db, cache: authCache, jwt, lastUsed });
  db.afterEveryCommit = () => authCache.sync();
  db.companyCache = {
    get: (id) => authCache.companies.get(id),
    set: (id, row, since) => authCache.companies.set(id, row, since),
    epoch: () => authCache.epoch,
  };
  const keyring = await Keyring.open(config.dataDir);
  const invalidate: KernelServices['invalidate'] = async (tx, invalidation) => {
    await tx.query(NOTIFY_SQL, [JSON.stringify(invalidation)]);
    tx.afterCommit(() => authCache.apply(invalidation));
  };
  const runs = new RunLedger({ db, jwt, cache: authCache, invalidate });
  resolver.runLiveness = (runId, agentId, companyId) => runs.isLive(runId, agentId, companyId);
  return {
    config, log, db, authCache, resolver, jwt, lastUsed, keyring, runs, invalidate,
    vault: new Vault(keyring, log),
    activity: new ActivityLog(),
    events: new EventBus(log),
  };
}

async function ensureDatabase(adminUrl: string, name: string): Promise<void> {
  const { default: pgModule } = await import('pg');
  const client = new pgModule.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const exists = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (exists.rowCount === 0) await client.query(`create database ${name}`);
  } finally {
    await client.end();
  }
}
