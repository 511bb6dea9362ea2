import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { EventOutbox } from '../../kernel/host/contributions/event-outbox.ts';
import { createCompany } from '../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * How often a process looks for due deliveries (kernel/host/contributions/events.ts): a
 * notification starts a round of claims; a delivery's end starts one only when an event may
 * wait behind it, so an event with no follower costs one claim, not a claim that finds it and
 * another that finds nothing, plus a next-due-time query.
 */
const FIXTURE = fileURLToPath(new URL('./fixtures/outbox-fx', import.meta.url));
const KEY = 'outbox-fx';
const NAME = 'outbox-fx.item.changed';
let t: TestKernel;
let companyId: string;

const publish = async (entityId: string, seq: number) => {
  const res = await t.api.post(`/api/plugins/${KEY}/companies/${companyId}/publish`, { name: NAME, payload: { seq }, entityId });
  expect(res.status, res.text).toBe(200);
  return res.body.eventIds[0] as string;
};
const delivered = (eventId: string) => waitFor(async () => (await t.sql.query("select 1 from keel_events.deliveries where event_id = $1 and state = 'delivered'", [eventId])).rowCount === 1, `delivery of ${eventId}`);

beforeAll(async () => {
  t = await startTestKernel();
  await installAndEnable(t, FIXTURE);
  companyId = (await createCompany(t.api, { name: 'Rounds Co' })).id;
});
afterEach(() => { vi.restoreAllMocks(); });
afterAll(async () => { await t?.stop(); });

describe('delivery rounds', () => {
  it('claim each event without a follower once, and look for no next due time after it', async () => {
    // Whatever the company's creation left to deliver is delivered first.
    await waitFor(async () => (await t.sql.query("select 1 from keel_events.deliveries where state <> 'delivered'")).rowCount === 0, 'earlier deliveries');
    const claims = vi.spyOn(EventOutbox.prototype, 'claim');
    const dueLookups = vi.spyOn(EventOutbox.prototype, 'nextDueAt');
    for (let i = 0; i < 5; i++) await delivered(await publish(`single-${i}`, i));
    // One claim a notification; a sweep (every 30 s) may add one.
    expect(claims.mock.calls.length).toBeGreaterThanOrEqual(5);
    expect(claims.mock.calls.length).toBeLessThanOrEqual(6);
    expect(dueLookups.mock.calls.length).toBeLessThanOrEqual(1);
  });

  it('delivers an event queued behind a delivery in flight when that delivery ends, not at the next look a process makes anyway', async () => {
    await t.sql.query("insert into plugin_outboxfx.items (id, seq) values ('gate', 0) on conflict do nothing");
    await t.sql.query("insert into plugin_outboxfx.behaviour (key, value) values ('gate', 'held-head')");
    const holder = new pg.Client({ connectionString: t.databaseUrl });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query("select seq from plugin_outboxfx.items where id = 'gate' for update");
      const head = await publish('held-head', 1);
      // The head is claimed (its queue had no follower then) and waits for the lock in its handler.
      const { lease_until: headLeaseEnds } = await waitFor(async () => (await t.sql.query("select lease_until from keel_events.deliveries where event_id = $1 and state = 'leased'", [head])).rows[0], 'the head to be leased');
      const claims = vi.spyOn(EventOutbox.prototype, 'claim');
      const follower = await publish('held-head', 2);
      // The follower's notification started a round while the head was in flight; it found nothing due.
      await waitFor(async () => claims.mock.calls.length > 0 && (await claims.mock.results.at(-1)!.value).length === 0, 'the round started by the follower\'s notification', 10_000);
      await holder.query('commit');
      await delivered(head);
      // The head's end looked again: the follower did not wait for the next look a process
      // makes anyway (the head's lease expiry, which the round that found nothing noted, or the sweep).
      const { finished_at: followerDone } = await waitFor(async () => (await t.sql.query("select finished_at from keel_events.deliveries where event_id = $1 and state = 'delivered'", [follower])).rows[0], 'the follower');
      expect(followerDone.getTime()).toBeLessThan(headLeaseEnds.getTime());
      const seqs = (await t.sql.query("select seq from plugin_outboxfx.deliveries where entity_id = 'held-head' order by n")).rows.map((row) => row.seq);
      expect(seqs).toEqual([1, 2]);
    } finally {
      await holder.end();
    }
  });
});
