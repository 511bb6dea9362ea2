import { KERNEL_EVENTS } from '../events/kernel-events.ts';

/**
 * Plugin keys no plugin may take. A plugin's key becomes a path segment under /api/plugins/,
 * the prefix of its tools, actions and events (`<key>.<name>`), part of its database role
 * names and the `plugin:<key>` actor of what it does. A key equal to a host route under
 * /api/plugins/ would be shadowed by it (or shadow it), and a key equal to a kernel concept
 * would let the plugin's contributions pass for the kernel's own (`agent.paused`, `system`).
 */
const RESERVED: ReadonlyArray<[string, string]> = [
  // Host routes under /api/plugins/ (kernel/host/plugin-api-routes.ts).
  ...['install', 'examples', 'tools', 'manifest-schema', 'ui-contributions'].map((key) => [key, `/api/plugins/${key} is a host route`] as [string, string]),
  // The platform itself and the host's per-plugin routes.
  ...['kernel', 'keel', 'core', 'host', 'extension-host', 'system', 'internal', 'sdk', 'api', 'admin', 'plugin', 'plugins',
    'health', 'logs', 'config', 'scheduler', 'local-board'].map((key) => [key, 'it names the platform or one of its routes'] as [string, string]),
  // Kernel domains: their events, activity actions and capabilities are named `<domain>.<...>`.
  ...['company', 'companies', 'agent', 'agents', 'run', 'runs', 'activity', 'secret', 'secrets', 'vault', 'auth',
    'instance', 'user', 'users', 'approval', 'approvals', 'asset', 'assets', 'events', 'jobs', 'webhooks'].map((key) => [key, 'it names a kernel domain, whose events and actions are the kernel\'s'] as [string, string]),
  // The first segment of every kernel event's name (`execution.finished`, `proxy.finished`): a
  // subscription under it is to a kernel event or to nothing (subscription-names.ts).
  ...KERNEL_EVENTS.map((event) => [event.name.split('.')[0]!, 'it names a kernel domain, whose events and actions are the kernel\'s'] as [string, string]),
];

const REASONS = new Map(RESERVED);

/**
 * Names of the members every JavaScript object inherits (`constructor`, `__proto__`,
 * `hasOwnProperty`, …), taken from the runtime rather than listed by hand, plus `prototype`.
 * A key read from a manifest is used as a property name (handler tables, per-plugin maps): one
 * of these would find the inherited member instead of nothing, or set an object's prototype.
 */
export const PROTOTYPE_MEMBER_NAMES: readonly string[] = [...new Set([...Object.getOwnPropertyNames(Object.prototype), 'prototype'])].sort();
const PROTOTYPE_MEMBERS = new Set(PROTOTYPE_MEMBER_NAMES);

/** Whether `name` is one of PROTOTYPE_MEMBER_NAMES. */
export function isPrototypeMemberName(name: string): boolean {
  return PROTOTYPE_MEMBERS.has(name);
}

/** Why `key` is reserved, or null when a plugin may use it. */
export function reservedKeyReason(key: string): string | null {
  if (PROTOTYPE_MEMBERS.has(key)) return 'it names a member every JavaScript object inherits';
  return REASONS.get(key) ?? null;
}

export const RESERVED_PLUGIN_KEYS: readonly string[] = [...REASONS.keys()];
