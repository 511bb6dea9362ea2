import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventOutbox } from '../../kernel/host/contributions/event-outbox.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/outbox-fx', import.meta.url));
const KEY = 'outbox-fx';
let t: TestKernel;
let outbox: EventOutbox;

beforeAll(async () => {
  t = await startTestKernel();
  await installAndEnable(t, FIXTURE);
  outbox = new EventOutbox(t.kernel.services.db);
});
afterAll(async () => { await t?.stop(); });

/** An event of the subscriber's queue for `entityId`, its delivery in the given state. */
async function delivery(entityId: string, state: 'pending' | 'leased' | 'dead', at: string): Promise<void> {
  const { rows: [event] } = await t.sql.query(
    `insert into keel_events.outbox (name, publisher, entity_type, entity_id, payload) values ('outbox-fx.item.changed', $1, 'item', $2, '{"seq":1}') returning id, seq`,
    [KEY, entityId]);
  await t.sql.query(
    `insert into keel_events.deliveries (subscriber, event_seq, event_id, entity_type, entity_id, publisher, state, available_at, lease_until, leased_by, attempts)
     values ($1, $2, $3, 'item', $4, $1, $5, $6::timestamptz, case when $5 = 'leased' then $6::timestamptz end, case when $5 = 'leased' then 'another process' end, 1)`,
    [KEY, event.seq, event.id, entityId, state, at]);
}

describe('the next due time of a subscriber\'s deliveries', () => {
  it('follows a queue\'s open head, not the pending events queued behind it', async () => {
    const leaseEnds = new Date(Date.now() + 3_600_000).toISOString();
    // The head, leased by a process still delivering it, and an event of the same entity behind it, pending since now.
    await delivery('queued-behind-lease', 'leased', leaseEnds);
    await delivery('queued-behind-lease', 'pending', new Date().toISOString());
    // A dead letter holds its queue until an operator decides (which wakes delivery).
    await delivery('queued-behind-dead', 'dead', new Date().toISOString());
    await delivery('queued-behind-dead', 'pending', new Date().toISOString());
    expect((await outbox.nextDueAt([KEY]))?.toISOString()).toBe(leaseEnds);

    // A queue's head waiting for its retry is due at that time.
    const retryAt = new Date(Date.now() + 60_000).toISOString();
    await delivery('retry-wait', 'pending', retryAt);
    expect((await outbox.nextDueAt([KEY]))?.toISOString()).toBe(retryAt);
    expect(await outbox.claim([KEY], 10, 10_000, 'this process')).toEqual([]);
  });
});
