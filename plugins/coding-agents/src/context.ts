import type { PluginContext } from '@keel/sdk/plugin';

/** The capabilities of plugin.json this code calls through `ctx`. */
export const CODING_AGENTS_CAPABILITIES = ['database.namespace.write', 'agents.read', 'executions', 'services.consume'] as const;

export type CodingAgentsContext = PluginContext<(typeof CODING_AGENTS_CAPABILITIES)[number]>;

export type Row = Record<string, unknown>;

export const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
