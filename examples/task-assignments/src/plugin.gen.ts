// Written by `keel plugin build` from plugin.json; do not edit (the build writes it again).
import { definePluginWith, type BatchCall as BatchCallOf, type PayloadOfSchema, type PluginContext } from '@keel/sdk/plugin';

/** The capabilities plugin.json declares: `ctx` has their members, typed and present. */
export const capabilities = [
  'http.routes',
  'events.publish',
  'events.subscribe',
  'database.namespace.write',
  'database.namespace.migrate',
] as const;

export type Capability = (typeof capabilities)[number];
/** The `ctx` of every handler of this plugin. */
export type Context = PluginContext<Capability>;
/** One call of a batched route, with its own `ctx`. */
export type BatchCall = BatchCallOf<Capability>;

/** Declares this plugin (the default export of its entry): handlers get `Context`. */
export const definePlugin = definePluginWith(capabilities);

/** The payloads of the events plugin.json publishes, from their schemas: publish and subscribe are typed by them. */
declare module '@keel/sdk/plugin' {
  interface ManifestEventPayloads {
    'task-assignments.task.assigned': PayloadOfSchema<{"type":"object","required":["taskId","assignee"],"additionalProperties":false,"properties":{"taskId":{"type":"string","maxLength":200},"assignee":{"type":"string","maxLength":200},"previous":{"type":["string","null"]}}}>;
  }
}
