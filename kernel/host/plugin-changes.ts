import type { PluginManifest } from '../../sdk/plugin/manifest.ts';
import { fingerprint } from '../../sdk/plugin/fingerprint.ts';
import { buildPlugin, PluginBuildError } from '../../sdk/build/build-plugin.ts';
import type { Row, Tx } from '../db/database.ts';
import { conflict, KeelError, notFound } from '../http/errors.ts';
import type { KernelServices } from '../services.ts';
import type { LifecycleQueue } from './lifecycle-queue.ts';
import type { LoadedPlugin } from './loaded-plugin.ts';
import type { PluginDatabases } from './plugin-databases.ts';
import type { RouteClaims } from './route-claims.ts';
import { lifecycleActor } from './lifecycle-actor.ts';
import { holdManagedAgents, provisionAllCompanies } from './managed-agents.ts';
import { readPluginFolder, scanFolder, type FoundPlugin } from './plugin-sources.ts';
import { assertToolTextsShown } from './plugin-tools.ts';
import { assertSubscriptionsPublished } from './subscription-publishers.ts';
import { claimedRoutes } from './route-claims.ts';
import { approvalsOf, pendingToolChanges, type ToolApprovals } from './tool-approvals.ts';

/**
 * The operator's changes to plugins: install, enable with its grants, disable, uninstall,
 * upgrade, tool approvals and configuration, and the first-party bootstrap at start. Each runs
 * under the plugin's lifecycle lock (lifecycle-queue.ts), is recorded in the activity log and
 * announced on `keel_plugins`, so that every process brings its workers in line with it (the
 * host's reconcile); the host starts and stops the workers.
 */
/** What the changes need of the extension host: its stores and locks, and starting and stopping a plugin's worker. */
export interface ChangingHost {
  readonly kernel: KernelServices;
  readonly lifecycle: LifecycleQueue;
  readonly databases: PluginDatabases;
  readonly plugins: ReadonlyMap<string, LoadedPlugin>;
  readonly routeClaims: RouteClaims;
  readonly afterUninstall: ReadonlyArray<(key: string) => Promise<void>>;
  row(key: string): Promise<Row>;
  activate(row: Row, code?: string): Promise<void>;
  deactivate(key: string): Promise<void>;
}

export class PluginChanges {
  private readonly host: ChangingHost;

  constructor(host: ChangingHost) {
    this.host = host;
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
  async bootstrapFirstParty(dir: string): Promise<void> {
    for (const found of await scanFolder(dir, 'first_party')) await this.host.lifecycle.exclusive(found.manifest.key, () => this.bootstrapOne(found));
  }

  private async bootstrapOne(found: FoundPlugin): Promise<void> {
    const key = found.manifest.key;
    const existing = await this.host.kernel.db.maybeOne<{ source_kind: string; manifest: PluginManifest }>('select source_kind, manifest from plugins where key = ?', [key]);
    if (!existing) {
      await this.host.lifecycle.claimingNamespace(found.manifest.database?.namespace, () => this.installNow(found));
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
      this.host.kernel.log.warn({ err: error, plugin: key }, `first-party plugin ${key} was not upgraded to ${found.manifest.version}: ${(error as Error).message}`);
    }
  }

  // ---- lifecycle -------------------------------------------------------------------------

  install(found: FoundPlugin): Promise<Row> {
    // The namespace it declares is claimed with it: two plugins installed at once never both get one.
    return this.host.lifecycle.exclusive(found.manifest.key, () => this.host.lifecycle.claimingNamespace(found.manifest.database?.namespace, () => this.installNow(found)));
  }

  private async installNow(found: FoundPlugin): Promise<Row> {
    const { manifest } = found;
    const existing = await this.host.kernel.db.maybeOne('select key, source_path from plugins where key = ?', [manifest.key]);
    if (existing) throw conflict(`Plugin ${manifest.key} is already installed (from ${existing.source_path})`, { key: manifest.key }, 'plugin_already_installed');
    await this.host.databases.assertNamespaceFree(manifest);
    await assertSubscriptionsPublished(this.host.kernel.db, manifest);
    await buildOrRefuse(found.folder, manifest.key);
    const row = await this.host.kernel.db.transaction(async (tx) => {
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
    return this.host.lifecycle.exclusive(key, () => this.enableNow(key, options));
  }

  private async enableNow(key: string, options: { grant?: string[] }): Promise<Row> {
    const row = await this.host.row(key);
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
    await assertSubscriptionsPublished(this.host.kernel.db, manifest);
    const claimed = claimedRoutes(manifest, requested);
    // Before anything is stored: a refused enable must not leave the plugin enabled with its
    // grants (the next start would activate it, and the first to start would win the route).
    return this.host.routeClaims.withRoutesReserved(key, claimed, async () => {
      // A plugin that does not build is refused before its row changes or its worker stops.
      const built = await buildOrRefuse(row.source_path as string, key);
      const updated = await this.host.kernel.db.transaction(async (tx) => {
        const result = await tx.maybeOne(
          `update plugins set status = 'enabled', granted_capabilities = ?::text[], first_granted_at = coalesce(first_granted_at, now()),
             enabled_at = now(), last_error = null, approved_tools = coalesce(approved_tools, ?::jsonb), updated_at = now() where key = ? returning *`,
          // The first enable approves the tools the plugin has; later ones keep what was approved.
          [`{${requested.join(',')}}`, JSON.stringify(approvalsOf(manifest.tools ?? [])), key]);
        await this.audit(tx, 'plugin.enabled', key, { granted: requested, firstGrant: row.first_granted_at === null });
        // Its managed agents: made where missing, and what its disable paused resumed (never the board's pauses).
        await provisionAllCompanies(tx, this.host.kernel, key, manifest, requested);
        await holdManagedAgents(tx, this.host.kernel, key, false);
        return result!;
      });
      await this.startOrMarkFailed(updated, built.code);
      await this.announce(key);
      return this.host.row(key);
    });
  }

  /**
   * Starts a plugin whose enabled row has just been stored. A start that fails (its worker
   * throws on load, say) leaves it stopped and `failed` with the reason, announced to the
   * other processes, and answers 422 plugin_start_failed.
   */
  private async startOrMarkFailed(row: Row, code: string): Promise<void> {
    const key = row.key as string;
    await this.host.deactivate(key);
    try {
      await this.host.activate(row, code);
    } catch (error) {
      await this.host.deactivate(key);
      await this.markFailed(key, (error as Error).message);
      await this.announce(key);
      throw error instanceof KeelError ? error : new KeelError(422, 'plugin_start_failed', `${key} could not start: ${(error as Error).message}`);
    }
  }

  async disable(key: string): Promise<Row> {
    return this.host.lifecycle.exclusive(key, async () => {
      await this.host.row(key);
      await this.host.deactivate(key);
      const disabled = await this.host.kernel.db.transaction(async (tx) => {
        const result = await tx.maybeOne(`update plugins set status = 'disabled', disabled_at = now(), updated_at = now() where key = ? returning *`, [key]);
        await this.audit(tx, 'plugin.disabled', key, {});
        await holdManagedAgents(tx, this.host.kernel, key, true);
        return result!;
      });
      await this.announce(key);
      return disabled;
    });
  }

  async uninstall(key: string): Promise<void> {
    return this.host.lifecycle.exclusive(key, async () => {
      const row = await this.host.row(key);
      await this.host.deactivate(key);
      await this.host.databases.drop(row.manifest as PluginManifest);
      await this.host.kernel.db.transaction(async (tx) => {
        await tx.exec('delete from plugins where key = ?', [key]);
        await this.audit(tx, 'plugin.uninstalled', key, { version: row.version });
      });
      for (const hook of this.host.afterUninstall) await hook(key);
      await this.announce(key);
    });
  }

  /**
   * Re-reads the plugin's folder, runs new migrations and restarts it. A new version that asks
   * for capabilities the operator has not granted is refused until it is enabled again with them.
   */
  upgrade(key: string, options: { grant?: string[] } = {}): Promise<Row> {
    return this.host.lifecycle.exclusive(key, () => this.upgradeNow(key, options));
  }

  /**
   * `found`: the new source when the caller has read it already (the first-party bootstrap), else the plugin's recorded folder.
   * `approveTools`: the new version's tools are approved with it (first-party plugins ship with the release); otherwise
   * a tool it adds or changes is withheld until an instance admin approves it (approveToolChanges).
   */
  private async upgradeNow(key: string, options: { grant?: string[]; approveTools?: boolean }, source?: FoundPlugin): Promise<Row> {
    const row = await this.host.row(key);
    const found = source ?? await readPluginFolder(row.source_path, row.source_kind, row.package_name);
    if (found.manifest.key !== key) throw new KeelError(422, 'plugin_key_changed', `The plugin at ${row.source_path} is now ${found.manifest.key}, not ${key}`);
    return this.host.lifecycle.claimingNamespace(found.manifest.database?.namespace, () => this.upgradeFound(row, found, options));
  }

  private async upgradeFound(row: Row, found: FoundPlugin, options: { grant?: string[]; approveTools?: boolean }): Promise<Row> {
    const key = row.key as string;
    await this.host.databases.assertNamespaceFree(found.manifest);
    await assertSubscriptionsPublished(this.host.kernel.db, found.manifest);
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
    const claimed = claimedRoutes(found.manifest, granted);
    // A disabled plugin claims no routes until it is enabled (whose check it then meets).
    return this.host.routeClaims.withRoutesReserved(key, row.status === 'enabled' ? claimed : [], async () => {
      const built = await buildOrRefuse(found.folder, key);
      const updated = await this.host.kernel.db.transaction(async (tx) => {
        const result = await tx.maybeOne(
          `update plugins set version = ?, manifest = ?::jsonb, display_name = ?, description = ?, db_namespace = ?, source_path = ?,
             granted_capabilities = case when status = 'enabled' then ?::text[] else granted_capabilities end,
             approved_tools = case when ? then ?::jsonb else approved_tools end, updated_at = now() where key = ? returning *`,
          [found.manifest.version, JSON.stringify(found.manifest), found.manifest.displayName, found.manifest.description ?? null, found.manifest.database?.namespace ?? null,
            found.folder, `{${granted.join(',')}}`, options.approveTools === true, JSON.stringify(approvalsOf(found.manifest.tools ?? [])), key]);
        const withheld = pendingToolChanges(result!).map((change) => change.key);
        await this.audit(tx, 'plugin.upgraded', key, { from: row.version, to: found.manifest.version, ...(grant.length ? { granted: grant } : {}), ...(withheld.length ? { withheldTools: withheld } : {}) });
        // A new version may declare managed agents the old one did not.
        if (result!.status === 'enabled') await provisionAllCompanies(tx, this.host.kernel, key, found.manifest, granted);
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
    return this.host.lifecycle.exclusive(key, async () => {
      const row = await this.host.row(key);
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
      const updated = await this.host.kernel.db.transaction(async (tx) => {
        const result = await tx.maybeOne('update plugins set approved_tools = ?::jsonb, updated_at = now() where key = ? returning *', [JSON.stringify(approvals), key]);
        await this.audit(tx, 'plugin.tool_changes_approved', key, { version: row.version, tools: chosen.map((change) => ({ key: change.key, change: change.change, fingerprint: change.fingerprint })) });
        return result!;
      });
      // This process serves them at once; the others read the row on the announcement.
      const loaded = this.host.plugins.get(key);
      if (loaded) loaded.row = updated;
      await this.announce(key);
      return chosen.map((change) => change.key);
    });
  }

  async setConfig(key: string, config: Record<string, unknown>): Promise<Row> {
    const updated = await this.host.kernel.db.transaction(async (tx) => {
      const result = await tx.maybeOne('update plugins set config = ?::jsonb, updated_at = now() where key = ? returning *', [JSON.stringify(config), key]);
      if (!result) throw notFound('Plugin not found');
      await this.audit(tx, 'plugin.config_updated', key, { keys: Object.keys(config) });
      return result;
    });
    const loaded = this.host.plugins.get(key);
    if (loaded) { loaded.row = updated; loaded.process?.updateConfig(config); }
    await this.announce(key);
    return updated;
  }

  // ---- helpers ---------------------------------------------------------------------------

  private async markFailed(key: string, message: string): Promise<void> {
    await this.host.kernel.db.exec("update plugins set status = 'failed', last_error = ?, updated_at = now() where key = ?", [message.slice(0, 2000), key]);
  }

  private async audit(tx: Tx, action: string, key: string, details: Record<string, unknown>): Promise<void> {
    const who = lifecycleActor.getStore() ?? { actorType: 'system' as const, actorId: 'extension-host' };
    await this.host.kernel.activity.record(tx, { companyId: null, ...who, action, entityType: 'plugin', entityId: key, details });
    // Lifecycle changes are operator-visible in the log too (install, enable with its grants, ...).
    tx.afterCommit(() => this.host.kernel.log.info({ plugin: key, by: `${who.actorType}:${who.actorId}`, ...details }, action));
  }

  private announce(key: string): Promise<unknown> {
    return this.host.kernel.db.query("select pg_notify('keel_plugins', ?)", [key]);
  }
}

/**
 * Bundles a plugin, answering 422 plugin_too_large (naming the limit) or plugin_build_failed
 * (first lines of the build error) when it does not build. One build at a time per process
 * (sdk/build/bundler.ts: lifecycle changes of different plugins run at once, their builds do
 * not); a build takes tens of milliseconds, the rest of a lifecycle change does not wait.
 */
export async function buildOrRefuse(folder: string, key: string) {
  try {
    return await buildPlugin(folder);
  } catch (error) {
    const message = `${key} does not build: ${(error as Error).message.split('\n').slice(0, 3).join(' ')}`;
    if (error instanceof PluginBuildError && error.code === 'plugin_too_large') throw new KeelError(422, 'plugin_too_large', message);
    throw new KeelError(422, 'plugin_build_failed', message);
  }
}
