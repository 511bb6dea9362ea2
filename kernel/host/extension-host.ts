import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash, randomUUID } from 'node:crypto';
import type { Router } from '@koa/router';
import type { InvocationInfo } from '../../sdk/plugin/context.ts';
import type { PluginManifest, RouteManifest } from '../../sdk/plugin/manifest.ts';
import { isRootPath } from '../../sdk/capabilities/http.ts';
import { fingerprint } from '../../sdk/plugin/fingerprint.ts';
import { buildPlugin, PluginBuildError } from '../../sdk/build/build-plugin.ts';
import type { Row } from '../db/database.ts';
import { conflict, KeelError, notFound } from '../http/errors.ts';
import type { KernelServices } from '../services.ts';
import { holdManagedAgents, provisionAllCompanies, provisionNewCompany } from './managed-agents.ts';
import { Broker } from './broker.ts';
import { kernelRowGrants } from './capabilities/unit.ts';
import { KERNEL_UNITS } from './capabilities/units.ts';
import { LifecycleQueue } from './lifecycle-queue.ts';
import { compileRoute, RouteTable, samplePath, type PluginRoute } from './contributions/routes.ts';
import { RouteBatcher } from './contributions/route-batcher.ts';
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
import { FIRST_PARTY_DIR, readPluginFolder, scanFolder, type FoundPlugin } from './plugin-sources.ts';
import { approvalsOf, pendingToolChanges, recordMissingApprovals, type ToolApprovals } from './tool-approvals.ts';
import { assertToolTextsShown } from './plugin-tools.ts';
import type { InvokeOptions, LoadedPlugin } from './loaded-plugin.ts';
import type { CapabilityContributions } from './capabilities/capability-host.ts';

export type { InvokeOptions, LoadedPlugin } from './loaded-plugin.ts';

const LOG_RING = 500;
/** How often every process compares all plugins with the database, in case a notification was missed. */
const RESYNC_INTERVAL_MS = 30_000;

/**
 * Who asked for a lifecycle change (install, enable, ...), so the host's activity entries
 * name the operator; changes the host makes on its own (first-party bootstrap) are `system`.
 */
export const lifecycleActor = new AsyncLocalStorage<{ actorType: 'user' | 'agent' | 'system'; actorId: string }>();
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
  /** Calls in flight, by invocation id: the broker attaches identity from here, never from the worker. */
  /** `signedUntil`: when the call's signed identity expires (epoch seconds; null for a read-only call, which carries none). */
  readonly invocations = new Map<string, { plugin: string; info: InvocationInfo; depth: number; batched?: boolean; signedUntil: number | null; chain: ReadonlyArray<{ id: string; plugin: string }> }>();
  readonly databases: PluginDatabases;
  /** Lifecycle changes and reconciliations, one at a time per plugin (lifecycle-queue.ts). */
  private readonly lifecycle: LifecycleQueue;
  private readonly broker: Broker;
  private kernelRouter: Router | null = null;
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
    this.workerProcesses = new WorkerProcesses(kernel.log);
    this.sharedWorkers = new SharedWorkers({ count: sharedWorkerCount(kernel.config), log: kernel.log, processes: this.workerProcesses });
    kernel.health.registerGroup('plugins', () => this.health());
    // The company feed leaves out entries about rows loaded plugins hide (database.entities hiddenColumn).
    kernel.activity.hiddenEntities = () => hiddenEntitySources([...this.plugins.values()].map((loaded) => loaded.manifest), kernel.log);
    // Resources the kernel asks about but does not own (a membership's project) are the loaded plugins' declared entities.
    kernel.resources.pluginEntityRows = (type) => pluginEntityRows([...this.plugins.values()].map((loaded) => loaded.manifest), type, kernel.log);
    // A new company gets the managed agents of the enabled plugins in its creating transaction.
    kernel.events.hook('company.created', (tx, payload) => provisionNewCompany(tx, kernel, payload.companyId));
  }

  /**
   * Each plugin the database says is enabled (or failed to start), as this process serves it:
   * up while its worker runs; down while it restarts after a crash, when it failed to start,
   * or when this process does not run it at all.
   */
  private async health(): Promise<Record<string, { status: 'up' | 'down'; worker: string; detail?: string; restarts?: number }>> {
    const rows = await this.kernel.db.query<{ key: string; status: string; last_error: string | null }>(
      "select key, status, last_error from plugins where status in ('enabled', 'failed') order by key");
    const report: Record<string, { status: 'up' | 'down'; worker: string; detail?: string; restarts?: number }> = {};
    for (const row of rows) {
      const worker = this.plugins.get(row.key)?.process?.health;
      if (row.status === 'failed') {
        report[row.key] = { status: 'down', worker: 'failed', detail: `could not start: ${(row.last_error ?? 'unknown error').slice(0, 300)}` };
      } else if (!worker) {
        report[row.key] = { status: 'down', worker: 'absent', detail: 'enabled, but not running in this process' };
      } else if (worker.status === 'running') {
        report[row.key] = { status: 'up', worker: worker.status, restarts: worker.restarts };
      } else {
        const reason = worker.lastExit?.reason ? `: ${worker.lastExit.reason.slice(0, 300)}` : '';
        report[row.key] = { status: 'down', worker: worker.status, restarts: worker.restarts, detail: `worker ${worker.status}${reason}` };
      }
    }
    return report;
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
    this.kernelRouter = router;
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
    if (options.bootstrapFirstParty) await this.bootstrapFirstParty(options.firstPartyDir ?? FIRST_PARTY_DIR);
    await this.reconcileAll();
    this.resyncTimer ??= setInterval(() => void this.reconcileAll().catch((error) => this.kernel.log.warn({ err: error }, 'periodic plugin reconcile failed')), RESYNC_INTERVAL_MS);
    this.resyncTimer.unref();
  }

  /**
   * First-party plugins ship with Keel: a new one is installed and enabled with what it
   * declares; one this release ships changed (a new version of Keel) is upgraded in place, its
   * new migrations run, and the capabilities it newly declares are granted, since the operator
   * granted them by installing this release. What the operator withheld or disabled stays so:
   * a capability declared before and not granted is not granted now, and such an upgrade is
   * refused and logged, leaving the plugin as it was. Its changed tools are approved likewise:
   * they are part of the release the operator installed.
   */
  private async bootstrapFirstParty(dir: string): Promise<void> {
    for (const found of await scanFolder(dir, 'first_party')) await this.lifecycle.exclusive(found.manifest.key, () => this.bootstrapOne(found));
  }

  private async bootstrapOne(found: FoundPlugin): Promise<void> {
    const key = found.manifest.key;
    const existing = await this.kernel.db.maybeOne<{ source_kind: string; manifest: PluginManifest }>('select source_kind, manifest from plugins where key = ?', [key]);
    if (!existing) {
      await this.lifecycle.claimingNamespace(found.manifest.database?.namespace, () => this.installNow(found));
      await this.enableNow(key, {});
      return;
    }
    // Stored as jsonb, whose key order is its own: compared canonically.
    if (existing.source_kind !== 'first_party' || fingerprint(existing.manifest) === fingerprint(found.manifest)) return;
    const before = new Set(existing.manifest.capabilities.map((c) => c.id as string));
    const added = found.manifest.capabilities.map((c) => c.id as string).filter((id) => !before.has(id));
    try {
      await this.upgradeNow(key, { grant: added, approveTools: true }, found);
    } catch (error) {
      this.kernel.log.warn({ err: error, plugin: key }, `first-party plugin ${key} was not upgraded to ${found.manifest.version}: ${(error as Error).message}`);
    }
  }

  // ---- lifecycle -------------------------------------------------------------------------

  install(found: FoundPlugin): Promise<Row> {
    // The namespace it declares is claimed with it: two plugins installed at once never both get one.
    return this.lifecycle.exclusive(found.manifest.key, () => this.lifecycle.claimingNamespace(found.manifest.database?.namespace, () => this.installNow(found)));
  }

  private async installNow(found: FoundPlugin): Promise<Row> {
    const { manifest } = found;
    const existing = await this.kernel.db.maybeOne('select key, source_path from plugins where key = ?', [manifest.key]);
    if (existing) throw conflict(`Plugin ${manifest.key} is already installed (from ${existing.source_path})`, { key: manifest.key }, 'plugin_already_installed');
    await this.databases.assertNamespaceFree(manifest);
    await buildOrRefuse(found.folder, manifest.key);
    const row = await this.kernel.db.transaction(async (tx) => {
      // The check above answers the common case; of concurrent installs of one key, the key decides.
      const inserted = await tx.maybeOne(
        `insert into plugins (key, package_name, version, display_name, description, source_kind, source_path, tag, manifest, db_namespace)
         values (?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?) on conflict (key) do nothing returning *`,
        [manifest.key, found.packageName, manifest.version, manifest.displayName, manifest.description ?? null, found.sourceKind, found.folder,
          manifest.tag ?? (found.sourceKind === 'first_party' ? 'first-party' : found.sourceKind === 'example' ? 'example' : null),
          JSON.stringify(manifest), manifest.database?.namespace ?? null]);
      if (!inserted) throw conflict(`Plugin ${manifest.key} is already installed`, { key: manifest.key }, 'plugin_already_installed');
      await this.audit(tx, 'plugin.installed', manifest.key, { version: manifest.version, source: found.sourceKind });
      return inserted;
    });
    return row;
  }

  /** Grants the manifest's capabilities (or the subset given), provisions the database and starts the worker. */
  enable(key: string, options: { grant?: string[] }): Promise<Row> {
    return this.lifecycle.exclusive(key, () => this.enableNow(key, options));
  }

  private async enableNow(key: string, options: { grant?: string[] }): Promise<Row> {
    const row = await this.row(key);
    const manifest = row.manifest as PluginManifest;
    const declared = manifest.capabilities.map((c) => c.id as string);
    // Public root routes speak for the whole instance to anyone: a plugin that is not first-party
    // gets them only when the operator names the capability, never through the default grant.
    if (options.grant === undefined && row.source_kind !== 'first_party' && declared.includes('http.routes.public')) {
      throw new KeelError(409, 'capability_grant_required',
        `${key} asks for http.routes.public (public pages at root paths outside /api/), which is never granted by default; name it in the grant list: POST /api/plugins/${key}/enable {"grant": [${declared.map((id) => JSON.stringify(id)).join(', ')}]}`);
    }
    const requested = options.grant ?? declared;
    const unknown = requested.filter((id) => !declared.includes(id));
    if (unknown.length) {
      // Enable grants from the manifest installed last; a capability its source declares since is loaded and granted by the upgrade.
      throw new KeelError(422, 'capability_not_declared', `${key} ${manifest.version} does not declare ${unknown.join(', ')}; only declared capabilities can be granted. If its source declares them now, grant them with the upgrade that loads it: keel plugin upgrade ${key} --grant ${unknown.join(' ')}`);
    }
    // A plugin starts only with every capability it declares (activate): a narrower grant is
    // refused here, while the stored grant and the running worker are still as they were.
    const withheld = declared.filter((id) => !requested.includes(id));
    if (withheld.length) {
      throw new KeelError(409, 'capability_grant_required',
        `${key} asks for ${withheld.join(', ')}, which this grant leaves out; a plugin runs only with every capability it declares: POST /api/plugins/${key}/enable {"grant": [${declared.map((id) => JSON.stringify(id)).join(', ')}]}`,
        { details: { missingCapabilities: withheld } });
    }
    assertToolTextsShown(key, manifest);
    const claimed = this.claimedRoutes(manifest, requested);
    // Before anything is stored: a refused enable must not leave the plugin enabled with its
    // grants (the next start would activate it, and the first to start would win the route).
    return this.withRoutesReserved(key, claimed, async () => {
      // A plugin that does not build is refused before its row changes or its worker stops.
      const built = await buildOrRefuse(row.source_path as string, key);
      const updated = await this.kernel.db.transaction(async (tx) => {
        const result = await tx.maybeOne(
          `update plugins set status = 'enabled', granted_capabilities = ?::text[], first_granted_at = coalesce(first_granted_at, now()),
             enabled_at = now(), last_error = null, approved_tools = coalesce(approved_tools, ?::jsonb), updated_at = now() where key = ? returning *`,
          // The first enable approves the tools the plugin has; later ones keep what was approved.
          [`{${requested.join(',')}}`, JSON.stringify(approvalsOf(manifest.tools ?? [])), key]);
        await this.audit(tx, 'plugin.enabled', key, { granted: requested, firstGrant: row.first_granted_at === null });
        // Its managed agents: made where missing, and what its disable paused resumed (never the board's pauses).
        await provisionAllCompanies(tx, this.kernel, key, manifest, requested);
        await holdManagedAgents(tx, this.kernel, key, false);
        return result!;
      });
      await this.startOrMarkFailed(updated, built.code);
      await this.announce(key);
      return this.row(key);
    });
  }

  /**
   * Starts a plugin whose enabled row has just been stored. A start that fails (its worker
   * throws on load, say) leaves it stopped and `failed` with the reason, announced to the
   * other processes, and answers 422 plugin_start_failed.
   */
  private async startOrMarkFailed(row: Row, code: string): Promise<void> {
    const key = row.key as string;
    await this.deactivate(key);
    try {
      await this.activate(row, code);
    } catch (error) {
      await this.deactivate(key);
      await this.markFailed(key, (error as Error).message);
      await this.announce(key);
      throw error instanceof KeelError ? error : new KeelError(422, 'plugin_start_failed', `${key} could not start: ${(error as Error).message}`);
    }
  }

  async disable(key: string): Promise<Row> {
    return this.lifecycle.exclusive(key, async () => {
      await this.row(key);
      await this.deactivate(key);
      const disabled = await this.kernel.db.transaction(async (tx) => {
        const result = await tx.maybeOne(`update plugins set status = 'disabled', disabled_at = now(), updated_at = now() where key = ? returning *`, [key]);
        await this.audit(tx, 'plugin.disabled', key, {});
        await holdManagedAgents(tx, this.kernel, key, true);
        return result!;
      });
      await this.announce(key);
      return disabled;
    });
  }

  async uninstall(key: string): Promise<void> {
    return this.lifecycle.exclusive(key, async () => {
      const row = await this.row(key);
      await this.deactivate(key);
      await this.databases.drop(row.manifest as PluginManifest);
      await this.kernel.db.transaction(async (tx) => {
        await tx.exec('delete from plugins where key = ?', [key]);
        await this.audit(tx, 'plugin.uninstalled', key, { version: row.version });
      });
      for (const hook of this.afterUninstall) await hook(key);
      await this.announce(key);
    });
  }

  /**
   * Re-reads the plugin's folder, runs new migrations and restarts it. A new version that asks
   * for capabilities the operator has not granted is refused until it is enabled again with them.
   */
  upgrade(key: string, options: { grant?: string[] } = {}): Promise<Row> {
    return this.lifecycle.exclusive(key, () => this.upgradeNow(key, options));
  }

  /**
   * `found`: the new source when the caller has read it already (the first-party bootstrap), else the plugin's recorded folder.
   * `approveTools`: the new version's tools are approved with it (first-party plugins ship with the release); otherwise
   * a tool it adds or changes is withheld until an instance admin approves it (approveToolChanges).
   */
  private async upgradeNow(key: string, options: { grant?: string[]; approveTools?: boolean }, source?: FoundPlugin): Promise<Row> {
    const row = await this.row(key);
    const found = source ?? await readPluginFolder(row.source_path, row.source_kind, row.package_name);
    if (found.manifest.key !== key) throw new KeelError(422, 'plugin_key_changed', `The plugin at ${row.source_path} is now ${found.manifest.key}, not ${key}`);
    return this.lifecycle.claimingNamespace(found.manifest.database?.namespace, () => this.upgradeFound(row, found, options));
  }

  private async upgradeFound(row: Row, found: FoundPlugin, options: { grant?: string[]; approveTools?: boolean }): Promise<Row> {
    const key = row.key as string;
    await this.databases.assertNamespaceFree(found.manifest);
    const declared = found.manifest.capabilities.map((c) => c.id as string);
    const grant = options.grant ?? [];
    const undeclared = grant.filter((id) => !declared.includes(id));
    if (undeclared.length) throw new KeelError(422, 'capability_not_declared', `${key} ${found.manifest.version} does not declare ${undeclared.join(', ')}; only declared capabilities can be granted`);
    // What the operator granted before and the new version still declares, plus what this upgrade grants.
    const kept: string[] = (row.granted_capabilities ?? []).filter((id: string) => declared.includes(id));
    const granted = [...new Set([...kept, ...grant])];
    const added = declared.filter((id) => !granted.includes(id));
    if (row.status === 'enabled' && added.length) {
      throw new KeelError(409, 'capability_grant_required',
        `${key} ${found.manifest.version} asks for ${added.join(', ')}, which the operator has not granted; grant them with this upgrade: keel plugin upgrade ${key} --grant ${added.join(' ')} (POST /api/plugins/${key}/upgrade {"grant": [${added.map((id) => JSON.stringify(id)).join(', ')}]})`,
        { details: { newCapabilities: added } });
    }
    const claimed = this.claimedRoutes(found.manifest, granted);
    // A disabled plugin claims no routes until it is enabled (whose check it then meets).
    return this.withRoutesReserved(key, row.status === 'enabled' ? claimed : [], async () => {
      const built = await buildOrRefuse(found.folder, key);
      const updated = await this.kernel.db.transaction(async (tx) => {
        const result = await tx.maybeOne(
          `update plugins set version = ?, manifest = ?::jsonb, display_name = ?, description = ?, db_namespace = ?, source_path = ?,
             granted_capabilities = case when status = 'enabled' then ?::text[] else granted_capabilities end,
             approved_tools = case when ? then ?::jsonb else approved_tools end, updated_at = now() where key = ? returning *`,
          [found.manifest.version, JSON.stringify(found.manifest), found.manifest.displayName, found.manifest.description ?? null, found.manifest.database?.namespace ?? null,
            found.folder, `{${granted.join(',')}}`, options.approveTools === true, JSON.stringify(approvalsOf(found.manifest.tools ?? [])), key]);
        const withheld = pendingToolChanges(result!).map((change) => change.key);
        await this.audit(tx, 'plugin.upgraded', key, { from: row.version, to: found.manifest.version, ...(grant.length ? { granted: grant } : {}), ...(withheld.length ? { withheldTools: withheld } : {}) });
        // A new version may declare managed agents the old one did not.
        if (result!.status === 'enabled') await provisionAllCompanies(tx, this.kernel, key, found.manifest, granted);
        return result!;
      });
      if (updated.status === 'enabled') await this.startOrMarkFailed(updated, built.code);
      await this.announce(key);
      return updated;
    });
  }

  /**
   * Approves tools new or changed since their approval (`tools`: their keys; default every
   * one pending), so that agents see and call them again. Answers the keys approved.
   */
  approveToolChanges(key: string, tools?: string[]): Promise<string[]> {
    return this.lifecycle.exclusive(key, async () => {
      const row = await this.row(key);
      const pending = pendingToolChanges(row);
      const unknown = (tools ?? []).filter((name) => !pending.some((change) => change.name === name));
      if (unknown.length) {
        throw new KeelError(422, 'tool_change_not_pending', `${key} has no pending change for ${unknown.join(', ')}; GET /api/plugins/${key}/tool-changes lists the pending ones`, { details: { tools: unknown } });
      }
      const chosen = tools ? pending.filter((change) => tools.includes(change.name)) : pending;
      if (!chosen.length) return [];
      const approvals: ToolApprovals = { ...(row.approved_tools as ToolApprovals | null ?? {}) };
      for (const change of chosen) approvals[change.name] = { fingerprint: change.fingerprint, description: change.description, inputSchema: change.inputSchema };
      // Tools the plugin no longer has are no longer approved: one that comes back is reviewed again.
      const present = new Set(((row.manifest as PluginManifest).tools ?? []).map((tool) => tool.key));
      for (const name of Object.keys(approvals)) if (!present.has(name)) delete approvals[name];
      const updated = await this.kernel.db.transaction(async (tx) => {
        const result = await tx.maybeOne('update plugins set approved_tools = ?::jsonb, updated_at = now() where key = ? returning *', [JSON.stringify(approvals), key]);
        await this.audit(tx, 'plugin.tool_changes_approved', key, { version: row.version, tools: chosen.map((change) => ({ key: change.key, change: change.change, fingerprint: change.fingerprint })) });
        return result!;
      });
      // This process serves them at once; the others read the row on the announcement.
      const loaded = this.plugins.get(key);
      if (loaded) loaded.row = updated;
      await this.announce(key);
      return chosen.map((change) => change.key);
    });
  }

  async setConfig(key: string, config: Record<string, unknown>): Promise<Row> {
    const updated = await this.kernel.db.transaction(async (tx) => {
      const result = await tx.maybeOne('update plugins set config = ?::jsonb, updated_at = now() where key = ? returning *', [JSON.stringify(config), key]);
      if (!result) throw notFound('Plugin not found');
      await this.audit(tx, 'plugin.config_updated', key, { keys: Object.keys(config) });
      return result;
    });
    const loaded = this.plugins.get(key);
    if (loaded) { loaded.row = updated; loaded.process?.updateConfig(config); }
    await this.announce(key);
    return updated;
  }

  // ---- running plugins -------------------------------------------------------------------

  /** Starts a plugin; `code` is its bundle when the caller has just built it. */
  private async activate(row: Row, code?: string): Promise<void> {
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
    loaded.routes = this.claimedRoutes(manifest, grants);
    this.assertNoRouteConflicts(row.key, loaded.routes);
    this.routes.add(loaded.routes);
    for (const hook of this.activationHooks) await hook.activate(loaded);
  }

  private async deactivate(key: string): Promise<void> {
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

  private claimedRoutes(manifest: PluginManifest, grants: readonly string[]): PluginRoute[] {
    if (!grants.includes('http.routes')) return [];
    const granted = (route: RouteManifest) => !route.absolute || grants.includes(isRootPath(route.path) ? 'http.routes.public' : 'http.routes.absolute');
    return (manifest.routes ?? []).filter(granted).map((route) => compileRoute(manifest, route));
  }

  /**
   * Runs an enable or upgrade with its routes checked and held: two lifecycle changes of
   * different plugins may run at once (their locks are per plugin), and the second to claim a
   * path is refused here, before anything of it is stored, rather than failing at activation.
   */
  private async withRoutesReserved<T>(key: string, routes: PluginRoute[], fn: () => Promise<T>): Promise<T> {
    this.assertNoRouteConflicts(key, routes);
    const release = this.routes.reserve(key, routes);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  private assertNoRouteConflicts(key: string, routes: PluginRoute[]): void {
    for (const route of routes) {
      const other = this.routes.conflicts(route);
      if (other) throw conflict(`${key} claims ${route.route.method} ${route.fullPath}, which ${other.plugin} already serves (${other.route.method} ${other.fullPath})`, { plugins: [key, other.plugin] }, 'route_conflict');
      const sample = samplePath(route.fullPath);
      for (const layer of this.kernelRouter?.stack ?? []) {
        if (!layer.methods.includes(route.route.method)) continue;
        if (layer.match(sample) || route.pattern.test(samplePath(String(layer.path)))) {
          throw conflict(`${key} claims ${route.route.method} ${route.fullPath}, which the kernel serves (${route.route.method} ${String(layer.path)})`, { plugins: [key, 'kernel'] }, 'route_conflict');
        }
      }
    }
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
      signed = { invocation, signature: this.sign(invocation) };
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
        ? await this.batcher(loaded, options.batch!).submit(message)
        : await loaded.process.invoke(message);
      answered = true;
      for (const after of this.afterInvoke) result = (await after(id, result))!;
      // A plugin that may write kernel rows committed in its own worker: the kernel's caches
      // learn of it by notification, so wait for those before answering, as after a kernel commit.
      if (result.ok && options.transactional && !options.readOnly && writesKernelRows(loaded)) await this.kernel.db.afterEveryCommit?.();
      return result;
    } finally {
      if (!answered) for (const after of this.afterInvoke) await after(id, null).catch(() => undefined);
      this.invocations.delete(id);
    }
  }

  private readonly batchers = new Map<string, { process: PluginProcess; batcher: RouteBatcher }>();

  private batcher(loaded: LoadedPlugin, batch: { key: string; maxItems: number; maxInFlight: number }): RouteBatcher {
    const key = `${loaded.key}/${batch.key}`;
    const known = this.batchers.get(key);
    // A restarted or upgraded plugin has a new process: its batches start afresh.
    if (known && known.process === loaded.process) return known.batcher;
    const process = loaded.process!;
    // By default two batches in flight: one runs its calls while the other commits.
    const batcher = new RouteBatcher((messages) => process.invokeBatch(messages), { maxItems: batch.maxItems, maxInFlight: batch.maxInFlight });
    this.batchers.set(key, { process, batcher });
    return batcher;
  }

  /** Signs what the plugin's transaction hands back to a keel_bridge function (a job ticket, prefixed `job:`), as invocations are. */
  signTicket(text: string): string {
    return this.sign(text);
  }

  private sign(text: string): string {
    const inner = createHash('sha256').update(Buffer.concat([this.bridgeKey, Buffer.from(text, 'utf8')])).digest();
    return createHash('sha256').update(Buffer.concat([this.bridgeKey, inner])).digest('hex');
  }

  // ---- helpers ---------------------------------------------------------------------------

  async row(key: string): Promise<Row> {
    const row = await this.kernel.db.maybeOne('select * from plugins where key = ?', [key]);
    if (!row) throw notFound(`Plugin ${key} is not installed`, 'plugin_not_found');
    return row;
  }

  private async markFailed(key: string, message: string): Promise<void> {
    await this.kernel.db.exec("update plugins set status = 'failed', last_error = ?, updated_at = now() where key = ?", [message.slice(0, 2000), key]);
  }

  private async audit(tx: Parameters<Parameters<KernelServices['db']['transaction']>[0]>[0], action: string, key: string, details: Record<string, unknown>): Promise<void> {
    const who = lifecycleActor.getStore() ?? { actorType: 'system' as const, actorId: 'extension-host' };
    await this.kernel.activity.record(tx, { companyId: null, ...who, action, entityType: 'plugin', entityId: key, details });
    // Lifecycle changes are operator-visible in the log too (install, enable with its grants, ...).
    tx.afterCommit(() => this.kernel.log.info({ plugin: key, by: `${who.actorType}:${who.actorId}`, ...details }, action));
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

  private announce(key: string): Promise<unknown> {
    return this.kernel.db.query("select pg_notify('keel_plugins', ?)", [key]);
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

/**
 * Bundles a plugin, answering 422 plugin_too_large (naming the limit) or plugin_build_failed
 * (first lines of the build error) when it does not build. One build at a time per process
 * (sdk/build/bundler.ts: lifecycle changes of different plugins run at once, their builds do
 * not); a build takes tens of milliseconds, the rest of a lifecycle change does not wait.
 */
async function buildOrRefuse(folder: string, key: string) {
  try {
    return await buildPlugin(folder);
  } catch (error) {
    const message = `${key} does not build: ${(error as Error).message.split('\n').slice(0, 3).join(' ')}`;
    if (error instanceof PluginBuildError && error.code === 'plugin_too_large') throw new KeelError(422, 'plugin_too_large', message);
    throw new KeelError(422, 'plugin_build_failed', message);
  }
}
