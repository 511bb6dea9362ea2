import type { Database, Row } from '../../db/database.ts';
import { iso, prepared } from '../../db/database.ts';

/** The statements of every delivery round, planned once per connection (database.ts). */
const CLAIM = prepared('event_claim', `
  with due as (
    select d.subscriber, d.event_seq from keel_events.deliveries d
     where d.subscriber in (select jsonb_array_elements_text($1::jsonb))
       and ((d.state = 'pending' and d.available_at <= now()) or (d.state = 'leased' and d.lease_until <= now()))
       and not exists (select 1 from keel_events.deliveries e
                        where e.subscriber = d.subscriber and e.publisher = d.publisher
                          and e.entity_type = d.entity_type and e.entity_id = d.entity_id
                          and e.event_seq < d.event_seq and e.state in ('pending', 'leased', 'dead'))
     order by d.event_seq
     limit $2
     for update of d skip locked)
  update keel_events.deliveries d
     set state = 'leased', lease_until = now() + make_interval(secs => $3::double precision / 1000), leased_by = $4, attempts = d.attempts + 1
    from due, keel_events.outbox o
   where d.subscriber = due.subscriber and d.event_seq = due.event_seq and o.seq = d.event_seq
  returning d.subscriber, d.event_seq::text as event_seq, d.attempts, o.id as event_id, o.name, o.publisher, o.company_id,
            o.entity_type, o.entity_id, o.payload, o.created_at`);

const DELIVERED = prepared('event_delivered', `
  update keel_events.deliveries set state = 'delivered', lease_until = null, finished_at = now(), last_error = null
   where subscriber = $1 and event_seq = $2::bigint and state = 'leased' and leased_by = $3 and attempts = $4`);

const FAILED = prepared('event_failed', `
  update keel_events.deliveries
     set state = $1, lease_until = null, last_error = $2, available_at = now() + make_interval(secs => $3::double precision / 1000),
         finished_at = case when $4::boolean then now() end
   where subscriber = $5 and event_seq = $6::bigint and state = 'leased' and leased_by = $7 and attempts = $8`);

const UNSETTLED = prepared('event_unsettled', `
  select count(*)::int as n from keel_events.deliveries d
   where d.subscriber in (select jsonb_array_elements_text($1::jsonb))
     and d.event_seq = (select o.seq from keel_events.outbox o where o.id = $2::uuid)
     and (d.state = 'leased' or (d.state = 'pending' and d.attempts = 0))`);

// A pending delivery behind an open one of its queue is not due at its own time (nextDueAt).
const NEXT_DUE = prepared('event_next_due', `
  select min(case when d.state = 'pending' then d.available_at else d.lease_until end) as at
    from keel_events.deliveries d
   where d.subscriber in (select jsonb_array_elements_text($1::jsonb)) and d.state in ('pending', 'leased')
     and (d.state = 'leased'
          or not exists (select 1 from keel_events.deliveries e
                          where e.subscriber = d.subscriber and e.publisher = d.publisher
                            and e.entity_type = d.entity_type and e.entity_id = d.entity_id
                            and e.event_seq < d.event_seq and e.state in ('pending', 'leased', 'dead')))`);

/** One leased delivery: an event of the outbox on its way to one subscriber. */
export interface LeasedDelivery {
  subscriber: string;
  eventSeq: string;
  eventId: string;
  name: string;
  publisher: string;
  companyId: string | null;
  entityType: string;
  entityId: string;
  payload: Record<string, unknown>;
  occurredAt: string;
  attempt: number;
}

export interface DeliveryHealth { pending: number; leased: number; dead: number; oldestPendingAt: string | null; lastError: string | null }

export interface DeadLetter { eventId: string; name: string; publisher: string; companyId: string | null; entityType: string; entityId: string; attempts: number; lastError: string | null; occurredAt: string; failedAt: string | null }

/**
 * The delivery rows of keel_events (migrations 0014, 0033), as the delivering processes use
 * them. A claim leases the head of each (publisher, entity) queue for each subscriber: a
 * delivery is due when it is pending and available, or leased with an expired lease (its
 * process died), and no earlier event of the same publisher and entity is still open for that
 * subscriber (pending, leased or dead), so one subscriber never sees one publisher's events of
 * an entity out of order or two of them at once. The queue is per publisher so that a dead
 * letter of one plugin's event cannot hold back the kernel's (or another plugin's) events of
 * the same entity at that subscriber. FOR UPDATE SKIP
 * LOCKED lets processes claim side by side without waiting for or taking each other's rows.
 * Every write after the claim names the lease (process and attempt): a process whose lease
 * expired and was taken over changes nothing.
 */
export class EventOutbox {
  private readonly db: Database;

  constructor(db: Database) {
    this.db = db;
  }

  async claim(subscribers: readonly string[], limit: number, leaseMs: number, owner: string): Promise<LeasedDelivery[]> {
    if (subscribers.length === 0) return [];
    const rows = await this.db.query(CLAIM, [JSON.stringify(subscribers), limit, leaseMs, owner]);
    return rows.map(toLeased).sort((a, b) => Number(BigInt(a.eventSeq) - BigInt(b.eventSeq)));
  }

  async delivered(delivery: LeasedDelivery, owner: string): Promise<void> {
    await this.db.exec(DELIVERED, [delivery.subscriber, delivery.eventSeq, owner, delivery.attempt]);
  }

  /** A failed attempt: retried after `retryMs`, or a dead letter once `dead` says so. */
  async failed(delivery: LeasedDelivery, owner: string, error: string, retryMs: number, dead: boolean): Promise<void> {
    await this.db.exec(FAILED, [dead ? 'dead' : 'pending', error.slice(0, 2000), retryMs, dead, delivery.subscriber, delivery.eventSeq, owner, delivery.attempt]);
  }

  /**
   * How many deliveries of one event to these subscribers are still on their way: pending and
   * never tried, or leased. A failed attempt (pending again, to be retried later) no longer counts.
   */
  async unsettled(eventId: string, subscribers: readonly string[]): Promise<number> {
    const row = await this.db.maybeOne<{ n: number }>(UNSETTLED, [JSON.stringify(subscribers), eventId]);
    return row?.n ?? 0;
  }

  /**
   * When the next delivery of these subscribers falls due (a retry's wait, a lease's expiry), if
   * any. A pending delivery behind an open one of its queue is not due at its own time: it
   * follows its head, whose end wakes delivery again (the head's lease expiry counts here, in
   * case its process died). Counting it made a process that delivered a queue's head look
   * again every few milliseconds until that delivery ended.
   */
  async nextDueAt(subscribers: readonly string[]): Promise<Date | null> {
    if (subscribers.length === 0) return null;
    const row = await this.db.maybeOne<{ at: Date | null }>(NEXT_DUE, [JSON.stringify(subscribers)]);
    return row?.at ? new Date(row.at) : null;
  }

  async health(subscriber: string): Promise<DeliveryHealth> {
    const row = await this.db.maybeOne(
      `select count(*) filter (where state = 'pending')::int as pending, count(*) filter (where state = 'leased')::int as leased,
              count(*) filter (where state = 'dead')::int as dead,
              min(o.created_at) filter (where state in ('pending', 'leased')) as oldest,
              (array_agg(d.last_error order by d.event_seq desc) filter (where d.last_error is not null))[1] as last_error
         from keel_events.deliveries d join keel_events.outbox o on o.seq = d.event_seq
        where d.subscriber = ? and d.state in ('pending', 'leased', 'dead')`,
      [subscriber],
    );
    return { pending: row?.pending ?? 0, leased: row?.leased ?? 0, dead: row?.dead ?? 0, oldestPendingAt: iso(row?.oldest), lastError: row?.last_error ?? null };
  }

  async deadLetters(subscriber: string, limit: number): Promise<DeadLetter[]> {
    const rows = await this.db.query(
      `select o.id, o.name, o.publisher, o.company_id, o.entity_type, o.entity_id, o.created_at, d.attempts, d.last_error, d.finished_at
         from keel_events.deliveries d join keel_events.outbox o on o.seq = d.event_seq
        where d.subscriber = ? and d.state = 'dead' order by d.event_seq limit ?`,
      [subscriber, limit],
    );
    return rows.map((r) => ({
      eventId: r.id, name: r.name, publisher: r.publisher, companyId: r.company_id, entityType: r.entity_type, entityId: r.entity_id,
      attempts: r.attempts, lastError: r.last_error, occurredAt: iso(r.created_at)!, failedAt: iso(r.finished_at),
    }));
  }

  /**
   * An operator's decision on a dead letter: `retry` makes it due again with a fresh count of
   * attempts (and wakes the delivering processes); `discard` gives it up, which lets the later
   * events of its entity through. Answers whether the event was a dead letter of the subscriber.
   */
  async resolve(subscriber: string, eventId: string, action: 'retry' | 'discard'): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const changed = await tx.query(
        action === 'retry'
          ? `update keel_events.deliveries set state = 'pending', attempts = 0, available_at = now(), finished_at = null
              where subscriber = ? and event_id = ?::uuid and state = 'dead' returning event_seq`
          : `update keel_events.deliveries set state = 'discarded', finished_at = now()
              where subscriber = ? and event_id = ?::uuid and state = 'dead' returning event_seq`,
        [subscriber, eventId],
      );
      if (changed.length > 0) await tx.query("select pg_notify('keel_events', '')");
      return changed.length > 0;
    });
  }

  /** Finished deliveries older than `days`, and events none of whose deliveries is still open. */
  async prune(days: number): Promise<void> {
    await this.db.query(
      `delete from keel_events.deliveries where state in ('delivered', 'discarded') and finished_at < now() - make_interval(days => ?)`, [days]);
    await this.db.query(
      `delete from keel_events.outbox o where o.created_at < now() - make_interval(days => ?)
          and not exists (select 1 from keel_events.deliveries d where d.event_seq = o.seq)`, [days]);
  }
}

function toLeased(r: Row): LeasedDelivery {
  return {
    subscriber: r.subscriber, eventSeq: r.event_seq, eventId: r.event_id, name: r.name, publisher: r.publisher, companyId: r.company_id,
    entityType: r.entity_type, entityId: r.entity_id, payload: r.payload, occurredAt: iso(r.created_at)!, attempt: r.attempts,
  };
}
