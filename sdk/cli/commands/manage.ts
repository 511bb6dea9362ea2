import { existsSync, statSync } from 'node:fs';
import type { InstallSource, PluginRecord } from '../../client/index.ts';
import { CliError, clientFor, emit, formatMs, table, userPath, type GlobalOptions } from '../output.ts';

/** A folder that exists is installed by path; anything else is a package name. */
export function installSource(target: string): InstallSource {
  const path = userPath(target);
  if (existsSync(path) && statSync(path).isDirectory()) return { localPath: path };
  if (/^(\.|\/|~)/.test(target)) throw new CliError('plugin_not_found', `${path} is not a folder`);
  return { packageName: target };
}

export async function installCommand(target: string, options: GlobalOptions & { enable?: boolean }): Promise<void> {
  const client = clientFor(options);
  let record = await client.installPlugin(installSource(target));
  if (options.enable) record = await client.enablePlugin(record.pluginKey);
  const lines = [`Installed ${record.pluginKey} ${record.version} (${record.status}) from ${record.localPath ?? record.packageName}`];
  if (!options.enable) {
    lines.push('It asks for:', ...record.capabilities.map((c) => `  ${c.id.padEnd(28)} ${c.reason}`), `Enable it with: keel plugin enable ${record.pluginKey}`);
  }
  emit(options, lines, record);
}

export async function listCommand(options: GlobalOptions): Promise<void> {
  const plugins = await clientFor(options).listPlugins();
  const rows = [['KEY', 'VERSION', 'STATUS', 'RUNNING', 'SOURCE'], ...plugins.map((p: PluginRecord) => [p.pluginKey, p.version, p.status, p.running, p.localPath ?? p.packageName ?? p.sourceKind])];
  emit(options, plugins.length ? table(rows) : 'No plugins installed', plugins);
}

export async function enableCommand(key: string, options: GlobalOptions & { grant?: string[] }): Promise<void> {
  const record = await clientFor(options).enablePlugin(key, { grant: options.grant });
  emit(options, `Enabled ${record.pluginKey} ${record.version} (${record.running}); granted: ${record.grantedCapabilities.join(', ') || 'nothing'}`, record);
}

export async function disableCommand(key: string, options: GlobalOptions): Promise<void> {
  const record = await clientFor(options).disablePlugin(key);
  emit(options, `Disabled ${record.pluginKey}`, record);
}

export async function upgradeCommand(key: string, options: GlobalOptions & { grant?: string[] }): Promise<void> {
  const started = performance.now();
  const record = await clientFor(options).upgradePlugin(key, { grant: options.grant });
  const ms = performance.now() - started;
  const granted = options.grant?.length ? `; granted ${options.grant.join(', ')}` : '';
  emit(options, `Upgraded ${record.pluginKey} to ${record.version} (${record.running}) in ${formatMs(ms)}${granted}`, { ...record, ms: Math.round(ms) });
}

export async function uninstallCommand(key: string, options: GlobalOptions): Promise<void> {
  const answer = await clientFor(options).uninstallPlugin(key);
  emit(options, `Uninstalled ${key}`, answer);
}
