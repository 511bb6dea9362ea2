import { issuesNumber as spec } from '../../../../sdk/capabilities/kernel-data.ts';
import { kernelUnit } from '../unit.ts';

/** Served in the worker (worker.ts) through keel_bridge.next_issue_number, keel_bridge.next_issue_numbers (bridge.sql), executable by the plugin's role only with this capability granted. */
export const kernelSide = kernelUnit(spec, {
  bridgeFunctions: ['keel_bridge.next_issue_number(text, text)', 'keel_bridge.next_issue_numbers(text, text, integer)'],
});
