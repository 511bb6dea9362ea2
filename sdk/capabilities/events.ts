import { defineCapability, method, present } from './define.ts';
import { text } from './schemas.ts';
import type { EventPayload } from '../events/index.ts';

/**
 * Durable events of the plugin's own (events.publish). An event is written to the kernel's
 * outbox in this call's transaction: it is delivered (at least once, in order per entity) to
 * every subscriber exactly when the call's writes commit, and never when they roll back.
 */
export interface EventsCapability {
  /**
   * `name` must be declared under `publishedEvents` in plugin.json and start with the plugin's
   * key (`<key>.`); `payload` must match the declared schema (at most 64 KiB of JSON). The event
   * belongs to the company the call serves. Answers the event's id.
   * Errors: 403 event_name_forbidden, 403 event_not_declared, 400 invalid_event_payload,
   * 403 company_scope_required, 403 events_read_only.
   * An event the SDK declares (sdk/events) takes its declared payload: name it by its
   * declaration, `publish(issueCreated.name, {...})`.
   */
  publish<Name extends string>(name: Name, payload: EventPayload<Name>, options: { entityType: string; entityId: string }): Promise<{ eventId: string }>;
}

export const eventsPublish = defineCapability<{ events: EventsCapability }>()({
  id: 'events.publish',
  summary: 'Publish the events declared under publishedEvents, named under the plugin key, with its writes',
  members: {
    events: {
      publish: method('database', [text(200), { type: 'object' }, { type: 'object', required: ['entityType', 'entityId'], properties: { entityType: { type: 'string' }, entityId: { type: 'string' } } }], { type: 'object', required: ['eventId'] }),
    },
  },
  requiredBy: (manifest) => present(manifest, 'publishedEvents'),
});
