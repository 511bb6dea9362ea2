/** The `ctx` of this plugin's handlers, typed from plugin.json (plugin.gen.ts, written by `keel plugin build`). */
export type { Context as WikiContext } from './plugin.gen.ts';

/** The one folder mount the wiki lives in. */
export const ROOT = 'wiki-root';
