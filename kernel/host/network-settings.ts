import type { KeelConfig } from '../config/schema.ts';

/**
 * The operator's private-network allowance for one plugin: the hosts of configuration
 * `plugins.privateNetworkHosts` ("<pluginKey>@<host>") that name this plugin. Read once
 * when the plugin's worker starts. The worker applies an entry only to a host its manifest
 * names exactly (not through a wildcard), and never to cloud metadata addresses.
 */
export function privateNetworkHostsFor(config: KeelConfig, pluginKey: string): string[] {
  const hosts: string[] = [];
  for (const entry of config.plugins?.privateNetworkHosts ?? []) {
    const at = entry.indexOf('@');
    if (at > 0 && entry.slice(0, at) === pluginKey) hosts.push(entry.slice(at + 1).toLowerCase());
  }
  return hosts;
}
