import { definePlugin } from './plugin.gen.ts';
import { kernelEvents } from '@keel/sdk/plugin';
import { adapterConfigService } from './config.ts';
import { onExecutionFinished, onExecutionOutput } from './reports.ts';
import { adapterRunService } from './start.ts';

export default definePlugin({
  services: {
    'adapter-config': adapterConfigService,
    'adapter-run': adapterRunService,
  },
  // Durable subscribers: each event arrives at least once, in order per execution.
  events: {
    [kernelEvents.executionOutput.name]: onExecutionOutput,
    [kernelEvents.executionFinished.name]: onExecutionFinished,
  },
});
