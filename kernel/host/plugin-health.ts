import type { KernelServices } from '../services.ts';
import type { LoadedPlugin } from './loaded-plugin.ts';

/**
 * Each plugin the database says is enabled (or failed to start), as this process serves it:
 * up while its worker runs; down while it restarts after a crash, when it failed to start,
 * or when this process does not run it at all.
 */
export async function pluginHealth(host: { kernel: KernelServices; plugins: ReadonlyMap<string, LoadedPlugin> }): Promise<Record<string, { status: 'up' | 'down'; worker: string; detail?: string; restarts?: number }>> {
  const rows = await host.kernel.db.query<{ key: string; status: string; last_error: string | null }>(
    "select key, status, last_error from plugins where status in ('enabled', 'failed') order by key");
  const report: Record<string, { status: 'up' | 'down'; worker: string; detail?: string; restarts?: number }> = {};
  for (const row of rows) {
    const worker = host.plugins.get(row.key)?.process?.health;
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

