import type { PluginContext } from '@keel/sdk/plugin';

/** The capabilities of plugin.json this code calls through `ctx`. */
export const GATEWAY_CAPABILITIES = [
  'database.namespace.write', 'activity.write', 'secrets.store', 'agents.read', 'services.consume', 'http.proxy',
] as const;

export type GatewayContext = PluginContext<(typeof GATEWAY_CAPABILITIES)[number]>;

export type Row = Record<string, unknown>;

/** The provider kinds: the wire protocol a provider speaks. */
export const KINDS = ['anthropic', 'openai', 'gemini'] as const;
export type Kind = (typeof KINDS)[number];

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
