/** The `ctx` of this plugin's handlers, typed from plugin.json (plugin.gen.ts, written by `keel plugin build`). */
export type { Context as CostsContext, BatchCall } from './plugin.gen.ts';
