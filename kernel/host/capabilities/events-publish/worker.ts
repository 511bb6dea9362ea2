import { eventsPublish as spec } from '../../../../sdk/capabilities/events.ts';
import type { ActivityEntityKinds } from '../../worker/capabilities/activity-entity-kinds.ts';
import type { PluginDatabase } from '../../worker/capabilities/database.ts';
import { deferEvent, writePendingEvents, type EventValues } from './events-at-commit.ts';
import { checkPublication, type Publisher } from './publication-check.ts';
import { CapabilityError, type WorkerCapability } from '../../worker/capabilities/types.ts';
import { workerUnit } from '../../worker/capabilities/unit.ts';

/**
 * `ctx.events.publish(name, payload, { entityType, entityId })` (events.publish). The name (the
 * plugin's own key, declared in its manifest) and the payload (the declared schema) are
 * checked first, here in the worker, outside the isolate, against the declarations the kernel
 * handed over with the plugin (publication-check.ts: a question to the kernel cost every
 * publishing call a round trip over the channel while its transaction was open); then the event is appended to the outbox in this invocation's own
 * transaction through `keel_bridge.publish_event` (usually just before its COMMIT:
 * events-at-commit.ts), which verifies the kernel-signed identity,
 * takes the company from it and checks the name and the declaration again. The event therefore
 * exists exactly when the plugin's writes commit, and a plugin can never publish under another
 * key or as the kernel. The database also refuses an entity of another company (as it refuses
 * such an activity entry) and a call's events beyond the per-call bounds (migration 0033);
 * each refusal raises there, so the call's transaction, with its earlier events, rolls back.
 */
export function eventsCapability(db: PluginDatabase | null, publisher: Publisher, kinds: ActivityEntityKinds): WorkerCapability {
  return {
    publish: async (invocation, args) => {
      if (!db) throw new CapabilityError(403, 'events_unavailable', 'publishing events needs the plugin database connection');
      if (invocation.message.readOnly || !invocation.message.transactional) {
        throw new CapabilityError(403, 'events_read_only', 'events can be published only from a mutating, transactional call (their outbox row commits with its writes); this call is read-only');
      }
      const signed = invocation.message.signed;
      if (!signed || !invocation.message.info.companyId) {
        throw new CapabilityError(403, 'company_scope_required', 'events belong to a company, and this call serves none; publish from a route under a company, or from a job declared perCompany: true');
      }
      const checked = checkPublication(publisher, args);
      const values: EventValues = [signed.invocation, signed.signature, checked.name, checked.entityType, checked.entityId, JSON.stringify(checked.payload)];
      // The transaction is opened now (it usually is already), so that a buffered event has one to join.
      const client = await db.transactionOf(invocation)!;
      const deferred = await deferEvent(invocation, values, kinds);
      if (deferred) return { eventId: deferred };
      invocation.eventsWrittenAtOnce = true;
      try {
        // Events buffered before this one go first: the call's events of one entity keep their order.
        await db.statement(client, () => writePendingEvents(client, invocation));
        const result = await db.statement(client, () => client.query({
          text: 'select keel_bridge.publish_event($1, $2, $3, $4, $5, $6::jsonb) as id',
          values,
        }));
        return { eventId: (result.rows[0] as { id: string }).id };
      } catch (error) {
        throw refusal(error) ?? error;
      }
    },
  };
}

/**
 * The database's refusals (keel_bridge.publish_event, bridge.sql beside this file) by their hint, as the
 * plugin sees them: the API's error shape, so that the error catalog (docs/errors.md) and its
 * test know these codes.
 */
const REFUSALS: Readonly<Record<string, (message: string) => { status: number; code: string; message: string }>> = {
  keel_activity_entity: (message) => ({ status: 403, code: 'event_entity_denied', message }),
  keel_event_count: (message) => ({ status: 429, code: 'too_many_events', message }),
  keel_event_bytes: (message) => ({ status: 413, code: 'event_bytes_exceeded', message }),
};

function refusal(error: unknown): CapabilityError | null {
  const pgError = error as { code?: string; hint?: string; message?: string };
  const refused = pgError?.hint && Object.hasOwn(REFUSALS, pgError.hint) ? REFUSALS[pgError.hint]!(`ctx.events.publish refused: ${pgError.message}`) : undefined;
  if (refused) return new CapabilityError(refused.status, refused.code, refused.message);
  return pgError?.code === '42501' ? new CapabilityError(403, 'event_name_forbidden', `the database refused: ${pgError.message}`) : null;
}

export const workerSide = workerUnit(spec, ({ init, database, activityKinds }) => ({
  events: eventsCapability(database, { key: init.pluginKey, publishedEvents: init.publishedEvents }, activityKinds),
}));
