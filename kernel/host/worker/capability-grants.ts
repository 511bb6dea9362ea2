/**
 * Which grant each `ctx` capability call needs. One table for the extension-host worker and
 * for sdk/testing, so that a plugin's unit test fails exactly where the real host refuses.
 */
export const GRANT_OF: Readonly<Record<string, (method: string) => string[]>> = {
  db: () => ['database.namespace.read', 'database.namespace.write'],
  activity: () => ['activity.write'],
  http: () => ['http.fetch'],
  folders: () => ['local.folders'],
  companies: () => ['companies.read'],
  agents: (method) => (method === 'get' || method === 'list' ? ['agents.read', 'agents.pause'] : ['agents.pause']),
  runs: (method) => [method === 'open' ? 'runs.open' : 'runs.close'],
  secrets: () => ['secrets.resolve'],
  services: () => ['services.consume'],
  streams: () => ['ui.streams'],
  budgets: () => ['budgets.write'],
  blobs: (method) => (method === 'get' || method === 'readText' ? ['blobs.read', 'blobs.write'] : ['blobs.write']),
  scopes: (method) => [method.endsWith('Company') ? 'companies.pause' : 'agents.pause'],
  jobs: () => ['jobs.enqueue'],
  progress: () => ['jobs.schedule', 'jobs.enqueue'],
  events: () => ['events.publish'],
};

/** Capabilities served by the kernel, because they touch kernel data outside the plugin's role. */
export const KERNEL_CAPABILITIES: ReadonlySet<string> = new Set(['companies', 'agents', 'runs', 'secrets', 'services', 'streams', 'jobs', 'progress', 'blobs']);

/** The arguments of a bridge call: a JSON array, or undefined when they are not one. */
export function parseCallArguments(argsJson: string): unknown[] | undefined {
  try {
    const args = JSON.parse(argsJson) as unknown;
    return Array.isArray(args) ? args : undefined;
  } catch {
    return undefined;
  }
}
