import { availableParallelism } from 'node:os';
import type { Logger } from 'pino';
import type { KeelConfig } from '../config/schema.ts';
import { WorkerHost } from './worker-host.ts';
import type { WorkerProcesses } from './worker-standby.ts';

/**
 * Whether a plugin runs in one of the worker processes the first-party plugins share, or in
 * one of its own. First-party plugins share by default: each still has its own isolate,
 * database role and deadlines, and a fatal error restarts the shared process with every plugin
 * in it, a risk worth about 80 MiB per plugin for code shipped with Keel. Any other plugin keeps
 * a process of its own (a crash, a stuck process or CPU-heavy code of one plugin touches no
 * other) unless the operator names it in `plugins.sharedWorker.plugins`.
 */
export function sharesWorker(config: KeelConfig, plugin: { key: string; sourceKind: string }): boolean {
  const sharing = config.plugins?.sharedWorker;
  if (sharing?.plugins?.includes(plugin.key)) return true;
  return plugin.sourceKind === 'first_party' && sharing?.firstParty !== false;
}

/** How many shared worker processes there are: `plugins.sharedWorker.processes`, or one per core of the machine. */
export function sharedWorkerCount(config: KeelConfig): number {
  return config.plugins?.sharedWorker?.processes ?? availableParallelism();
}

/**
 * The shared worker processes, and which plugin runs in which. One process runs a plugin's
 * isolate on one thread, so a single shared process kept one core busy while the others idled
 * under plugin load; there are as many as the machine has cores, and the plugins are spread
 * over them: each goes to the process holding the fewest plugins (the first of them on a tie),
 * so the first-party plugins, loaded in the order of their keys, alternate. A process starts
 * with its first plugin and ends with its last (worker-host.ts): an instance with fewer shared
 * plugins than cores runs fewer processes. A plugin stays in its process across restarts
 * (a crash, an overrun): only a new activation (enable, upgrade) places it again.
 * The crash isolation is the one process's: a fatal error in one restarts the plugins in it,
 * and none in the others.
 */
export class SharedWorkers {
  private readonly hosts: WorkerHost[];
  private readonly placed = new Map<string, WorkerHost>();

  constructor(options: { count: number; log: Logger; processes: WorkerProcesses }) {
    this.hosts = Array.from({ length: Math.max(1, options.count) }, (_, i) =>
      new WorkerHost({ name: options.count > 1 ? `shared-${i + 1}` : 'shared', log: options.log, processes: options.processes }));
  }

  /** The process `key` runs in: the one it was placed in, or the one holding the fewest plugins. */
  place(key: string): WorkerHost {
    const known = this.placed.get(key);
    if (known) return known;
    const load = (host: WorkerHost) => [...this.placed.values()].filter((h) => h === host).length;
    const host = this.hosts.reduce((best, candidate) => (load(candidate) < load(best) ? candidate : best));
    this.placed.set(key, host);
    return host;
  }

  /** `key` no longer runs here (disabled, uninstalled, or about to be activated again). */
  release(key: string): void {
    this.placed.delete(key);
  }
}
