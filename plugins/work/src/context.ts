/** The `ctx` of this plugin's handlers, typed from plugin.json (plugin.gen.ts, written by `keel plugin build`). */
export type { Context as WorkContext } from './plugin.gen.ts';
