/**
 * Events declared once (sdk/events/define.ts): the kernel's, and those of first-party plugins
 * that other plugins subscribe to. A plugin imports them from `@keel/sdk/plugin`.
 */
import type { PayloadOf, PayloadsOf } from './define.ts';
import type { KERNEL_EVENTS_BY_NAME } from './kernel-events.ts';
import type { PLUGIN_EVENTS } from './plugin-events.ts';

export { kernelEvent, pluginEvent, type EventDeclaration, type PayloadOfSchema, type EventEntity, type KernelEventDeclaration, type PayloadOf } from './define.ts';
export * as kernelEvents from './kernel-events.ts';
export type { EventActor } from './kernel-events.ts';
export * as workEvents from './work-events.ts';
export * as costsEvents from './costs-events.ts';

export type KernelEventName = keyof typeof KERNEL_EVENTS_BY_NAME;
/** Kernel event -> payload. */
export type KernelEventPayloads = { [Name in KernelEventName]: PayloadOf<(typeof KERNEL_EVENTS_BY_NAME)[Name]> };
/**
 * The events a plugin declares in its own plugin.json (publishedEvents) that sdk/events does not
 * declare, name -> payload derived from the schema: the plugin's plugin.gen.ts (written by
 * `keel plugin build`, sdk/build/context-module.ts) adds its own by augmenting this interface,
 * so its `ctx.events.publish` and `events` handlers of those names are typed from its manifest.
 */
export interface ManifestEventPayloads {}
/** Every declared event (kernel and plugin) -> payload. */
export interface DeclaredEventPayloads extends KernelEventPayloads, PayloadsOf<typeof PLUGIN_EVENTS>, ManifestEventPayloads {}
export type DeclaredEventName = keyof DeclaredEventPayloads;

/** The payload of the event named `Name`: its declaration's, or any JSON object for an event the SDK does not declare. */
export type EventPayload<Name extends string> = Name extends DeclaredEventName ? DeclaredEventPayloads[Name] : Record<string, unknown>;
