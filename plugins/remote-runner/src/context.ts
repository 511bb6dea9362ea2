import type { PluginContext } from '@keel/sdk/plugin';

/** The capabilities of plugin.json this code calls through `ctx`. */
export const REMOTE_RUNNER_CAPABILITIES = ['database.namespace.write', 'agents.read', 'executions', 'services.consume'] as const;

export type RemoteRunnerContext = PluginContext<(typeof REMOTE_RUNNER_CAPABILITIES)[number]>;

/** The adapter type this plugin contributes to the agent runtime. */
export const ADAPTER_TYPE = 'eta_gateway';
