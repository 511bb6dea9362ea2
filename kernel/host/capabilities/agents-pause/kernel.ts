import { agentsPause as spec } from '../../../../sdk/capabilities/kernel-data.ts';
import { kernelUnit } from '../unit.ts';

/** Served in the worker (worker.ts) through keel_bridge.hold_agent (bridge.sql), executable by the plugin's role only with this capability granted. */
export const kernelSide = kernelUnit(spec, {
  bridgeFunctions: ['keel_bridge.hold_agent(text, text, uuid, boolean, text)'],
  writesKernelRows: true,
});
