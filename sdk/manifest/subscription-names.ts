import { KERNEL_EVENTS } from '../events/kernel-events.ts';
import { PLUGIN_EVENTS } from '../events/plugin-events.ts';
import type { PluginManifest } from '../plugin/manifest.ts';
import { reservedKeyReason } from './reserved-keys.ts';

const KERNEL_NAMES: ReadonlySet<string> = new Set(KERNEL_EVENTS.map((event) => event.name));
/** The events of each publisher the SDK declares events for (sdk/events): such a publisher publishes exactly those (declared-events.ts). */
const DECLARED_BY_PUBLISHER: ReadonlyMap<string, readonly string[]> = PLUGIN_EVENTS.reduce((map, event) => map.set(event.publisher, [...(map.get(event.publisher) ?? []), event.name]), new Map<string, string[]>());

export interface SubscriptionIssue { path: string; message: string }

/**
 * A subscription must name an event that can exist, or it would wait for nothing in silence (a
 * misspelled `agent.creatd` is a valid `<pluginKey>.<name>` by its form). Whether it can is
 * known from the manifest and the SDK alone for:
 * - a kernel event: its name must be one; every first segment a kernel event uses, and every
 *   other reserved key, is no plugin's (reserved-keys.ts), so nothing else is published under it;
 * - the plugin's own events: its publishedEvents;
 * - the events of a publisher the SDK declares (`work.*`, `costs.*`): its declarations.
 * Another plugin's events are named `<pluginKey>.<name>`; that plugin need not be installed yet
 * (its events are delivered once it publishes them). The host checks such a name against the
 * publisher's manifest when that plugin is installed (kernel/host/subscription-publishers.ts).
 */
export function subscriptionNameIssues(manifest: Pick<PluginManifest, 'key' | 'events' | 'publishedEvents'>): SubscriptionIssue[] {
  const issues: SubscriptionIssue[] = [];
  for (const [index, subscription] of (manifest.events ?? []).entries()) {
    const name = subscription.event;
    issues.push(...filterMemberIssues(subscription.where, schemaOf(manifest, name), `events.${index}.where`));
    if (KERNEL_NAMES.has(name)) continue;
    const publisher = name.split('.')[0]!;
    const path = `events.${index}.event`;
    if (reservedKeyReason(publisher) !== null) {
      issues.push({ path, message: `'${name}' is not a kernel event, and no plugin publishes under '${publisher}.'${nearest(name, [...KERNEL_NAMES])}` });
    } else if (publisher === manifest.key) {
      const own = (manifest.publishedEvents ?? []).map((event) => event.name);
      if (!own.includes(name)) issues.push({ path, message: `'${name}' is not one of this plugin's publishedEvents${nearest(name, own)}` });
    } else {
      const declared = DECLARED_BY_PUBLISHER.get(publisher);
      if (declared && !declared.includes(name)) issues.push({ path, message: `'${name}' is not an event ${publisher} publishes (sdk/events declares its events)${nearest(name, declared)}` });
    }
  }
  return issues;
}

/** The payload schema of an event the SDK or the manifest itself declares (a kernel event's payload is a TypeScript type: not known here). */
function schemaOf(manifest: Pick<PluginManifest, 'publishedEvents'>, name: string): unknown {
  return (manifest.publishedEvents ?? []).find((event) => event.name === name)?.schema ?? PLUGIN_EVENTS.find((event) => event.name === name)?.schema;
}

/**
 * A filter on a member the payload cannot have would hold for no event, and the subscriber
 * would wait for nothing in silence: where the payload's schema is known, each filtered member
 * must be one of its properties.
 */
function filterMemberIssues(where: Record<string, unknown> | undefined, schema: unknown, path: string): SubscriptionIssue[] {
  const properties = (schema as { properties?: Record<string, unknown> } | undefined)?.properties;
  if (!where || !properties) return [];
  return Object.keys(where).filter((member) => !Object.hasOwn(properties, member))
    .map((member) => ({ path: `${path}.${member}`, message: `names no member of the event's payload (its members: ${Object.keys(properties).join(', ')})` }));
}

/** ` (events under the same first segment: a, b)`, to point at what was probably meant. */
function nearest(name: string, known: readonly string[]): string {
  const prefix = `${name.split('.')[0]}.`;
  const near = known.filter((candidate) => candidate.startsWith(prefix));
  return near.length ? ` (known: ${near.join(', ')})` : '';
}
