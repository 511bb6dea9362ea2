import { realpath } from 'node:fs/promises';
import { relative, sep } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import type { FolderChange, FolderChanges } from '../../sdk/capabilities/folders.ts';
import type { Database } from '../db/database.ts';
import { jobDeadlineOf } from './contributions/jobs.ts';
import { appendPluginLog } from './contributions/plugin-log.ts';
import type { ExtensionHost, LoadedPlugin } from './extension-host.ts';


/** Changes handed to the plugin in one job call; a larger burst is split into several calls. */
const BATCH_LIMIT = 500;
/** Editors write in bursts (a save is often a write, a rename and a chmod): one call per burst. */
const SETTLE_MS = 120;
/** Mounts configured or changed on another process are picked up within this interval. */
const RESYNC_MS = 15_000;
/** Deep trees are not walked without end. */
const MAX_DEPTH = 32;

interface Watch {
  watcher: FSWatcher;
  realPath: string;
  pending: Map<string, FolderChange['kind']>;
  timer: NodeJS.Timeout | null;
  running: boolean;
}

/**
 * The `folders[].onChange` contribution point: files that change inside a mount outside the
 * plugin's own calls (an editor, a sync tool) reach the plugin as a call of the declared job,
 * in the mount's company, with the changed paths relative to the mount. Every process that runs
 * the plugin watches its mounts; a plugin's handler is idempotent by content (it reads the file
 * again), so two processes hearing one change do no harm. The plugin's own writes are heard too
 * (their temporary files are not); handlers compare content and find nothing new.
 */
export class FolderWatches {
  private readonly host: ExtensionHost;
  private readonly db: Database;
  /** By `plugin|company|folderKey`. */
  private readonly watches = new Map<string, Watch>();
  private readonly timer: NodeJS.Timeout;

  constructor(host: ExtensionHost, db: Database) {
    this.host = host;
    this.db = db;
    this.timer = setInterval(() => void this.resyncAll(), RESYNC_MS);
    this.timer.unref();
  }

  async activate(plugin: LoadedPlugin): Promise<void> {
    await this.sync(plugin.key).catch((error: Error) => this.host.kernel.log.warn({ err: error, plugin: plugin.key }, 'could not watch plugin folders'));
  }

  async deactivate(key: string): Promise<void> {
    for (const [id, entry] of this.watches) {
      if (id.startsWith(`${key}|`)) await this.close(id, entry);
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    for (const [id, entry] of this.watches) await this.close(id, entry);
  }

  /** Watches exactly the configured mounts of the plugin's watched folders (after a mount is saved, on activation, periodically). */
  async sync(pluginKey: string): Promise<void> {
    const plugin = this.host.plugins.get(pluginKey);
    const watched = plugin?.process && ((plugin.row.granted_capabilities as string[] | null) ?? []).includes('local.folders')
      ? (plugin.manifest.folders ?? []).filter((folder) => folder.onChange)
      : [];
    const wanted = new Map<string, string>();
    if (watched.length) {
      const rows = await this.db.query<{ company_id: string; folder_key: string; path: string }>(
        'select company_id, folder_key, path from plugin_folder_mounts where plugin_key = ? and folder_key in (select jsonb_array_elements_text(?::jsonb))',
        [pluginKey, JSON.stringify(watched.map((folder) => folder.key))]);
      for (const row of rows) wanted.set(`${pluginKey}|${row.company_id}|${row.folder_key}`, row.path);
    }
    for (const [id, entry] of this.watches) {
      if (id.startsWith(`${pluginKey}|`) && wanted.get(id) !== entry.realPath) await this.close(id, entry);
    }
    for (const [id, path] of wanted) {
      if (this.watches.has(id)) continue;
      // A mount whose real path changed since it was saved is not watched (the worker refuses it too).
      if (await realpath(path).catch(() => null) !== path) continue;
      this.open(id, path);
    }
  }

  private async resyncAll(): Promise<void> {
    for (const key of this.host.plugins.keys()) {
      await this.sync(key).catch((error: Error) => this.host.kernel.log.warn({ err: error, plugin: key }, 'could not resync plugin folder watches'));
    }
  }

  private open(id: string, realPath: string): void {
    const watcher = watch(realPath, {
      ignoreInitial: true,
      followSymlinks: false,
      depth: MAX_DEPTH,
      // Hidden files and folders: the worker's temporary files (.keel-write-*), editors' swap files, .git.
      ignored: (path: string) => relative(realPath, path).split(sep).some((part) => part.startsWith('.')),
    });
    const entry: Watch = { watcher, realPath, pending: new Map(), timer: null, running: false };
    const heard = (kind: FolderChange['kind']) => (path: string) => {
      const inside = relative(realPath, path).split(sep).join('/');
      if (!inside || inside.startsWith('..')) return;
      entry.pending.set(inside, kind);
      if (entry.timer) clearTimeout(entry.timer);
      entry.timer = setTimeout(() => void this.flush(id, entry), SETTLE_MS);
    };
    watcher.on('add', heard('add')).on('change', heard('change')).on('unlink', heard('unlink'));
    watcher.on('error', (error) => this.host.kernel.log.warn({ err: error, watch: id }, 'folder watch failed'));
    this.watches.set(id, entry);
  }

  private async close(id: string, entry: Watch): Promise<void> {
    this.watches.delete(id);
    if (entry.timer) clearTimeout(entry.timer);
    await entry.watcher.close().catch(() => undefined);
  }

  /** Hands the pending changes to the plugin, one call at a time per mount. */
  private async flush(id: string, entry: Watch): Promise<void> {
    entry.timer = null;
    if (entry.running || entry.pending.size === 0) return;
    entry.running = true;
    const [pluginKey, companyId, folderKey] = id.split('|') as [string, string, string];
    try {
      while (entry.pending.size && this.watches.get(id) === entry) {
        const changes = [...entry.pending].slice(0, BATCH_LIMIT).map(([path, kind]) => ({ path, kind }));
        for (const change of changes) entry.pending.delete(change.path);
        await this.deliver(pluginKey, companyId, folderKey, changes);
      }
    } finally {
      entry.running = false;
    }
  }

  private async deliver(pluginKey: string, companyId: string, folderKey: string, changes: FolderChange[]): Promise<void> {
    const plugin = this.host.plugins.get(pluginKey);
    const job = plugin?.manifest.folders?.find((folder) => folder.key === folderKey)?.onChange?.job;
    if (!plugin?.process || !job) return;
    try {
      // The payload the SDK declares for an onChange job (its handler is typed by it).
      const payload: FolderChanges = { folderKey, changes };
      const result = await this.host.invoke(pluginKey, 'job', job, payload, {
        companyId, actor: { type: 'system', id: 'folder-watch', agentId: null }, runId: null,
      }, { transactional: true, deadlineMs: jobDeadlineOf(plugin, job) });
      if (!result.ok) appendPluginLog(plugin, 'error', `folder change job ${job} failed: ${result.error?.code ?? 'plugin_error'}: ${result.error?.message ?? ''}`, { companyId });
    } catch (error) {
      appendPluginLog(plugin, 'error', `folder change job ${job} failed: ${(error as Error).message}`, { companyId });
    }
  }
}

const started = new WeakMap<ExtensionHost, FolderWatches>();

/** Starts the watches once per extension host (activation hooks keep them in step with plugins). */
export function installFolderWatches(host: ExtensionHost, db: Database): FolderWatches {
  let watches = started.get(host);
  if (!watches) {
    watches = new FolderWatches(host, db);
    started.set(host, watches);
    // The host's stop deactivates every plugin, which closes their watches; the resync timer is unref'd.
    host.onActivation(watches);
  }
  return watches;
}
