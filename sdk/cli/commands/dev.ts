import { sep } from 'node:path';
import { watch } from 'chokidar';
import { KeelApiError, type KeelClient, type PluginRecord } from '../../client/index.ts';
import { clientFor, CliError, describeError, emit, formatMs, shownPath, userPath, type GlobalOptions } from '../output.ts';
import { CONTEXT_MODULE } from '../../build/context-module.ts';
import { buildToDist, describeBuild } from './build.ts';

const IGNORED = [`${sep}dist${sep}`, `${sep}node_modules${sep}`, `${sep}.git${sep}`];
/** The ctx module is written by the build itself from plugin.json, whose change already rebuilt. */
const WRITTEN = `${sep}${CONTEXT_MODULE}${sep}`;

/**
 * Makes sure the kernel runs this folder: installs and enables it when it is not installed,
 * enables it when it is installed but not running, and otherwise hot-swaps it (upgrade), which
 * re-reads the folder, runs new migrations and restarts the worker after calls in flight finish.
 */
async function deploy(client: KeelClient, root: string, key: string): Promise<{ action: 'installed' | 'enabled' | 'swapped'; record: PluginRecord; ms: number }> {
  const started = performance.now();
  let existing: PluginRecord | null = null;
  try {
    existing = await client.getPlugin(key);
  } catch (error) {
    if (!(error instanceof KeelApiError && error.status === 404)) throw error;
  }
  if (existing && existing.localPath !== root) {
    throw new CliError('plugin_installed_elsewhere', `${key} is installed from ${existing.localPath ?? existing.packageName}, not ${root}; uninstall it first (keel plugin uninstall ${key}) or run dev on that folder`);
  }
  if (!existing) {
    await client.installPlugin({ localPath: root });
    const record = await client.enablePlugin(key);
    return { action: 'installed', record, ms: performance.now() - started };
  }
  if (existing.status !== 'enabled') {
    // Picks up the folder as it is now, then starts it.
    await client.upgradePlugin(key);
    const record = await client.enablePlugin(key);
    return { action: 'enabled', record, ms: performance.now() - started };
  }
  const record = await client.upgradePlugin(key);
  return { action: 'swapped', record, ms: performance.now() - started };
}

/** Watches a plugin folder; on every change rebuilds it and hot-swaps it in the running kernel. */
export async function devCommand(folder: string, options: GlobalOptions): Promise<void> {
  const root = userPath(folder);
  const client = clientFor(options);
  const say = (event: string, human: string, data: Record<string, unknown> = {}) => emit(options, `[dev] ${human}`, { event, at: new Date().toISOString(), ...data });
  let running = false;
  let again = false;

  const cycle = async (): Promise<void> => {
    if (running) { again = true; return; }
    running = true;
    try {
      do {
        again = false;
        try {
          const built = await buildToDist(root);
          say('built', describeBuild(built).human.replace(/^Built /, 'built '), describeBuild(built).data);
          const { action, record, ms } = await deploy(client, root, built.manifest.key);
          say(action, `${action} ${record.pluginKey} ${record.version} in ${formatMs(ms)} (${record.running})`, { pluginKey: record.pluginKey, version: record.version, ms: Math.round(ms), buildMs: Math.round(built.ms), running: record.running });
        } catch (error) {
          const described = describeError(error, options);
          const details = [...(described.issues ?? []).map((i) => `  - ${i.path}: ${i.message}`), ...(described.hint ?? [])];
          say('error', `${described.error}${details.map((line) => `\n${line}`).join('')}`, described);
        }
      } while (again);
    } finally {
      running = false;
    }
  };

  await cycle();
  let timer: NodeJS.Timeout | null = null;
  const watcher = watch(root, {
    ignoreInitial: true,
    ignored: (path: string) => `${path}${sep}`.endsWith(WRITTEN) || IGNORED.some((part) => `${path}${sep}`.includes(part)),
  });
  watcher.on('all', (_event, path) => {
    if (timer) clearTimeout(timer);
    // Editors write in bursts; one rebuild per burst.
    timer = setTimeout(() => { timer = null; say('change', `change in ${shownPath(path)}`, { path }); void cycle(); }, 100);
  });
  watcher.on('error', (error) => say('error', `watch failed: ${(error as Error).message}`, { error: (error as Error).message }));
  await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
  say('watching', `watching ${shownPath(root)} (Ctrl-C to stop)`, { folder: root });
  await new Promise<void>((resolve) => {
    const stop = () => { void watcher.close().then(() => resolve()); };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}
