import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestHost, type TestHost } from '@keel/sdk/testing';

const SECRET = 'whsec-example-0123456789abcdef';
let host: TestHost;
const stored: Array<{ id: string; event: string; payload: unknown; bytes: number; received_at: string }> = [];

beforeAll(async () => {
  host = await createTestHost(new URL('.', import.meta.url), { config: { signingSecret: SECRET } });
  // A tiny in-memory stand-in for the deliveries table.
  host.db.on(/^insert into deliveries/, ([event, payload, bytes]) => {
    const row = { id: String(stored.length + 1), event: String(event), payload: JSON.parse(String(payload)), bytes: Number(bytes), received_at: '2030-01-01T00:00:00.000Z' };
    stored.push(row);
    return [{ id: row.id }];
  });
  host.db.on(/^select .* from deliveries order by id desc limit \$1/, ([limit]) => [...stored].reverse().slice(0, Number(limit)));
  host.db.on(/^select .* from deliveries where event = \$1/, ([event, limit]) => [...stored].reverse().filter((r) => r.event === event).slice(0, Number(limit)));
});
afterAll(() => host?.dispose());

describe('webhook-inbox (sdk/testing)', () => {
  it('stores a signed delivery and answers 202', async () => {
    const body = JSON.stringify({ type: 'invoice.paid', amount: 42 });
    const answer = await host.deliverWebhook('deliveries', { body, headers: host.signWebhook('deliveries', body) });
    expect(answer).toEqual({ status: 202, body: { id: 1, event: 'invoice.paid' }, headers: {} });
    expect(stored[0]).toMatchObject({ event: 'invoice.paid', payload: { type: 'invoice.paid', amount: 42 }, bytes: body.length });
    expect(host.logs.at(-1)).toMatchObject({ level: 'info', message: 'delivery stored', fields: { id: '1', event: 'invoice.paid' } });
  });

  it('refuses deliveries with a wrong, missing or stale signature before the plugin runs', async () => {
    const before = host.db.queries.length;
    const body = JSON.stringify({ type: 'invoice.paid' });
    const forged = await host.deliverWebhook('deliveries', { body, headers: host.signWebhook('deliveries', body, { secret: 'not-the-secret-at-all' }) });
    expect(forged.status).toBe(401);
    expect(forged.body).toEqual({ error: 'Invalid webhook signature', code: 'webhook_signature_invalid' });
    const unsigned = await host.deliverWebhook('deliveries', { body });
    expect(unsigned.body).toMatchObject({ code: 'webhook_signature_missing' });
    const stale = await host.deliverWebhook('deliveries', { body, headers: host.signWebhook('deliveries', body, { timestamp: Math.floor(Date.now() / 1000) - 3600 }) });
    expect(stale.body).toMatchObject({ code: 'webhook_timestamp_stale' });
    const tampered = await host.deliverWebhook('deliveries', { body: body.replace('paid', 'void'), headers: host.signWebhook('deliveries', body) });
    expect(tampered.status).toBe(401);
    expect(host.db.queries.length).toBe(before);
  });

  it('refuses a signed body that is not a JSON object', async () => {
    for (const [body, code] of [['not json', 'invalid_json'], ['[1,2]', 'invalid_delivery']] as const) {
      const answer = await host.deliverWebhook('deliveries', { body, headers: host.signWebhook('deliveries', body) });
      expect(answer.status).toBe(400);
      expect(answer.body).toMatchObject({ code });
    }
  });

  it('files deliveries without a usable type under "unknown"', async () => {
    const body = JSON.stringify({ type: 'has spaces!' });
    const answer = await host.deliverWebhook('deliveries', { body, headers: host.signWebhook('deliveries', body) });
    expect(answer.body).toMatchObject({ event: 'unknown' });
  });

  it('lists deliveries newest first, filtered by event', async () => {
    const all = await host.callRoute('list-deliveries', { query: { limit: '2' } });
    expect(all.status).toBe(200);
    expect((all.body as Array<{ id: number }>).map((d) => d.id)).toEqual([2, 1]);
    const paid = await host.callRoute('list-deliveries', { query: { event: 'invoice.paid' } });
    expect(paid.body).toEqual([{ id: 1, event: 'invoice.paid', payload: { type: 'invoice.paid', amount: 42 }, bytes: 35, receivedAt: '2030-01-01T00:00:00.000Z' }]);
    const bad = await host.callRoute('list-deliveries', { query: { limit: '500' } });
    expect(bad.status).toBe(400);
  });

  it('refuses every delivery while no secret is configured', async () => {
    const bare = await createTestHost(new URL('.', import.meta.url));
    try {
      const answer = await bare.deliverWebhook('deliveries', { body: '{}', headers: { 'x-inbox-signature': '0'.repeat(64), 'x-inbox-timestamp': String(Math.floor(Date.now() / 1000)) } });
      expect(answer.status).toBe(503);
      expect(answer.body).toMatchObject({ code: 'webhook_secret_missing' });
    } finally {
      bare.dispose();
    }
  });

  it('checks a candidate configuration', async () => {
    expect(await host.validateConfig({ signingSecret: SECRET })).toEqual({ ok: true, errors: [] });
    expect(await host.validateConfig({ signingSecret: 'aaaaaaaaaaaaaaaaaaaa' })).toEqual({ ok: false, errors: ['signingSecret is too repetitive; use a random value'] });
    expect(await host.validateConfig({})).toEqual({ ok: false, errors: ['signingSecret is required to receive deliveries'] });
  });
});
