import type { LoadedPlugin } from '../extension-host.ts';

/** The same bound as the host's own log ring: a flood of lines cannot grow memory. */
const LOG_RING = 500;

/**
 * Adds a host-side line to a plugin's log ring (served by GET /api/plugins/{id}/logs), for
 * what happens to a plugin outside its own code: a failed event delivery, a refused webhook,
 * a skipped job occurrence.
 */
export function appendPluginLog(plugin: LoadedPlugin | undefined, level: 'debug' | 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>): void {
  if (!plugin) return;
  plugin.logs.push({ at: new Date().toISOString(), level, message: message.slice(0, 2000), fields });
  if (plugin.logs.length > LOG_RING) plugin.logs.splice(0, plugin.logs.length - LOG_RING);
}
