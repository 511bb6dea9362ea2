import type { PluginContext } from '@keel/sdk/plugin';

/**
 * The capabilities of plugin.json this code calls through `ctx` (the host refuses to run it
 * if plugin.json stops declaring one): handlers then get `ctx.db`, `ctx.executions`, ... typed.
 */
export const RUNTIME_CAPABILITIES = [
  'database.namespace.write', 'activity.write', 'agents.read', 'companies.read', 'runs.open', 'runs.close', 'executions',
  'services.consume', 'ui.streams', 'jobs.enqueue', 'principals.read', 'agents.instructions',
] as const;

export type RuntimeContext = PluginContext<(typeof RUNTIME_CAPABILITIES)[number]>;

export type Row = Record<string, unknown>;

/** Run statuses; queued and running are active. */
export const RUN_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out', 'lost'] as const;
export const ACTIVE_RUN = `status in ('queued', 'running')`;

/**
 * Adapter types other plugins contribute, and the plugin that runs each (its `adapter-run`
 * service starts a run, under services.consumes; its configuration is validated on agent
 * create and update through the kernel point `agent.adapter-config`). The plugin drives the
 * run's execution and hands its outputs and end to this plugin's `adapter-report` service.
 */
export const CONTRIBUTED_ADAPTERS: Readonly<Record<string, string>> = { eta_gateway: 'remote-runner' };

/** Adapter types this instance runs; others are accepted in configuration and refused at wake (adapter_unavailable). */
export const RUNNABLE_ADAPTERS: ReadonlySet<string> = new Set(['process', 'http', ...Object.keys(CONTRIBUTED_ADAPTERS)]);

/** The plugin that runs a contributed adapter type, or null for the runtime's own (process, http). */
export function contributorOf(adapterType: unknown): string | null {
  return typeof adapterType === 'string' && Object.hasOwn(CONTRIBUTED_ADAPTERS, adapterType) ? CONTRIBUTED_ADAPTERS[adapterType]! : null;
}

/** The stream channel of one run (GET /api/heartbeat-runs/{runId}/stream). */
export const runChannel = (runId: string) => `run-${runId}`;

/** The error code a failed host call carries (a refused execution start, for one). */
export function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'internal_error';
}
export function errorStatus(error: unknown): number {
  const status = (error as { status?: unknown } | null)?.status;
  return typeof status === 'number' ? status : 500;
}
