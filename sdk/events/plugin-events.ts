import { COSTS_EVENTS } from './costs-events.ts';
import { WORK_EVENTS } from './work-events.ts';

/**
 * The plugin events the SDK declares: manifest validation checks a publisher's plugin.json
 * against them (sdk/manifest/declared-events.ts). A module of its own, outside what plugin
 * bundles import, so that a plugin's bundle carries only the declarations it names.
 */
export const PLUGIN_EVENTS = [...WORK_EVENTS, ...COSTS_EVENTS] as const;
