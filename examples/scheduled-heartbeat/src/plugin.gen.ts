// Written by `keel plugin build` from plugin.json; do not edit (the build writes it again).
import { definePluginWith, type BatchCall as BatchCallOf, type PluginContext } from '@keel/sdk/plugin';

/** The capabilities plugin.json declares: `ctx` has their members, typed and present. */
export const capabilities = [
  'jobs.schedule',
  'database.namespace.write',
  'database.namespace.migrate',
  'http.routes',
] as const;

export type Capability = (typeof capabilities)[number];
/** The `ctx` of every handler of this plugin. */
export type Context = PluginContext<Capability>;
/** One call of a batched route, with its own `ctx`. */
export type BatchCall = BatchCallOf<Capability>;

/** Declares this plugin (the default export of its entry): handlers get `Context`. */
export const definePlugin = definePluginWith(capabilities);
