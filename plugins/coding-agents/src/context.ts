/** The `ctx` of this plugin's handlers, typed from plugin.json (plugin.gen.ts, written by `keel plugin build`). */
export type { Context as CodingAgentsContext } from './plugin.gen.ts';

export type Row = Record<string, unknown>;

export const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
