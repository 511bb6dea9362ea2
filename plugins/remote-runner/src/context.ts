/** The `ctx` of this plugin's handlers, typed from plugin.json (plugin.gen.ts, written by `keel plugin build`). */
export type { Context as RemoteRunnerContext } from './plugin.gen.ts';

/** The adapter type this plugin contributes to the agent runtime. */
export const ADAPTER_TYPE = 'eta_gateway';
