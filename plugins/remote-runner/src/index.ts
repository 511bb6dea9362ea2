import { definePlugin } from '@keel/sdk/plugin';
import { adapterConfigService } from './config.ts';
import { REMOTE_RUNNER_CAPABILITIES } from './context.ts';
import { onExecutionFinished, onExecutionOutput } from './reports.ts';
import { adapterRunService } from './start.ts';

export default definePlugin({
  capabilities: REMOTE_RUNNER_CAPABILITIES,
  services: {
    'adapter-config': adapterConfigService,
    'adapter-run': adapterRunService,
  },
  // Durable subscribers: each event arrives at least once, in order per execution.
  events: {
    'execution.output': onExecutionOutput,
    'execution.finished': onExecutionFinished,
  },
});
