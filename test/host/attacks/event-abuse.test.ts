import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../../support/harness.ts';
import { installAndEnable as enableFolder } from '../../support/plugins.ts';
import { expectKernelAlive, variant } from './support.ts';
import { waitFor } from '../../support/wait-for.ts';

/**
 * Durable events as an attacker uses them (issue 25, point 5): an event about another
 * company's entity, a flood of events from one call, and one publisher's dead letters holding
 * back the kernel's events of the same entity at a subscriber.
 */
const KEY = 'outbox-fx';
const NAME = 'outbox-fx.item.changed';
// Short retries, so that a dead letter is reached within a test.
const EVENTS_CONFIG = { plugins: { events: { maxAttempts: 3, firstRetryMs: 50, maxRetryMs: 200 } } };
let t: TestKernel;
let companyA: any;
let companyB: any;
let agentA: any;
let agentB: any;

beforeAll(async () => {
  t = await startTestKernel(EVENTS_CONFIG);
  // Publishing a thousand events, or 8 MiB of them, takes longer than the fixture's short deadline
  // on a loaded machine: this copy waits, and takes counts past the bound.
  await enableFolder(t, await variant(KEY, (manifest) => {
    manifest.limits.callTimeoutMs = 30_000;
    manifest.routes.find((route: any) => route.body?.properties?.count).body.properties.count.maximum = 2000;
  }));
  companyA = await createCompany(t.api, { name: 'Events A' });
  companyB = await createCompany(t.api, { name: 'Events B' });
  agentA = await createAgent(t.api, companyA.id);
  agentB = await createAgent(t.api, companyB.id);
});
afterAll(async () => { await t?.stop(); });

const publish = (companyId: string, body: Record<string, unknown>) => t.api.post(`/api/plugins/${KEY}/companies/${companyId}/publish`, body);
// The fixture's own events of an entity (the kernel's, such as agent.created, are not counted).
const outboxRows = async (entityId: string): Promise<number> => (await t.sql.query('select count(*)::int as n from keel_events.outbox where entity_id = $1 and publisher = $2', [entityId, KEY])).rows[0].n;
const itemRows = async (entityId: string): Promise<number> => (await t.sql.query('select count(*)::int as n from plugin_outboxfx.items where id = $1', [entityId])).rows[0].n;
const deliveryState = async (eventId: string): Promise<string> => (await t.sql.query('select state from keel_events.deliveries where event_id = $1', [eventId])).rows[0]?.state;

describe('an event about another company\'s entity', () => {
  it('is refused when a call serving company A names company B\'s agent, and nothing is written', async () => {
    const res = await publish(companyA.id, { name: NAME, payload: { seq: 1 }, entityType: 'agent', entityId: agentB.id });
    expect(res.status, res.text).toBe(403);
    expect(res.body).toMatchObject({ code: 'event_entity_denied' });
    expect(res.body.error).toContain(`no agent ${agentB.id} in the company this call serves`);
    expect(await outboxRows(agentB.id)).toBe(0);
    // The route wrote an item before publishing: the call rolled back as a whole.
    expect(await itemRows(agentB.id)).toBe(0);
  });

  it('is refused for company B itself, an unknown run or execution and an id that names nothing, in the same words', async () => {
    for (const [entityType, entityId] of [['company', companyB.id], ['run', '00000000-0000-4000-8000-000000000000'], ['agent', 'not-a-uuid'], ['execution', '00000000-0000-4000-8000-000000000001']]) {
      const res = await publish(companyA.id, { name: NAME, payload: { seq: 1 }, entityType, entityId });
      expect(res.status, res.text).toBe(403);
      expect(res.body.code).toBe('event_entity_denied');
      expect(res.body.error).toContain(`no ${entityType} ${entityId} in the company this call serves`);
      expect(await outboxRows(entityId!)).toBe(0);
    }
  });

  it('is published for the company\'s own agent, and for the plugin\'s own entity types (the control)', async () => {
    const own = await publish(companyA.id, { name: NAME, payload: { seq: 1 }, entityType: 'agent', entityId: agentA.id });
    expect(own.status, own.text).toBe(200);
    expect(await outboxRows(agentA.id)).toBe(1);
    const item = await publish(companyA.id, { name: NAME, payload: { seq: 1 }, entityId: 'own-item' });
    expect(item.status, item.text).toBe(200);
  });
});

describe('the per-call bounds of publishing', () => {
  it('refuses the 1,001st event of one call with 429 too_many_events, and the call writes none of them', async () => {
    const res = await publish(companyA.id, { name: NAME, payload: { seq: 0 }, entityId: 'flood', count: 1001 });
    expect(res.status, res.text).toBe(429);
    expect(res.body).toMatchObject({ code: 'too_many_events' });
    expect(res.body.error).toContain('one call may publish at most 1000 events');
    expect(await outboxRows('flood')).toBe(0);
    expect(await itemRows('flood')).toBe(0);
  });

  it('commits nothing when the plugin catches the refusal and answers as if it had published', async () => {
    const res = await publish(companyA.id, { name: NAME, payload: { seq: 0 }, entityId: 'swallowed', count: 1001, swallowRefusal: true });
    expect(res.status, res.text).toBe(500);
    expect(res.body.code).toBe('plugin_transaction_failed');
    expect(await outboxRows('swallowed')).toBe(0);
    expect(await itemRows('swallowed')).toBe(0);
  });

  it('publishes 1,000 events in one call (the bound itself is allowed)', async () => {
    const res = await publish(companyA.id, { name: NAME, payload: { seq: 0 }, entityId: 'thousand', count: 1000 });
    expect(res.status, res.text).toBe(200);
    expect(res.body.eventIds).toHaveLength(1000);
    expect(await outboxRows('thousand')).toBe(1000);
  });

  it('refuses events past 8 MiB of payloads in one call with 413 event_bytes_exceeded, and the call writes none of them', async () => {
    // 140 payloads of 60,000 characters: each allowed on its own (64 KiB), together over 8 MiB.
    const res = await publish(companyA.id, { name: NAME, payload: { seq: 0, padding: 'x'.repeat(60_000) }, entityId: 'heavy', count: 140 });
    expect(res.status, res.text).toBe(413);
    expect(res.body).toMatchObject({ code: 'event_bytes_exceeded' });
    expect(res.body.error).toContain('one call may publish at most 8388608 bytes of event payloads');
    expect(await outboxRows('heavy')).toBe(0);
    expect(await itemRows('heavy')).toBe(0);
    const under = await publish(companyA.id, { name: NAME, payload: { seq: 0, padding: 'x'.repeat(60_000) }, entityId: 'heavy', count: 139 });
    expect(under.status, under.text).toBe(200);
    expect(await outboxRows('heavy')).toBe(139);
  });

  it('counts per call: the next call may publish again', async () => {
    for (let i = 0; i < 2; i++) {
      const res = await publish(companyA.id, { name: NAME, payload: { seq: 0 }, entityId: 'per-call', count: 60 });
      expect(res.status, res.text).toBe(200);
    }
    expect(await outboxRows('per-call')).toBe(120);
    await expectKernelAlive(t);
  });
});

describe('one publisher\'s dead letters', () => {
  it('do not hold back the kernel\'s events of the same entity at the same subscriber; they hold back only that publisher\'s later events', async () => {
    const company = await createCompany(t.api, { name: 'Ordering Co' });
    // The fixture's own event about the company fails every attempt: a dead letter after 3.
    const poisoned = await publish(company.id, { name: NAME, payload: { seq: 1, failTimes: 99 }, entityType: 'company', entityId: company.id });
    expect(poisoned.status, poisoned.text).toBe(200);
    const [deadId] = poisoned.body.eventIds;
    await waitFor(async () => (await deliveryState(deadId)) === 'dead', 'the dead letter');
    const later = (await publish(company.id, { name: NAME, payload: { seq: 2 }, entityType: 'company', entityId: company.id })).body.eventIds[0];

    const patched = await t.api.patch(`/api/companies/${company.id}`, { description: 'changed while a plugin event is dead' });
    expect(patched.status, patched.text).toBe(200);
    const kernelEvent = (await t.sql.query("select id from keel_events.outbox where name = 'company.updated' and entity_id = $1", [company.id])).rows[0].id;
    // The kernel's event of the same entity reaches the same subscriber...
    const received = await waitFor(async () => {
      const rows = (await t.sql.query("select event_id from plugin_outboxfx.deliveries where name = 'company.updated' and entity_id = $1", [company.id])).rows;
      return rows.length ? rows : undefined;
    }, 'the kernel event past the plugin\'s dead letter');
    expect(received.map((r) => r.event_id)).toEqual([kernelEvent]);
    await waitFor(async () => (await deliveryState(kernelEvent)) === 'delivered', 'the kernel event to be recorded');
    // ...while the publisher's own later event of that entity still waits behind its dead letter.
    expect(await deliveryState(later)).toBe('pending');
    expect(await deliveryState(deadId)).toBe('dead');

    const discarded = await t.api.post(`/api/plugins/${KEY}/events/dead-letters/${deadId}/discard`, {});
    expect(discarded.status, discarded.text).toBe(200);
    await waitFor(async () => (await deliveryState(later)) === 'delivered', 'the held-back event after the discard');
  });
});
