import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import type { PluginManifest } from '../../sdk/plugin/manifest.ts';
import type { KernelServices } from '../services.ts';
import type { AdapterDescription } from '../../sdk/shared/adapter-catalog.ts';

/**
 * Whether this instance can run an adapter type now, and if not why and what to do:
 * - `ready`: its driver is here (the runtime plugin's own `process` and `http`, or the one
 *   enabled plugin contributing the type) and, for a command-line tool, the tool is installed;
 * - `tool_missing`: the driver is here but the tool's executable is not on the PATH the
 *   drivers search; an agent can still name the tool elsewhere (`command`), and the
 *   environment test says whether it runs;
 * - `unavailable`: no driver (no enabled plugin contributes it, several do, or no installed plugin has one).
 * `installHint` is what an operator does: the tool's install command, or which plugin to enable.
 */
export interface AdapterAvailability {
  status: 'ready' | 'tool_missing' | 'unavailable';
  reason: string | null;
  installHint: string | null;
}

/** The PATH the coding-agent drivers resolve a tool's name on (plugins/coding-agents, `command`). */
export const TOOL_PATH = ['/usr/local/bin', '/usr/bin', '/bin'];
const RUNTIME_PLUGIN = 'runtime';
const RUNTIME_OWN = new Set(['process', 'http']);

export async function adapterAvailability(kernel: KernelServices, catalog: readonly AdapterDescription[]): Promise<Map<string, AdapterAvailability>> {
  const plugins = await kernel.db.query<{ key: string; status: string; manifest: PluginManifest }>('select key, status, manifest from plugins order by key');
  const answers = new Map<string, AdapterAvailability>();
  for (const adapter of catalog) answers.set(adapter.type, await availabilityOf(kernel, adapter, plugins));
  return answers;
}

async function availabilityOf(kernel: KernelServices, adapter: AdapterDescription, plugins: Array<{ key: string; status: string; manifest: PluginManifest }>): Promise<AdapterAvailability> {
  const enable = (key: string) => `Enable the ${key} plugin (Plugins page, or keel plugin enable ${key}).`;
  if (RUNTIME_OWN.has(adapter.type)) {
    const runtime = plugins.find((plugin) => plugin.key === RUNTIME_PLUGIN);
    return runtime?.status === 'enabled' ? ready()
      : unavailable(`The ${RUNTIME_PLUGIN} plugin, which runs ${adapter.type} agents, is not enabled.`, enable(RUNTIME_PLUGIN));
  }
  const owners = kernel.points.contributors('agent.adapter-config', adapter.type);
  if (owners.length > 1) return unavailable(`Several plugins contribute it (${owners.join(', ')}).`, 'Disable all of them but one.');
  if (owners.length === 0) {
    const declaring = plugins.find((plugin) => (plugin.manifest.kernelPoints ?? []).some((entry) => entry.point === 'agent.adapter-config' && (entry.adapterTypes ?? []).includes(adapter.type)));
    if (!declaring) return unavailable('No installed plugin runs this adapter type.', 'Install a plugin that contributes it, or use process with a command of your own.');
    return unavailable(`No enabled plugin runs it: it comes with the ${declaring.key} plugin, which is ${declaring.status}.`, enable(declaring.key));
  }
  if (adapter.tool && !(await onToolPath(adapter.tool.executable))) {
    return {
      status: 'tool_missing',
      reason: `${adapter.tool.name} (\`${adapter.tool.executable}\`) is not installed on this machine: it is not on ${TOOL_PATH.join(':')}.`,
      installHint: adapter.tool.install,
    };
  }
  return ready();
}

const ready = (): AdapterAvailability => ({ status: 'ready', reason: null, installHint: null });
const unavailable = (reason: string, installHint: string | null): AdapterAvailability => ({ status: 'unavailable', reason, installHint });

/** Whether an executable of that name is on the tools' PATH. */
export async function onToolPath(executable: string): Promise<boolean> {
  for (const dir of TOOL_PATH) {
    try {
      await access(join(dir, executable), constants.X_OK);
      return true;
    } catch { /* not in this directory */ }
  }
  return false;
}
