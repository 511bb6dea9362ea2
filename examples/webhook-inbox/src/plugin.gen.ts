// Written by `keel plugin build` from plugin.json; do not edit (the build writes it again).
import { definePluginWith, type BatchCall as BatchCallOf, type JobPayloadOf, type PluginContext } from '@keel/sdk/plugin';

/** The capabilities plugin.json declares: `ctx` has their members, typed and present. */
export const capabilities = [
  'webhooks.receive',
  'database.namespace.write',
  'database.namespace.migrate',
  'http.routes',
] as const;

export type Capability = (typeof capabilities)[number];

/**
 * The jobs plugin.json declares, by key: `payload` is what `ctx.jobs.enqueue(key, payload)`
 * takes (the type of the job's payloadSchema; null for a job without one); `onChange`, for the
 * job a folder's onChange names, is what the host runs it with.
 */
export type Jobs = {};
/** What the handler of job `Key` receives: its payload, or null for a scheduled or operator-triggered run. */
export type JobPayload<Key extends keyof Jobs> = JobPayloadOf<Jobs[Key]>;

/** The `ctx` of every handler of this plugin. */
export type Context = PluginContext<Capability, Jobs>;
/** One call of a batched route, with its own `ctx`. */
export type BatchCall = BatchCallOf<Capability, Jobs>;

/** Declares this plugin (the default export of its entry): handlers get `Context`, jobs their payloads. */
export const definePlugin = definePluginWith<typeof capabilities, Jobs>(capabilities);
