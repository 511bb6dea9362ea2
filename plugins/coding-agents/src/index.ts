import { definePlugin } from '@keel/sdk/plugin';
import { adapterConfigService } from './config.ts';
import { CODING_AGENTS_CAPABILITIES } from './context.ts';
import { adapterLoginService, adapterTestService } from './environment-test.ts';
import { onExecutionFinished, onExecutionOutput } from './reports.ts';
import { adapterRunService } from './start.ts';

export default definePlugin({
  capabilities: CODING_AGENTS_CAPABILITIES,
  services: {
    'adapter-config': adapterConfigService,
    'adapter-run': adapterRunService,
    'adapter-test': adapterTestService,
    'adapter-login': adapterLoginService,
  },
  // Durable subscribers: each event arrives at least once, in order per execution.
  events: {
    'execution.output': onExecutionOutput,
    'execution.finished': onExecutionFinished,
  },
});
