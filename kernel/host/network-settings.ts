import type { KeelConfig } from '../config/schema.ts';

/**
 * The operator's private-network allowance for one plugin: the hosts of configuration
 * `plugins.privateNetworkHosts` ("<pluginKey>@<host>") that name this plugin. Read once
 * when the plugin's worker starts. The worker applies an entry only to a host its manifest
 * names exactly (not through a wildcard), and never to cloud metadata addresses.
 */
export function privateNetworkHostsFor(config: KeelConfig, pluginKey: string): string[] {
  return entriesFor(config.plugins?.privateNetworkHosts, pluginKey);
}

/**
 * Hosts the operator adds to one plugin's network allow-list (configuration
 * `plugins.networkHosts`, "<pluginKey>@<host>[:<port>]"), read when the plugin's worker starts:
 * destinations the operator chooses rather than the manifest, checked like every other fetch.
 */
export function operatorNetworkHostsFor(config: KeelConfig, pluginKey: string): string[] {
  return entriesFor(config.plugins?.networkHosts, pluginKey);
}

function entriesFor(entries: readonly string[] | undefined, pluginKey: string): string[] {
  const hosts: string[] = [];
  for (const entry of entries ?? []) {
    const at = entry.indexOf('@');
    if (at > 0 && entry.slice(0, at) === pluginKey) hosts.push(entry.slice(at + 1).toLowerCase());
  }
  return hosts;
}
