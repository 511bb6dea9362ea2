import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * A plugin call's events are written just before its COMMIT (capabilities/events-publish/events-at-commit.ts):
 * the lock that orders one entity's events (an advisory lock per publisher and entity, held
 * to the commit) is not held while the call runs on after its publish, so another call's event
 * about the same entity commits meanwhile, and the order of delivery is still the order of
 * the commits.
 */
const FIXTURE = fileURLToPath(new URL('./fixtures/outbox-fx', import.meta.url));
const KEY = 'outbox-fx';
const NAME = 'outbox-fx.item.changed';
/** The advisory lock class of keel_private.append_event (migration 0033). */
const EVENT_LOCK_CLASS = 727014;
let t: TestKernel;
let companyId: string;
let holder: pg.Client;

const publish = (body: Record<string, unknown>) => t.api.post(`/api/plugins/${KEY}/companies/${companyId}/publish`, body);

beforeAll(async () => {
  t = await startTestKernel();
  await installAndEnable(t, FIXTURE);
  companyId = (await createCompany(t.api, { name: 'Events At Commit Co' })).id;
  holder = new pg.Client({ connectionString: t.databaseUrl });
  await holder.connect();
});
afterAll(async () => {
  await holder?.end();
  await t?.stop();
});

/** Resolves once a plugin statement waits for a row lock (the holder's). */
async function waitingOnLock(statement: string): Promise<void> {
  await waitFor(async () => {
    const { rows } = await t.sql.query("select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query ilike $1", [`%${statement}%`]);
    return rows[0].n > 0 || undefined;
  }, 'the plugin statement waiting on the held row');
}

describe('events published by a call that has not committed yet', () => {
  it('hold no lock on their entity: another call publishes about it and commits meanwhile, and delivery follows the commits', async () => {
    await t.sql.query("insert into plugin_outboxfx.items (id, seq) values ('gate', 0)");
    await holder.query('begin');
    await holder.query("select 1 from plugin_outboxfx.items where id = 'gate' for update");
    // Publishes about `contended`, then waits on the held row before it can commit.
    const first = publish({ name: NAME, payload: { seq: 0 }, entityId: 'contended', waitOn: 'gate' });
    try {
      await waitingOnLock('update items set seq');
      const held = await t.sql.query("select count(*)::int as n from pg_locks where locktype = 'advisory' and classid = $1", [EVENT_LOCK_CLASS]);
      expect(held.rows[0].n).toBe(0);
      // Its own item row (the first call's is locked by the first call until it commits), the same entity.
      const second = await publish({ name: NAME, payload: { seq: 1 }, entityId: 'contended', itemId: 'contended-second' });
      expect(second.status, second.text).toBe(200);
    } finally {
      await holder.query('rollback');
    }
    const answered = await first;
    expect(answered.status, answered.text).toBe(200);
    const published = (await t.sql.query("select o.id, o.payload ->> 'seq' as seq from keel_events.outbox o where o.entity_id = 'contended' order by o.seq")).rows;
    // The event the plugin was answered is the one stored; the second call committed first, and its event comes first.
    expect(published.map((row) => row.seq)).toEqual(['1', '0']);
    expect(published[1].id).toBe(answered.body.eventIds[0]);
    const delivered = await waitFor(async () => {
      const { rows } = await t.sql.query("select event_id, seq from plugin_outboxfx.deliveries where entity_id = 'contended' order by n");
      return rows.length === 2 ? rows : undefined;
    }, 'both deliveries');
    expect(delivered.map((row) => row.event_id)).toEqual(published.map((row) => row.id));
  });

  it('are not written when the call fails after publishing', async () => {
    const failed = await publish({ name: NAME, payload: { seq: 0 }, entityId: 'rolled-back', rollback: true });
    expect(failed.status, failed.text).toBe(409);
    expect((await t.sql.query("select count(*)::int as n from keel_events.outbox where entity_id = 'rolled-back'")).rows[0].n).toBe(0);
  });
});
