import { randomUUID } from 'node:crypto';
import type { Router } from '@koa/router';
import type { InvocationInfo } from '../../sdk/plugin/context.ts';
import type { PluginManifest } from '../../sdk/plugin/manifest.ts';
import { afterPluginCommit } from '../db/company-cache.ts';
import type { Row } from '../db/database.ts';
import { KeelError, notFound } from '../http/errors.ts';
import type { KernelServices } from '../services.ts';
import { provisionNewCompany } from './managed-agents.ts';
import { Broker } from './broker.ts';
import { kernelRowGrants } from './capabilities/unit.ts';
import { KERNEL_UNITS } from './capabilities/units.ts';
import { LifecycleQueue } from './lifecycle-queue.ts';
import { pluginHealth } from './plugin-health.ts';
import { claimedRoutes, RouteClaims } from './route-claims.ts';
import { buildOrRefuse, PluginChanges } from './plugin-changes.ts';
import { RouteTable } from './contributions/routes.ts';
import { RouteBatchers } from './contributions/route-batcher.ts';
import { signForBridge } from './bridge-signature.ts';
import { operatorNetworkHostsFor, privateNetworkHostsFor } from './network-settings.ts';
import { NotificationListener } from '../db/notification-listener.ts';
import { EVENTS_CHANNEL } from './contributions/events.ts';
import { StreamHub, STREAM_CHANNEL } from './stream-hub.ts';
import { PluginDatabases } from './plugin-databases.ts';
import { hiddenEntitySources } from './hidden-entities.ts';
import { pluginEntityRows } from './plugin-entity-rows.ts';
import { PluginProcess, type InvokeResult } from './plugin-process.ts';
import { WorkerHost } from './worker-host.ts';
import { WorkerProcesses } from './worker-standby.ts';
import { SharedWorkers, sharedWorkerCount, sharesWorker } from './worker-sharing.ts';
import type { InvokeMessage } from './protocol/messages.ts';
import { ReconcileRetries } from './reconcile-retries.ts';
import { FIRST_PARTY_DIR } from './plugin-sources.ts';
import { recordMissingApprovals } from './tool-approvals.ts';
import type { InvokeOptions, LoadedPlugin } from './loaded-plugin.ts';
import type { CapabilityContributions } from './capabilities/capability-host.ts';

export type { InvokeOptions, LoadedPlugin } from './loaded-plugin.ts';

const LOG_RING = 500;
/** How often every process compares all plugins with the database, in case a notification was missed. */
const RESYNC_INTERVAL_MS = 30_000;

const DEFAULT_LIMITS = { memoryMb: 64, callTimeoutMs: 10_000, maxConcurrentCalls: 64 };
/** The capabilities whose units write kernel rows this process caches (capabilities/units.ts), read on first use. */
let kernelRowGrantIds: string[] | undefined;
const writesKernelRows = (loaded: LoadedPlugin) => (loaded.row.granted_capabilities as string[] | null ?? []).some((grant) => (kernelRowGrantIds ??= kernelRowGrants(KERNEL_UNITS)).includes(grant));

/**
 * The extension host: installs plugins, grants their capabilities on enable, runs each in
 * its own supervised worker process, mounts what they contribute, and carries every call
 * into them. It is the only kernel module that knows plugins exist.
 */
export class ExtensionHost {
  readonly kernel: KernelServices;
  readonly plugins = new Map<string, LoadedPlugin>();
  readonly routes = new RouteTable();
  /** Group commit per batched route of each running plugin process. */
  private readonly batchers = new RouteBatchers();
  /** Which plugin serves which path (route-claims.ts). */
  readonly routeClaims = new RouteClaims(this.routes);
  /** Calls in flight, by invocation id: the broker attaches identity from here, never from the worker. */
  /** `signedUntil`: when the call's signed identity expires (epoch seconds; null for a read-only call, which carries none). */
  readonly invocations = new Map<string, { plugin: string; info: InvocationInfo; depth: number; batched?: boolean; signedUntil: number | null; chain: ReadonlyArray<{ id: string; plugin: string }> }>();
  readonly databases: PluginDatabases;
  /** Lifecycle changes and reconciliations, one at a time per plugin (lifecycle-queue.ts). Internal to the host's modules. */
  readonly lifecycle: LifecycleQueue;
  private readonly broker: Broker;
  /** The operator's changes: install, enable, disable, uninstall, upgrade, tool approvals, configuration (plugin-changes.ts). */
  readonly changes: PluginChanges;
  /** Contribution points (jobs, events, webhooks, folders) hook in here instead of editing activation. */
  private readonly activationHooks: Array<{ activate(plugin: LoadedPlugin): Promise<void> | void; deactivate(key: string): Promise<void> | void }> = [];
  /** Adds per-call data to an invocation before it is sent (for example the company's folder mounts). */
  readonly invokeDecorators: Array<(plugin: LoadedPlugin, message: InvokeMessage) => Promise<void> | void> = [];
  /**
   * Work a call leaves for after it has answered, told its outcome (null when it never got one):
   * jobs it enqueued are queued only once its transaction committed (contributions/enqueued-jobs.ts).
   */
  readonly afterInvoke: Array<(invocationId: string, result: InvokeResult | null) => Promise<InvokeResult | null>> = [];
  /** Work a contribution point does when a plugin is uninstalled (its queued jobs go with it). */
  readonly afterUninstall: Array<(key: string) => Promise<void>> = [];
  private bridgeKey!: Buffer;
  private listener: NotificationListener | null = null;
  /** Server-sent events plugins publish, fanned out across processes. */
  readonly streams: StreamHub;
  private readonly databaseUrl: string;
  private readonly retries = new ReconcileRetries();
  private resyncTimer: NodeJS.Timeout | null = null;
  private resyncing = false;
  private stopped = false;
  /** The worker processes the first-party plugins share (and plugins the operator puts with them), one per core. */
  private readonly sharedWorkers: SharedWorkers;
  /** Starts every worker process, and keeps the one warm standby a dead worker is replaced by. */
  readonly workerProcesses: WorkerProcesses;

  constructor(kernel: KernelServices, options: { hostSecret: Buffer; databaseUrl: string }) {
    this.kernel = kernel;
    this.databaseUrl = options.databaseUrl;
    this.streams = new StreamHub(kernel.db, (key) => this.plugins.has(key));
    this.databases = new PluginDatabases(kernel.db, options.hostSecret, options.databaseUrl);
    this.lifecycle = new LifecycleQueue(kernel.db);
    this.broker = new Broker(this);
    this.changes = new PluginChanges(this);
    this.workerProcesses = new WorkerProcesses(kernel.log);
    this.sharedWorkers = new SharedWorkers({ count: sharedWorkerCount(kernel.config), log: kernel.log, processes: this.workerProcesses });
    kernel.health.registerGroup('plugins', () => pluginHealth(this));
    // The company feed leaves out entries about rows loaded plugins hide (database.entities hiddenColumn).
    kernel.activity.hiddenEntities = () => hiddenEntitySources([...this.plugins.values()].map((loaded) => loaded.manifest), kernel.log);
    // Resources the kernel asks about but does not own (a membership's project) are the loaded plugins' declared entities.
    kernel.resources.pluginEntityRows = (type) => pluginEntityRows([...this.plugins.values()].map((loaded) => loaded.manifest), type, kernel.log);
    // A new company gets the managed agents of the enabled plugins in its creating transaction.
    kernel.events.hook('company.created', (tx, payload) => provisionNewCompany(tx, kernel, payload.companyId));
  }

  private readonly channelHandlers = new Map<string, () => void>();

  /**
   * A contribution point woken by notifications on `channel` (one of LISTENED_CHANNELS), and
   * each time the host's listener connects again (notifications may have been missed).
   */
  onNotify(channel: string, fn: () => void): void {
    this.channelHandlers.set(channel, fn);
  }

  onActivation(hooks: { activate(plugin: LoadedPlugin): Promise<void> | void; deactivate(key: string): Promise<void> | void }): void {
    this.activationHooks.push(hooks);
  }

  /** The kernel's own routes, which plugin routes may never claim. */
  attachKernelRouter(router: Router): void {
    this.routeClaims.attachKernelRouter(router);
  }

  /**
   * Loads what the database says is enabled. On a fresh instance the first-party plugins are
   * installed and enabled with every capability they declare; a first-party plugin the operator
   * disabled (or uninstalled and reinstalled) is left as the operator left it. Several
   * processes may start at once on one database: the bootstrap of each first-party plugin is
   * one step for all of them (its lifecycle lock), and each then starts one worker per enabled plugin. A plugin that
   * will not start here is retried in the background (see reconcile) rather than failing the
   * start or being marked failed for every process.
   */
  async start(options: { bootstrapFirstParty: boolean; firstPartyDir?: string }): Promise<void> {
    const row = await this.kernel.db.maybeOne<{ key: Buffer }>('select key from keel_private.bridge_key');
    this.bridgeKey = Buffer.from(row!.key);
    await this.databases.init();
    this.stopped = false;
    // Listening before reading: a change another process makes meanwhile is either in what is
    // read below or announced after it, never lost in between.
    await this.listen();
    await recordMissingApprovals(this.kernel);
    if (options.bootstrapFirstParty) await this.changes.bootstrapFirstParty(options.firstPartyDir ?? FIRST_PARTY_DIR);
    await this.reconcileAll();
    this.resyncTimer ??= setInterval(() => void this.reconcileAll().catch((error) => this.kernel.log.warn({ err: error }, 'periodic plugin reconcile failed')), RESYNC_INTERVAL_MS);
    this.resyncTimer.unref();
  }

  // ---- running plugins -------------------------------------------------------------------

  /** Starts a plugin; `code` is its bundle when the caller has just built it (for PluginChanges and the reconcile). */
  async activate(row: Row, code?: string): Promise<void> {
    const manifest = row.manifest as PluginManifest;
    const folder = row.source_path as string;
    const grants: string[] = row.granted_capabilities ?? [];
    const declared = manifest.capabilities.map((c) => c.id as string);
    const ungranted = declared.filter((id) => !grants.includes(id));
    if (ungranted.length) throw new KeelError(409, 'capability_grant_required', `${row.key} asks for ${ungranted.join(', ')}, which the operator has not granted; enable it again to grant them`);
    // One worker per plugin per process: a worker already running for it is stopped first,
    // whatever path (start, a change made here, one made elsewhere) leads here.
    if (this.plugins.has(row.key)) await this.deactivate(row.key);
    const bundle = code ?? (await buildOrRefuse(folder, row.key)).code;
    const roles = await this.databases.prepare(manifest, grants, folder, { migrate: grants.includes('database.namespace.migrate') || Boolean(manifest.database) });
    const limits = { ...DEFAULT_LIMITS, ...manifest.limits };
    const loaded: LoadedPlugin = { key: row.key, manifest, folder, row, process: null, routes: [], logs: this.plugins.get(row.key)?.logs ?? [] };
    const process = new PluginProcess({
      init: {
        pluginKey: row.key,
        version: manifest.version,
        code: bundle,
        grants,
        config: row.config ?? {},
        database: { url: this.databases.url(roles.runtime), schema: roles.schema ?? 'pg_catalog', resetSessions: !this.databases.hardened },
        network: [...(manifest.network?.allow ?? []), ...operatorNetworkHostsFor(this.kernel.config, row.key)],
        privateNetworkHosts: privateNetworkHostsFor(this.kernel.config, row.key),
        folders: {},
        limits: { memoryMb: limits.memoryMb, callTimeoutMs: limits.callTimeoutMs, cpuSliceMs: Math.min(limits.callTimeoutMs, 5000), maxResponseBytes: 5 * 1024 * 1024, maxLogLinesPerMinute: 600 },
        activitySigning: true,
        publishedEvents: (manifest.publishedEvents ?? []).map((event) => ({ name: event.name, schema: event.schema as Record<string, unknown> })),
      },
      log: this.kernel.log,
      host: sharesWorker(this.kernel.config, { key: row.key as string, sourceKind: row.source_kind as string })
        ? this.sharedWorkers.place(row.key) : new WorkerHost({ name: row.key, log: this.kernel.log, processes: this.workerProcesses }),
      maxConcurrent: limits.maxConcurrentCalls,
      onCall: (call) => this.broker.handle(row.key, call),
      onExit: (applicationName) => void this.databases.endWorkerSessions(roles.runtime, applicationName)
        .catch((error: Error) => this.kernel.log.warn({ plugin: row.key, err: error }, 'could not end the database sessions of a plugin worker that stopped')),
      onLog: (line) => {
        loaded.logs.push(line);
        if (loaded.logs.length > LOG_RING) loaded.logs.splice(0, loaded.logs.length - LOG_RING);
      },
    });
    loaded.process = process;
    this.plugins.set(row.key, loaded);
    await process.start();
    loaded.routes = claimedRoutes(manifest, grants);
    this.routeClaims.assertNoRouteConflicts(row.key, loaded.routes);
    this.routes.add(loaded.routes);
    for (const hook of this.activationHooks) await hook.activate(loaded);
  }

  async deactivate(key: string): Promise<void> {
    const loaded = this.plugins.get(key);
    this.routes.remove(key);
    for (const hook of this.activationHooks) await hook.deactivate(key);
    if (loaded) {
      // Stopped before it is forgotten: calls in flight drain with their grants (the broker reads them here).
      await loaded.process?.stop();
      if (this.plugins.get(key) === loaded) this.plugins.delete(key);
    }
    this.sharedWorkers.release(key);
    // Its open streams (plugin routes' held streams, the UI bridge's) end with it, here and, as
    // each process follows the change (bringInLine), on every other: a client of a disabled
    // plugin must not go on hearing what the plugin publishes once it is enabled again.
    this.streams.endPlugin(key);
  }

  /** What capabilities reach of the contribution points, handed over by startContributionPoints. */
  private capabilityContributions: CapabilityContributions | undefined;

  provideContributionPoints(points: CapabilityContributions): void {
    this.capabilityContributions = points;
  }

  contributionPoints(): CapabilityContributions {
    if (!this.capabilityContributions) throw new KeelError(503, 'extension_host_unavailable', 'The extension host is not running', { expose: true });
    return this.capabilityContributions;
  }

  /**
   * Carries one call into a plugin. Identity is signed here so the plugin's transaction can prove it.
   * `callerId`: the invocation this one is nested in (a service call), whose chain it extends.
   */
  async invoke(key: string, kind: InvocationInfo['kind'], target: string, input: unknown, info: Omit<InvocationInfo, 'id' | 'kind' | 'target'>, options: InvokeOptions, depth = 0, callerId?: string): Promise<InvokeResult> {
    const loaded = this.plugins.get(key);
    if (!loaded?.process) throw new KeelError(404, 'plugin_not_enabled', `Plugin ${key} is not enabled`);
    const id = randomUUID();
    const full: InvocationInfo = { ...info, id, kind, target };
    const deadlineMs = options.deadlineMs ?? loaded.manifest.limits?.callTimeoutMs ?? DEFAULT_LIMITS.callTimeoutMs;
    let signed: InvokeMessage['signed'] = null;
    let signedUntil: number | null = null;
    // A read-only call writes no kernel data, so it carries no signed identity at all.
    if (!options.readOnly) {
      signedUntil = Math.floor(Date.now() / 1000) + Math.ceil(deadlineMs / 1000) + 60;
      const invocation = JSON.stringify({
        plugin: key, role: this.databases.roles(loaded.manifest).runtime, invocationId: id, companyId: info.companyId, actorType: info.actor.type, actorId: info.actor.id,
        agentId: info.actor.agentId, runId: info.runId, exp: signedUntil,
      });
      signed = { invocation, signature: signForBridge(this.bridgeKey, invocation) };
    }
    const batched = Boolean(options.batch && options.transactional && !options.readOnly);
    const caller = callerId === undefined ? undefined : this.invocations.get(callerId);
    const chain = caller ? [...caller.chain, { id: callerId!, plugin: caller.plugin }] : [];
    const enclosing = chain.filter((link) => link.plugin === key).map((link) => link.id);
    this.invocations.set(id, { plugin: key, info: full, depth, batched, signedUntil, chain });
    let answered = false;
    try {
      const message: InvokeMessage = {
        t: 'invoke', id, kind, target, input: JSON.stringify(input ?? null), info: full, transactional: options.transactional, readOnly: options.readOnly,
        signed, defaultActivity: options.defaultActivity ?? null, deadlineMs, ...(enclosing.length ? { enclosing } : {}),
      };
      for (const decorate of this.invokeDecorators) await decorate(loaded, message);
      let result = batched
        ? await this.batchers.of(loaded.key, loaded.process, options.batch!).submit(message)
        : await loaded.process.invoke(message);
      answered = true;
      for (const after of this.afterInvoke) result = (await after(id, result))!;
      // Kernel rows a plugin wrote reach the kernel's caches by notification: wait for those
      // before answering, as after a kernel commit (the worker says whether the call wrote any).
      if (result.ok && options.transactional && !options.readOnly && writesKernelRows(loaded)) await afterPluginCommit(this.kernel.db, info.companyId, result.kernelRowsWritten === true);
      return result;
    } finally {
      if (!answered) for (const after of this.afterInvoke) await after(id, null).catch(() => undefined);
      this.invocations.delete(id);
    }
  }

  /** Signs what the plugin's transaction hands back to a keel_bridge function (a job ticket, prefixed `job:`), as invocations are. */
  signTicket(text: string): string {
    return signForBridge(this.bridgeKey, text);
  }

  // ---- helpers ---------------------------------------------------------------------------

  async row(key: string): Promise<Row> {
    const row = await this.kernel.db.maybeOne('select * from plugins where key = ?', [key]);
    if (!row) throw notFound(`Plugin ${key} is not installed`, 'plugin_not_found');
    return row;
  }

  /**
   * Several kernel processes may share one database: a lifecycle change made in one is
   * announced on `keel_plugins`, and every process brings its running workers in line with
   * the stored state (the process that made the change finds nothing to do). Idempotent.
   */
  async listen(): Promise<void> {
    if (this.listener) return;
    // Notifications sent while the connection was down are gone: on listening again, every
    // plugin is brought in line with the stored state.
    this.listener = new NotificationListener(this.databaseUrl, ['keel_plugins', STREAM_CHANNEL, EVENTS_CHANNEL], this.kernel.log, {
      onNotification: (channel, payload) => {
        if (channel === STREAM_CHANNEL) this.streams.deliver(payload);
        else if (channel !== 'keel_plugins') this.channelHandlers.get(channel)?.();
        else if (payload) void this.reconcile(payload);
      },
      onListening: (reconnected) => {
        for (const handler of this.channelHandlers.values()) handler();
        if (reconnected) void this.reconcileAll().catch((error) => this.kernel.log.warn({ err: error }, 'plugin reconcile after listening again failed'));
      },
    });
    try {
      await this.listener.start();
    } catch (error) {
      this.listener = null;
      throw error;
    }
  }

  /**
   * Brings this process's worker for a plugin in line with what the database says. When that
   * fails it is tried again with backoff until it succeeds, so a process never keeps serving
   * 404 for a plugin the database says is enabled (nor keeps one that was disabled).
   */
  reconcile(key: string): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.retries.superseded(key);
    return this.lifecycle.serial(key, () => this.bringInLine(key)).then(
      () => this.retries.succeeded(key),
      (error: Error) => {
        if (this.stopped) return;
        const retryInMs = this.retries.failed(key, () => void this.reconcile(key));
        this.kernel.log.error({ plugin: key, err: error, attempt: this.retries.failures(key), retryInMs }, 'plugin could not be brought in line with the database; retrying');
      },
    );
  }

  /** Every plugin, stored or running: at start, after listening again, and every RESYNC_INTERVAL_MS in case a notification was missed. */
  async reconcileAll(): Promise<void> {
    if (this.resyncing || this.stopped) return;
    this.resyncing = true;
    try {
      const stored = await this.kernel.db.query<{ key: string }>('select key from plugins order by key');
      for (const key of new Set([...stored.map((row) => row.key), ...this.plugins.keys()])) await this.reconcile(key);
    } finally {
      this.resyncing = false;
    }
  }

  private async bringInLine(key: string): Promise<void> {
    if (this.stopped) return;
    const row = await this.kernel.db.maybeOne('select * from plugins where key = ?', [key]);
    const loaded = this.plugins.get(key);
    if (!row || row.status !== 'enabled') {
      if (loaded) await this.deactivate(key);
      return;
    }
    const current = loaded?.row;
    const sameCode = current && current.version === row.version && String(current.granted_capabilities) === String(row.granted_capabilities);
    if (sameCode && JSON.stringify(current.config) === JSON.stringify(row.config) && sameMoment(current.updated_at, row.updated_at)) return;
    if (loaded && sameCode) {
      loaded.row = row;
      loaded.process?.updateConfig(row.config ?? {});
      return;
    }
    try {
      await this.activate(row);
    } catch (error) {
      await this.deactivate(key);
      throw error;
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    this.resyncTimer = null;
    this.retries.clear();
    await this.listener?.close();
    this.listener = null;
    // Work already queued (a reconcile starting a worker) settles first, so that no worker is
    // started after the ones below were stopped.
    await this.lifecycle.settled();
    await Promise.all([...this.plugins.keys()].map((key) => this.deactivate(key)));
    this.workerProcesses.stop();
  }
}

function sameMoment(a: unknown, b: unknown): boolean {
  return new Date(a as string).getTime() === new Date(b as string).getTime();
}

