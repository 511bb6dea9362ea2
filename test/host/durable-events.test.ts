import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../support/fixtures.ts';
import { startPeerKernel, startTestKernel, type PeerKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';
import { waitFor } from '../support/wait-for.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/outbox-fx', import.meta.url));
const KEY = 'outbox-fx';
const NAME = 'outbox-fx.item.changed';
// Short retries, so that a dead letter is reached within a test.
const EVENTS_CONFIG = { plugins: { events: { maxAttempts: 3, firstRetryMs: 50, maxRetryMs: 200 } } };
let t: TestKernel;
let companyId: string;

interface Delivery { n: string; event_id: string; name: string; entity_id: string; seq: number | null; attempt: number; company_id: string; invocation: any }
const deliveriesOf = async (entityId: string): Promise<Delivery[]> => (await t.sql.query('select * from plugin_outboxfx.deliveries where entity_id = $1 order by n', [entityId])).rows;
const outboxCount = async (entityId: string): Promise<number> => (await t.sql.query('select count(*)::int as n from keel_events.outbox where entity_id = $1', [entityId])).rows[0].n;
const deliveryState = async (eventId: string): Promise<string> => (await t.sql.query('select state from keel_events.deliveries where event_id = $1', [eventId])).rows[0]?.state;
const publish = (body: Record<string, unknown>, api = t.api) => api.post(`/api/plugins/${KEY}/companies/${companyId}/publish`, body);
const behave = (key: 'fail' | 'hang', entityId: string) => t.sql.query('insert into plugin_outboxfx.behaviour (key, value) values ($1, $2) on conflict do nothing', [key, entityId]);
const behaveNormally = (entityId: string) => t.sql.query('delete from plugin_outboxfx.behaviour where value = $1', [entityId]);

beforeAll(async () => {
  t = await startTestKernel(EVENTS_CONFIG);
  await installAndEnable(t, FIXTURE);
  companyId = (await createCompany(t.api, { name: 'Outbox Co' })).id;
});
afterAll(async () => { await t?.stop(); });

describe('a plugin publishing its own events', () => {
  it('delivers a published event once, after the commit, with its id, in the company of the publishing call', async () => {
    const res = await publish({ name: NAME, payload: { seq: 7 }, entityId: 'first' });
    expect(res.status, res.text).toBe(200);
    const [eventId] = res.body.eventIds;
    const [row] = await waitFor(async () => { const rows = await deliveriesOf('first'); return rows.length ? rows : undefined; }, 'the delivery');
    expect(row).toMatchObject({ event_id: eventId, name: NAME, seq: 7, attempt: 1, company_id: companyId });
    expect(row!.invocation).toMatchObject({
      kind: 'event', target: NAME, companyId, actor: { type: 'system', id: 'events', agentId: null },
      event: { id: eventId, name: NAME, publisher: KEY, companyId, entityType: 'item', entityId: 'first', attempt: 1, occurredAt: expect.any(String) },
    });
    await waitFor(async () => (await deliveryState(eventId)) === 'delivered', 'the delivery to be recorded');
  });

  it('writes nothing when the publishing call rolls back: the event commits with the plugin\'s writes or not at all', async () => {
    const res = await publish({ name: NAME, payload: { seq: 1 }, entityId: 'rolled-back', rollback: true });
    expect(res.status).toBe(409);
    expect(await outboxCount('rolled-back')).toBe(0);
    expect((await t.sql.query("select count(*)::int as n from plugin_outboxfx.items where id = 'rolled-back'")).rows[0].n).toBe(0);
  });

  it('refuses a kernel event, another plugin\'s event, an undeclared event and a payload off its schema, and stores none of them', async () => {
    const kernel = await publish({ name: 'agent.created', payload: { companyId, agentId: companyId }, entityId: 'forged' });
    expect(kernel.status).toBe(403);
    expect(kernel.body).toMatchObject({ code: 'event_name_forbidden', error: `${KEY} may publish only events named ${KEY}.<name>; agent.created is a kernel event, which only the kernel publishes` });
    const other = await publish({ name: 'work.issue.assigned', payload: { issueId: 'i1', assigneeId: 'a1' }, entityId: 'forged' });
    expect(other.status).toBe(403);
    expect(other.body).toMatchObject({ code: 'event_name_forbidden', error: `${KEY} may publish only events named ${KEY}.<name>; work.issue.assigned is not under ${KEY}.*` });
    const undeclared = await publish({ name: `${KEY}.item.deleted`, payload: { seq: 1 }, entityId: 'forged' });
    expect(undeclared.status).toBe(403);
    expect(undeclared.body.code).toBe('event_not_declared');
    const wrongType = await publish({ name: NAME, payload: { seq: 'seven' }, entityId: 'forged' });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body).toMatchObject({ code: 'invalid_event_payload', error: `${NAME}: Invalid event payload: seq must be integer` });
    const extra = await publish({ name: NAME, payload: { seq: 1, assigneeId: 'someone' }, entityId: 'forged' });
    expect(extra.status).toBe(400);
    expect(extra.body.code).toBe('invalid_event_payload');
    const notObject = await publish({ name: NAME, payload: [1, 2], entityId: 'forged' });
    expect(notObject.status).toBe(400);
    const oversized = await publish({ name: NAME, payload: { seq: 1, padding: 'x'.repeat(70_000) }, entityId: 'forged' });
    expect(oversized.status).toBe(413);
    expect(await outboxCount('forged')).toBe(0);
  });

  it('checks a declared pattern in linear time: a payload built to make a backtracking engine run for ages is refused at once', async () => {
    // ^(a+)+$ against 40 a's and a mismatch takes a backtracking engine about 2^40 steps; RE2 answers in microseconds.
    const hostile = await publish({ name: NAME, payload: { seq: 1, label: `${'a'.repeat(40)}!` }, entityId: 'redos' });
    expect(hostile.status, hostile.text).toBe(400);
    expect(hostile.body).toMatchObject({ code: 'invalid_event_payload', error: `${NAME}: Invalid event payload: label must match pattern "^(a+)+$"` });
    const fine = await publish({ name: NAME, payload: { seq: 1, label: 'a'.repeat(40) }, entityId: 'redos' });
    expect(fine.status, fine.text).toBe(200);
    expect(await outboxCount('redos')).toBe(1);
  });

  it('refuses to publish from a read-only call', async () => {
    const res = await t.api.get(`/api/plugins/${KEY}/companies/${companyId}/publish-read-only`);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('events_read_only');
    expect(await outboxCount('read-only')).toBe(0);
  });

  it('the database itself refuses a forged or undeclared name, even with a valid signature', async () => {
    // As if a worker skipped the kernel's check: a correctly signed invocation of outbox-fx
    // (signed here with the bridge key, for this session's role) still cannot publish a kernel
    // event, another plugin's or an undeclared one; a declared one of its own goes through.
    const key = (await t.sql.query('select key from keel_private.bridge_key')).rows[0].key as Buffer;
    const role = (await t.sql.query('select session_user as role')).rows[0].role as string;
    const invocation = JSON.stringify({ plugin: KEY, role, invocationId: 'forged', companyId, actorType: 'system', actorId: 'test', agentId: null, runId: null, exp: Math.floor(Date.now() / 1000) + 60 });
    const inner = createHash('sha256').update(Buffer.concat([key, Buffer.from(invocation)])).digest();
    const signature = createHash('sha256').update(Buffer.concat([key, inner])).digest('hex');
    const publishAs = (name: string) => t.sql.query("select keel_bridge.publish_event($1, $2, $3, 'item', 'db-forged', '{\"seq\": 1}'::jsonb) as id", [invocation, signature, name]);
    await expect(publishAs('agent.created')).rejects.toThrow(`plugin ${KEY} may publish only events named ${KEY}.*`);
    await expect(publishAs('work.issue.assigned')).rejects.toThrow(`plugin ${KEY} may publish only events named ${KEY}.*`);
    await expect(publishAs(`${KEY}.item.deleted`)).rejects.toThrow(`event ${KEY}.item.deleted is not declared under publishedEvents of plugin ${KEY}`);
    await expect(publishAs(NAME)).resolves.toBeTruthy();
    await expect(t.sql.query("select keel_bridge.publish_event($1, 'not-the-signature', $2, 'item', 'db-forged', '{}')", [invocation, NAME])).rejects.toThrow('invalid invocation signature');
    expect((await t.sql.query("select name from keel_events.outbox where entity_id = 'db-forged'")).rows).toEqual([{ name: NAME }]);
  });
});

describe('kernel events', () => {
  it('are delivered durably to subscribers, in the event\'s company', async () => {
    const company = await createCompany(t.api, { name: 'Kernel Event Co' });
    const [row] = await waitFor(async () => { const rows = await deliveriesOf(company.id); return rows.length ? rows : undefined; }, 'company.created');
    expect(row).toMatchObject({ name: 'company.created', company_id: company.id, attempt: 1 });
    expect(row!.invocation.event).toMatchObject({ publisher: 'kernel', entityType: 'company', entityId: company.id });
  });
});

describe('retries and dead letters', () => {
  it('retries a failed delivery with backoff until it succeeds', async () => {
    const res = await publish({ name: NAME, payload: { seq: 1, failTimes: 2 }, entityId: 'flaky' });
    const [row] = await waitFor(async () => { const rows = await deliveriesOf('flaky'); return rows.length ? rows : undefined; }, 'the third attempt');
    expect(row).toMatchObject({ event_id: res.body.eventIds[0], attempt: 3 });
  });

  it('makes a dead letter after the last attempt, shows it in health, holds back later events of the entity, and delivers in order after a retry', async () => {
    await behave('fail', 'poisoned');
    const first = (await publish({ name: NAME, payload: { seq: 1 }, entityId: 'poisoned' })).body.eventIds[0];
    const second = (await publish({ name: NAME, payload: { seq: 2 }, entityId: 'poisoned' })).body.eventIds[0];
    await waitFor(async () => (await deliveryState(first)) === 'dead', 'the dead letter');
    const health = await t.api.get(`/api/plugins/${KEY}/health`);
    expect(health.status).toBe(200);
    expect(health.body.healthy).toBe(false);
    expect(health.body.events).toMatchObject({ dead: 1, pending: 1, lastError: 'planned_failure: poisoned fails on purpose', deadLetters: `/api/plugins/${KEY}/events/dead-letters` });
    const letters = await t.api.get(`/api/plugins/${KEY}/events/dead-letters`);
    expect(letters.body).toEqual([expect.objectContaining({ eventId: first, name: NAME, publisher: KEY, companyId, entityType: 'item', entityId: 'poisoned', attempts: 3 })]);
    // Events of other entities are not held back.
    await publish({ name: NAME, payload: { seq: 1 }, entityId: 'healthy-neighbour' });
    await waitFor(async () => (await deliveriesOf('healthy-neighbour')).length === 1, 'the neighbour');
    expect(await deliveryState(second)).toBe('pending');
    expect(await deliveriesOf('poisoned')).toEqual([]);

    await behaveNormally('poisoned');
    const retried = await t.api.post(`/api/plugins/${KEY}/events/dead-letters/${first}/retry`, {});
    expect(retried.status, retried.text).toBe(200);
    expect(retried.body).toEqual({ pluginKey: KEY, eventId: first, state: 'pending' });
    const rows = await waitFor(async () => { const r = await deliveriesOf('poisoned'); return r.length === 2 ? r : undefined; }, 'both events');
    expect(rows.map((r) => r.event_id)).toEqual([first, second]);
    expect((await t.api.get(`/api/plugins/${KEY}/health`)).body.events.dead).toBe(0);
    // Once resolved, it is no longer a dead letter.
    expect((await t.api.post(`/api/plugins/${KEY}/events/dead-letters/${first}/retry`, {})).status).toBe(404);
  });

  it('lets an operator discard a dead letter, which lets the later events through', async () => {
    await behave('fail', 'discarded');
    const first = (await publish({ name: NAME, payload: { seq: 1 }, entityId: 'discarded' })).body.eventIds[0];
    await waitFor(async () => (await deliveryState(first)) === 'dead', 'the dead letter');
    await behaveNormally('discarded');
    const second = (await publish({ name: NAME, payload: { seq: 2 }, entityId: 'discarded' })).body.eventIds[0];
    const discarded = await t.api.post(`/api/plugins/${KEY}/events/dead-letters/${first}/discard`, {});
    expect(discarded.body).toEqual({ pluginKey: KEY, eventId: first, state: 'discarded' });
    const rows = await waitFor(async () => { const r = await deliveriesOf('discarded'); return r.length ? r : undefined; }, 'the later event');
    expect(rows.map((r) => r.event_id)).toEqual([second]);
    expect(await deliveryState(first)).toBe('discarded');
  });

  it('answers 404 for an unknown or malformed dead letter, and the routes are instance-admin routes in the OpenAPI document', async () => {
    expect((await t.api.post(`/api/plugins/${KEY}/events/dead-letters/not-a-uuid/retry`, {})).body.code).toBe('dead_letter_not_found');
    expect((await t.api.post(`/api/plugins/${KEY}/events/dead-letters/00000000-0000-4000-8000-000000000000/discard`, {})).status).toBe(404);
    const doc = (await t.api.get('/api/openapi.json')).body;
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/api/plugins/{pluginId}/events/dead-letters', '/api/plugins/{pluginId}/events/dead-letters/{eventId}/retry']));
  });
});

describe('two Keel processes on one database', () => {
  let peer: PeerKernel;
  beforeAll(async () => {
    peer = await startPeerKernel(t, EVENTS_CONFIG);
    // The peer runs the plugin's worker too (it follows the database's enabled plugins).
    await waitFor(async () => (await peer.api.get(`/api/plugins/${KEY}/health`)).body.worker?.status === 'running', 'the peer\'s worker');
  });
  afterAll(async () => { await peer?.stop(); });

  it('deliver each event exactly once per subscriber, in order per entity', async () => {
    const entities = ['a', 'b', 'c', 'd', 'e', 'f'].map((x) => `pair-${x}`);
    const perEntity = 12;
    // Each entity gets its events from both processes, in turns, in separate transactions.
    await Promise.all(entities.map(async (entityId) => {
      for (let i = 0; i < perEntity; i += 3) {
        const api = (i / 3) % 2 === 0 ? t.api : peer.api;
        const res = await api.post(`/api/plugins/${KEY}/companies/${companyId}/publish`, { name: NAME, payload: { seq: i }, entityId, count: 3 });
        expect(res.status, res.text).toBe(200);
      }
    }));
    const expected = entities.length * perEntity;
    const all = await waitFor(async () => {
      const rows = (await t.sql.query("select * from plugin_outboxfx.deliveries where entity_id like 'pair-%' order by n")).rows as Delivery[];
      const settled = (await t.sql.query("select count(*)::int as n from keel_events.deliveries where entity_id like 'pair-%' and state = 'delivered'")).rows[0].n;
      return rows.length >= expected && settled === expected ? rows : undefined;
    }, 'every delivery');
    expect(all).toHaveLength(expected);
    expect(new Set(all.map((r) => r.event_id)).size).toBe(expected);
    expect(all.every((r) => r.attempt === 1)).toBe(true);
    for (const entityId of entities) {
      // count: 3 numbers the events of one request 0, 1, 2: in commit order, they read 0,1,2,0,1,2,...
      const seen = all.filter((r) => r.entity_id === entityId).map((r) => r.seq);
      expect(seen).toEqual(Array.from({ length: perEntity }, (_, i) => i % 3));
      const published = (await t.sql.query('select id from keel_events.outbox where entity_id = $1 order by seq', [entityId])).rows.map((r) => r.id);
      expect(all.filter((r) => r.entity_id === entityId).map((r) => r.event_id)).toEqual(published);
    }
  });
});

describe('two publishers of one entity on two Keel processes', () => {
  let peer: PeerKernel;
  beforeAll(async () => {
    peer = await startPeerKernel(t, EVENTS_CONFIG);
    await waitFor(async () => (await peer.api.get(`/api/plugins/${KEY}/health`)).body.worker?.status === 'running', 'the peer\'s worker');
  });
  afterAll(async () => { await peer?.stop(); });

  it('deliver each event once, in commit order per publisher, while the kernel\'s and the plugin\'s queues of the entity run side by side', async () => {
    const company = await createCompany(t.api, { name: 'Two Publishers Co' });
    const rounds = 6;
    // The kernel (company.updated) and the plugin (its own event about the company) publish about one entity, from both processes.
    await Promise.all([
      (async () => {
        for (let i = 0; i < rounds; i++) {
          const res = await (i % 2 ? peer.api : t.api).patch(`/api/companies/${company.id}`, { description: `round ${i}` });
          expect(res.status, res.text).toBe(200);
        }
      })(),
      (async () => {
        for (let i = 0; i < rounds; i++) {
          const res = await (i % 2 ? t.api : peer.api).post(`/api/plugins/${KEY}/companies/${company.id}/publish`, { name: NAME, payload: { seq: i }, entityType: 'company', entityId: company.id });
          expect(res.status, res.text).toBe(200);
        }
      })(),
    ]);
    const published = (await t.sql.query("select id, publisher from keel_events.outbox where entity_id = $1 and name <> 'company.created' order by seq", [company.id])).rows;
    expect(published).toHaveLength(2 * rounds);
    const all = await waitFor(async () => {
      const rows = (await t.sql.query("select * from plugin_outboxfx.deliveries where entity_id = $1 and name <> 'company.created' order by n", [company.id])).rows as Delivery[];
      const settled = (await t.sql.query(`select count(*)::int as n from keel_events.deliveries d join keel_events.outbox o on o.id = d.event_id
                                           where d.subscriber = $2 and o.entity_id = $1 and o.name <> 'company.created' and d.state = 'delivered'`, [company.id, KEY])).rows[0].n;
      return rows.length >= 2 * rounds && settled === 2 * rounds ? rows : undefined;
    }, 'every delivery');
    expect(all).toHaveLength(2 * rounds);
    expect(new Set(all.map((r) => r.event_id)).size).toBe(2 * rounds);
    for (const publisher of ['kernel', KEY]) {
      const mine = published.filter((p) => p.publisher === publisher).map((p) => p.id);
      expect(all.map((r) => r.event_id).filter((id) => mine.includes(id))).toEqual(mine);
    }
  });
});

describe('a process that stops between commit and delivery', () => {
  it('leaves the event to the next process, which delivers it once its lease expires', async () => {
    await behave('hang', 'crash');
    const res = await publish({ name: NAME, payload: { seq: 1 }, entityId: 'crash' });
    const eventId = res.body.eventIds[0];
    // Committed, and leased by this process, whose handler now hangs.
    await waitFor(async () => (await deliveryState(eventId)) === 'leased', 'the lease');
    await t.kernel.stop();
    expect(await deliveryState(eventId)).toBe('leased');
    expect(await deliveriesOf('crash')).toEqual([]);
    await behaveNormally('crash');
    const restarted = await startPeerKernel(t, EVENTS_CONFIG);
    try {
      const [row] = await waitFor(async () => { const rows = await deliveriesOf('crash'); return rows.length ? rows : undefined; }, 'the delivery after the restart');
      expect(row).toMatchObject({ event_id: eventId, attempt: 2, company_id: companyId });
      await waitFor(async () => (await deliveryState(eventId)) === 'delivered', 'the delivery to be recorded');
    } finally {
      await restarted.stop();
    }
  });
});
