import type { KeelConfig } from '../config/schema.ts';

/**
 * Whether a plugin runs in the worker process the first-party plugins share, or in one of its
 * own. First-party plugins share one by default: each still has its own isolate, database role
 * and deadlines, and a fatal error restarts the shared process with every plugin in it, a risk
 * worth about 80 MiB per plugin for code shipped with Keel. Any other plugin keeps a process of
 * its own (a crash, a stuck process or CPU-heavy code of one plugin touches no other) unless the
 * operator names it in `plugins.sharedWorker.plugins`.
 */
export function sharesWorker(config: KeelConfig, plugin: { key: string; sourceKind: string }): boolean {
  const sharing = config.plugins?.sharedWorker;
  if (sharing?.plugins?.includes(plugin.key)) return true;
  return plugin.sourceKind === 'first_party' && sharing?.firstParty !== false;
}
