/** The `ctx` of this plugin's handlers, typed from plugin.json (plugin.gen.ts, written by `keel plugin build`). */
export type { Context as GatewayContext } from './plugin.gen.ts';

export type Row = Record<string, unknown>;

/** The provider kinds: the wire protocol a provider speaks. */
export const KINDS = ['anthropic', 'openai', 'gemini'] as const;
export type Kind = (typeof KINDS)[number];

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
