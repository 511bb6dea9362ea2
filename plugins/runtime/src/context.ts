import { PluginError } from '@keel/sdk/plugin';
import type { Context as RuntimeContext } from './plugin.gen.ts';

/** The `ctx` of this plugin's handlers, typed from plugin.json (plugin.gen.ts, written by `keel plugin build`). */
export type { RuntimeContext };

/**
 * The payload of an enqueued job of this plugin (start-runs, heartbeat, routine), typed by its
 * payloadSchema in plugin.json. These jobs only run on what they were enqueued with; an
 * operator's trigger runs a job with no payload (null), which is refused rather than run on nothing.
 */
export function enqueuedPayload<Payload>(job: string, payload: Payload | null): Payload {
  if (payload === null) throw new PluginError(400, 'job_payload_required', `The ${job} job runs only as enqueued, with its payload; a run without one (an operator's trigger) has nothing to do`);
  return payload;
}

export type Row = Record<string, unknown>;

/** Run statuses; queued and running are active. */
export const RUN_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out', 'lost'] as const;
export const ACTIVE_RUN = `status in ('queued', 'running')`;

/** The adapter types this plugin runs itself; every other runnable type is contributed by a plugin. */
export const OWN_ADAPTERS: ReadonlySet<string> = new Set(['process', 'http']);

/**
 * The plugin that runs a contributed adapter type, or null for the runtime's own (process,
 * http) and for a type nobody contributes. The kernel answers from the plugins it registered
 * for the point `agent.adapter-config` with that type (`adapterTypes`): such a plugin validates
 * the type's configuration on agent create and update, starts its runs through its
 * `adapter-run` service (declared `contractOf: "runtime"`), drives their execution and hands
 * their outputs and end to this plugin's `adapter-report` service. Two plugins contributing one
 * type answer 409 adapter_type_contested, which the caller passes on.
 */
export async function contributorOf(ctx: RuntimeContext, adapterType: unknown): Promise<string | null> {
  if (typeof adapterType !== 'string' || OWN_ADAPTERS.has(adapterType)) return null;
  return (await ctx.services.adapterContributor(adapterType)).plugin;
}

/** Whether this instance runs the type now: its own, or one an enabled plugin contributes. */
export async function runnable(ctx: RuntimeContext, adapterType: string): Promise<boolean> {
  return OWN_ADAPTERS.has(adapterType) || (await contributorOf(ctx, adapterType)) !== null;
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

/**
 * Why this instance cannot run an adapter type: no enabled plugin contributes it. The local
 * coding-agent tools come with the coding-agents plugin; eta_local and zeta_gateway have no
 * driver in Keel (docs/api/runtime.md, "Local adapters").
 */
export function unavailableMessage(adapterType: string): string {
  const why = adapterType === 'eta_local' || adapterType === 'zeta_gateway' ? 'Keel ships no driver for it'
    : 'no enabled plugin contributes it (the local coding-agent tools come with the coding-agents plugin)';
  return `This instance cannot run the adapter ${adapterType}: ${why}`;
}
