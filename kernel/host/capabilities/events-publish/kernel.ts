import { eventsPublish as spec } from '../../../../sdk/capabilities/events.ts';
import { kernelUnit } from '../unit.ts';

/**
 * Served in the worker (worker.ts): the publication is checked there (publication-check.ts)
 * and written through keel_bridge.publish_event (bridge.sql), executable by the plugin's role
 * only with this capability granted, which checks the name and its declaration once more.
 */
export const kernelSide = kernelUnit(spec, {
  bridgeFunctions: ['keel_bridge.publish_event(text, text, text, text, text, jsonb)', 'keel_bridge.publish_event(text, text, text, text, text, jsonb, uuid)'],
});
