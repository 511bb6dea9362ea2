// Written by `keel plugin build` from plugin.json; do not edit (the build writes it again).
import { definePluginWith, type BatchCall as BatchCallOf, type JobPayloadOf, type PayloadOfSchema, type PluginContext } from '@keel/sdk/plugin';

/** The capabilities plugin.json declares: `ctx` has their members, typed and present. */
export const capabilities = [
  'http.routes',
  'http.routes.absolute',
  'database.namespace.write',
  'database.namespace.migrate',
  'activity.write',
  'agents.read',
  'companies.read',
  'runs.open',
  'runs.close',
  'runs.read',
  'executions',
  'events.subscribe',
  'services.consume',
  'ui.streams',
  'jobs.enqueue',
  'principals.read',
  'agents.instructions',
  'services.provide',
] as const;

export type Capability = (typeof capabilities)[number];

/**
 * The jobs plugin.json declares, by key: `payload` is what `ctx.jobs.enqueue(key, payload)`
 * takes (the type of the job's payloadSchema; null for a job without one); `onChange`, for the
 * job a folder's onChange names, is what the host runs it with.
 */
export type Jobs = {
  'start-runs': { payload: PayloadOfSchema<{"type":"object","required":["agentId"],"properties":{"agentId":{"type":"string","format":"uuid"},"runId":{"type":"string","format":"uuid"}}}> };
  'heartbeat': { payload: PayloadOfSchema<{"type":"object","required":["agentId","slot","intervalSec"],"properties":{"agentId":{"type":"string","format":"uuid"},"slot":{"type":"integer","minimum":1},"intervalSec":{"type":"integer","minimum":1}}}> };
  'heartbeat-sweep': { payload: null };
  'routine': { payload: PayloadOfSchema<{"type":"object","required":["routineId","slot","intervalSec"],"properties":{"routineId":{"type":"string","format":"uuid"},"slot":{"type":"integer","minimum":1},"intervalSec":{"type":"integer","minimum":1}}}> };
};
/** What the handler of job `Key` receives: its payload, or null for a scheduled or operator-triggered run. */
export type JobPayload<Key extends keyof Jobs> = JobPayloadOf<Jobs[Key]>;

/** The `ctx` of every handler of this plugin. */
export type Context = PluginContext<Capability, Jobs>;
/** One call of a batched route, with its own `ctx`. */
export type BatchCall = BatchCallOf<Capability, Jobs>;

/** Declares this plugin (the default export of its entry): handlers get `Context`, jobs their payloads. */
export const definePlugin = definePluginWith<typeof capabilities, Jobs>(capabilities);
