import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Invocation } from '../../worker/invocation.ts';
import type { ActivityEntityKinds } from '../../worker/capabilities/activity-entity-kinds.ts';

/**
 * Events a call publishes, written just before its COMMIT rather than when published.
 *
 * Appending an event takes the advisory lock of its (publisher, entity) until the commit (it
 * keeps the outbox's order per entity the commit order, migration 0033). Written when the
 * plugin publishes, the lock is held for the rest of the call too: every comment of one issue
 * waited for the whole call of the comment before it. Buffered, the event is written in the
 * pipeline that carries the call's activity entries and its COMMIT, so the lock is held for
 * the commit alone and the publish costs no round trip of its own. The plugin is answered the
 * event's id at once: the worker chooses it (migration 0042).
 *
 * Only what the database cannot refuse is buffered, since a refusal at the commit could only
 * fail the call as a whole (500), not as the documented 403/413/429 a plugin may catch: an
 * event about a kernel entity (which the database checks against the call's company) is
 * written at once, as are a call's events beyond the first MAX_EVENTS or MAX_CHARS of payload
 * (far below the database's per-call bounds), and every event after one written at once, so
 * that the call's events of one entity keep their order. A batch's calls (one transaction,
 * one savepoint per call) write theirs at once too.
 */
const MAX_EVENTS = 100;
const MAX_CHARS = 256 * 1024;

const PUBLISH = 'select keel_bridge.publish_event($1, $2, $3, $4, $5, $6::jsonb, $7::uuid) as id';

/** The values of keel_bridge.publish_event: signed identity, name, entity, payload text. */
export type EventValues = [invocation: string, signature: string, name: string, entityType: string, entityId: string, payload: string];

/** Buffers the event when it may wait for the commit (see above) and answers its id; null when it must be written now. */
export async function deferEvent(invocation: Invocation, values: EventValues, kinds: ActivityEntityKinds): Promise<string | null> {
  const pending = invocation.pendingEvents;
  if (invocation.eventsWrittenAtOnce || invocation.batch || invocation.batchLead || invocation.leadId || !invocation.wantsTransaction) return null;
  const kind = values[3].trim().toLowerCase();
  if (kind === 'execution' || (await kinds.get(invocation)).has(kind)) return null;
  const chars = pending.reduce((sum, event) => sum + event[5].length, values[5].length);
  if (pending.length >= MAX_EVENTS || chars > MAX_CHARS) return null;
  const id = randomUUID();
  pending.push([...values, id]);
  return id;
}

/**
 * Writes the buffered events on the call's transaction, queued together (the connection
 * pipelines). Ordered by entity, each entity's events in the order published: the order is
 * promised per (publisher, entity) only, and taking the entities' locks in one order keeps two
 * calls that publish about the same two entities from deadlocking at their commits.
 */
export async function writePendingEvents(client: pg.PoolClient, invocation: Invocation): Promise<void> {
  const pending = invocation.pendingEvents.splice(0);
  if (pending.length === 0) return;
  const key = (event: (typeof pending)[number]) => `${event[3]}\u0000${event[4]}`;
  const ordered = pending.map((event, index) => ({ event, index }))
    .sort((a, b) => (key(a.event) < key(b.event) ? -1 : key(a.event) > key(b.event) ? 1 : a.index - b.index));
  await Promise.all(ordered.map(({ event }) => client.query({ text: PUBLISH, values: event })));
}
