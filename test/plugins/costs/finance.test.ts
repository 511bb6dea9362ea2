import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { activityCount, ISO, q, UUID, settling } from './helpers.ts';

let t: TestKernel;
beforeAll(async () => { t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS }); });
afterAll(async () => { await t?.stop(); });

const post = (companyId: string, body: unknown) => t.api.post(`/api/companies/${companyId}/finance-events`, body);
const financeCount = async (companyId: string) =>
  (await t.sql.query('select count(*)::int as n from plugin_costs.finance_events where company_id = $1', [companyId])).rows[0].n;

describe('POST /api/companies/{companyId}/finance-events', () => {
  it('stores every field (201)', async () => {
    const company = await createCompany(settling(t));
    const res = await post(company.id, {
      kind: 'credit_purchase', direction: 'credit', amountCents: 50_000, currency: 'EUR', estimated: true, biller: 'alpha',
      description: 'Top-up', metadata: { invoice: 'INV-1', lines: [1, 2], nested: { ok: true } }, occurredAt: '2025-04-01T08:00:00+02:00',
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID), companyId: company.id, kind: 'credit_purchase', direction: 'credit', amountCents: 50_000, currency: 'EUR',
      estimated: true, biller: 'alpha', description: 'Top-up', metadata: { invoice: 'INV-1', lines: [1, 2], nested: { ok: true } },
      occurredAt: '2025-04-01T06:00:00.000Z', createdAt: expect.stringMatching(ISO),
    });
    const { rows } = await t.sql.query('select kind, direction, amount_cents, currency, estimated, metadata from plugin_costs.finance_events where id = $1', [res.body.id]);
    expect(rows).toEqual([{ kind: 'credit_purchase', direction: 'credit', amount_cents: '50000', currency: 'EUR', estimated: true, metadata: { invoice: 'INV-1', lines: [1, 2], nested: { ok: true } } }]);
    expect(await activityCount(t, company.id, 'finance_event.created', res.body.id)).toBe(1);
  });

  it('applies defaults: USD, not estimated, occurredAt now, null biller/description/metadata', async () => {
    const company = await createCompany(settling(t));
    const before = Date.now();
    const res = await post(company.id, { kind: 'platform_fee', direction: 'debit', amountCents: 0 });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ kind: 'platform_fee', direction: 'debit', amountCents: 0, currency: 'USD', estimated: false, biller: null, description: null, metadata: null });
    expect(Date.parse(res.body.occurredAt)).toBeGreaterThanOrEqual(before - 60_000);
    expect(Date.parse(res.body.occurredAt)).toBeLessThanOrEqual(Date.now() + 60_000);
  });

  it('refuses bad bodies with 400 validation_failed and stores nothing', async () => {
    const company = await createCompany(settling(t));
    const ok = { kind: 'manual_adjustment', direction: 'debit', amountCents: 10 };
    const bodies: unknown[] = [
      { direction: 'debit', amountCents: 10 }, { kind: 'fee', amountCents: 10 }, { kind: 'fee', direction: 'debit' },
      { ...ok, direction: 'sideways' }, { ...ok, amountCents: -1 }, { ...ok, amountCents: 1.5 }, { ...ok, amountCents: '10' },
      { ...ok, kind: 'Platform Fee' }, { ...ok, kind: '1fee' }, { ...ok, kind: 'k'.repeat(65) }, { ...ok, currency: 'DOLLARS' },
      { ...ok, estimated: 'no' }, { ...ok, biller: '' }, { ...ok, metadata: [1, 2] }, { ...ok, metadata: 'text' }, { ...ok, occurredAt: 'soon' },
      { ...ok, description: 'd'.repeat(2001) },
    ];
    for (const body of bodies) {
      const res = await post(company.id, body);
      expect({ body, status: res.status, code: res.body.code }).toEqual({ body, status: 400, code: 'validation_failed' });
    }
    expect(await financeCount(company.id)).toBe(0);
  });

  it('accepts any three upper-case letters as currency and refuses anything else', async () => {
    const company = await createCompany(settling(t));
    const ok = { kind: 'manual_adjustment', direction: 'debit', amountCents: 10 };
    for (const currency of ['EUR', 'GBP', 'JPY']) {
      const res = await post(company.id, { ...ok, currency });
      expect({ currency, status: res.status, text: res.status === 201 ? '' : res.text }).toEqual({ currency, status: 201, text: '' });
    }
    for (const currency of ['usd', 'eur', 'Usd', 'US', 'USDX', '']) {
      const res = await post(company.id, { ...ok, currency });
      expect({ currency, status: res.status, code: res.body.code }).toEqual({ currency, status: 400, code: 'validation_failed' });
    }
    expect(await financeCount(company.id)).toBe(3);
  });

  it('keeps currencies apart in the summary and the breakdowns', async () => {
    const company = await createCompany(settling(t));
    expect((await post(company.id, { kind: 'platform_fee', direction: 'debit', amountCents: 700, currency: 'EUR', biller: 'alpha' })).status).toBe(201);
    expect((await post(company.id, { kind: 'platform_fee', direction: 'debit', amountCents: 300, biller: 'alpha' })).status).toBe(201);
    const summary = await t.api.get(`/api/companies/${company.id}/costs/finance-summary`);
    expect(summary.body.currencies.map((c: any) => [c.currency, c.debitCents, c.eventCount])).toEqual([['EUR', 700, 1], ['USD', 300, 1]]);
    const byKind = await t.api.get(`/api/companies/${company.id}/costs/finance-by-kind`);
    expect(byKind.body.map((r: any) => [r.kind, r.currency, r.debitCents])).toEqual([['platform_fee', 'EUR', 700], ['platform_fee', 'USD', 300]]);
  });

  it('is board only: an agent key gets 403 and nothing is stored', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const key = await createAgentKey(t.api, agent.id);
    const res = await t.api.as(key).post(`/api/companies/${company.id}/finance-events`, { kind: 'fee', direction: 'debit', amountCents: 10 });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('board_required');
    expect(await financeCount(company.id)).toBe(0);
  });

  it('an unknown company is 404', async () => {
    const res = await post(randomUUID(), { kind: 'fee', direction: 'debit', amountCents: 10 });
    expect(res.status).toBe(404);
  });
});

describe('finance reads', () => {
  let company: any;
  let agentKey: string;
  const events = [
    { kind: 'inference_charge', direction: 'debit', amountCents: 1000, biller: 'alpha', occurredAt: '2025-05-01T10:00:00.000Z' },
    { kind: 'inference_charge', direction: 'debit', amountCents: 2500, biller: 'beta', estimated: true, occurredAt: '2025-05-02T10:00:00.000Z' },
    { kind: 'platform_fee', direction: 'debit', amountCents: 300, occurredAt: '2025-05-03T10:00:00.000Z' },
    { kind: 'credit_purchase', direction: 'credit', amountCents: 5000, biller: 'alpha', occurredAt: '2025-05-04T10:00:00.000Z' },
    { kind: 'credit_refund', direction: 'credit', amountCents: 200, biller: 'beta', occurredAt: '2025-05-05T10:00:00.000Z' },
    { kind: 'manual_adjustment', direction: 'debit', amountCents: 700, biller: 'alpha', occurredAt: '2025-05-06T10:00:00.000Z' },
  ];
  beforeAll(async () => {
    company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    agentKey = await createAgentKey(t.api, agent.id);
    for (const e of events) expect((await post(company.id, e)).status).toBe(201);
    // Another company's events never show.
    const other = await createCompany(settling(t));
    expect((await post(other.id, { kind: 'inference_charge', direction: 'debit', amountCents: 99_999, biller: 'alpha', occurredAt: '2025-05-02T10:00:00.000Z' })).status).toBe(201);
  });
  const get = (path: string, params: Record<string, string> = {}) => t.api.get(`/api/companies/${company.id}/costs/${path}${Object.keys(params).length ? q(params) : ''}`);

  it('finance-summary: debits, credits, net and count, also per currency', async () => {
    const res = await get('finance-summary');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      companyId: company.id, from: null, to: null, debitCents: 4500, creditCents: 5200, netCents: -700, estimatedCents: 2500, eventCount: 6,
      currencies: [{ currency: 'USD', debitCents: 4500, creditCents: 5200, netCents: -700, estimatedCents: 2500, eventCount: 6 }],
    });
  });

  it('finance-summary: from and to are inclusive', async () => {
    const res = await get('finance-summary', { from: '2025-05-02T10:00:00.000Z', to: '2025-05-04T10:00:00.000Z' });
    expect(res.body).toMatchObject({ from: '2025-05-02T10:00:00.000Z', to: '2025-05-04T10:00:00.000Z', debitCents: 2800, creditCents: 5000, netCents: -2200, eventCount: 3 });
    const none = await get('finance-summary', { from: '2025-05-02T10:00:00.001Z', to: '2025-05-03T09:59:59.999Z' });
    expect(none.body).toMatchObject({ debitCents: 0, creditCents: 0, netCents: 0, eventCount: 0, currencies: [] });
  });

  it('finance-by-biller: per biller and currency, largest debit first, null biller included', async () => {
    const res = await get('finance-by-biller');
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      { biller: 'beta', currency: 'USD', debitCents: 2500, creditCents: 200, netCents: 2300, estimatedCents: 2500, eventCount: 2 },
      { biller: 'alpha', currency: 'USD', debitCents: 1700, creditCents: 5000, netCents: -3300, estimatedCents: 0, eventCount: 3 },
      { biller: null, currency: 'USD', debitCents: 300, creditCents: 0, netCents: 300, estimatedCents: 0, eventCount: 1 },
    ]);
  });

  it('finance-by-kind: per kind, largest debit first, in a range', async () => {
    const all = await get('finance-by-kind');
    expect(all.body.map((r: any) => [r.kind, r.currency, r.debitCents, r.creditCents, r.eventCount])).toEqual([
      ['inference_charge', 'USD', 3500, 0, 2], ['manual_adjustment', 'USD', 700, 0, 1], ['platform_fee', 'USD', 300, 0, 1],
      ['credit_purchase', 'USD', 0, 5000, 1], ['credit_refund', 'USD', 0, 200, 1],
    ]);
    const ranged = await get('finance-by-kind', { from: '2025-05-03T00:00:00Z', to: '2025-05-04T23:59:59Z' });
    expect(ranged.body.map((r: any) => [r.kind, r.debitCents, r.creditCents])).toEqual([['platform_fee', 300, 0], ['credit_purchase', 0, 5000]]);
  });

  it('finance-events: newest first, default limit 100, filters by from and to', async () => {
    const res = await get('finance-events');
    expect(res.status).toBe(200);
    expect(res.body.map((e: any) => e.occurredAt)).toEqual(events.map((e) => e.occurredAt).reverse());
    expect(res.body[0]).toMatchObject({ kind: 'manual_adjustment', currency: 'USD', amountCents: 700, companyId: company.id });
    const ranged = await get('finance-events', { from: '2025-05-02T00:00:00Z', to: '2025-05-04T10:00:00.000Z' });
    expect(ranged.body.map((e: any) => e.kind)).toEqual(['credit_purchase', 'platform_fee', 'inference_charge']);
    const onlyTo = await get('finance-events', { to: '2025-05-01T10:00:00.000Z' });
    expect(onlyTo.body.map((e: any) => e.amountCents)).toEqual([1000]);
  });

  it('finance-events: limit 1 and 500 are accepted; 0, 501 and text are 400', async () => {
    const one = await get('finance-events', { limit: '1' });
    expect(one.status).toBe(200);
    expect(one.body.map((e: any) => e.kind)).toEqual(['manual_adjustment']);
    const max = await get('finance-events', { limit: '500' });
    expect(max.status).toBe(200);
    expect(max.body).toHaveLength(6);
    for (const limit of ['0', '501', 'ten', '2.5', '-1']) {
      const res = await get('finance-events', { limit });
      expect({ limit, status: res.status, code: res.body.code }).toEqual({ limit, status: 400, code: 'validation_failed' });
    }
  });

  it('finance-events: the default limit is 100', async () => {
    const busy = await createCompany(settling(t));
    const base = Date.parse('2025-01-01T00:00:00.000Z');
    for (let i = 0; i < 105; i++) {
      expect((await post(busy.id, { kind: 'fee', direction: 'debit', amountCents: i, occurredAt: new Date(base + i * 60_000).toISOString() })).status).toBe(201);
    }
    const res = await t.api.get(`/api/companies/${busy.id}/costs/finance-events`);
    expect(res.body).toHaveLength(100);
    expect(res.body[0].amountCents).toBe(104);
    expect(res.body[99].amountCents).toBe(5);
    const summary = await t.api.get(`/api/companies/${busy.id}/costs/finance-summary`);
    expect(summary.body).toMatchObject({ debitCents: (104 * 105) / 2, eventCount: 105 });
  });

  it('from after to is 400 invalid_range; malformed bounds are 400 validation_failed', async () => {
    for (const path of ['finance-summary', 'finance-by-biller', 'finance-by-kind', 'finance-events']) {
      const bad = await get(path, { from: '2025-05-05T00:00:00Z', to: '2025-05-01T00:00:00Z' });
      expect({ path, status: bad.status, code: bad.body.code }).toEqual({ path, status: 400, code: 'invalid_range' });
      const malformed = await get(path, { to: 'tomorrow' });
      expect({ path, status: malformed.status, code: malformed.body.code }).toEqual({ path, status: 400, code: 'validation_failed' });
    }
  });

  it('agents of the company may read finance aggregates (BA)', async () => {
    for (const path of ['finance-summary', 'finance-by-biller', 'finance-by-kind', 'finance-events']) {
      const res = await t.api.as(agentKey).get(`/api/companies/${company.id}/costs/${path}`);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
    }
    const summary = await t.api.as(agentKey).get(`/api/companies/${company.id}/costs/finance-summary`);
    expect(summary.body.eventCount).toBe(6);
  });
});

describe('POST /api/companies/{companyId}/finance-events with an Idempotency-Key', () => {
  const count = async (companyId: string) => (await t.sql.query('select count(*)::int as n from plugin_costs.finance_events where company_id = $1', [companyId])).rows[0].n;
  const keyed = (companyId: string, body: unknown, key: string) => t.api.post(`/api/companies/${companyId}/finance-events`, body, { headers: { 'Idempotency-Key': key } });

  it('a retry and a concurrent pair each write one event and answer its id; another body under the key is 409', async () => {
    const company = await createCompany(t.api, { name: 'Keyed Finance Co' });
    const body = { kind: 'fee', direction: 'debit', amountCents: 125 };
    const first = await keyed(company.id, body, 'finance-1');
    expect(first.status, first.text).toBe(201);
    const retry = await keyed(company.id, body, 'finance-1');
    expect([retry.status, retry.headers.get('x-idempotent-replayed'), retry.body.id]).toEqual([200, 'true', first.body.id]);
    const other = await keyed(company.id, { ...body, amountCents: 126 }, 'finance-1');
    expect([other.status, other.body.code]).toEqual([409, 'idempotency_key_reused']);
    const pair = await Promise.all([0, 1].map(() => keyed(company.id, body, 'finance-2')));
    expect(pair.map((res) => res.status).sort()).toEqual([200, 201]);
    expect(pair[0]!.body.id).toBe(pair[1]!.body.id);
    expect(await count(company.id)).toBe(2);
    expect((await t.sql.query("select count(*)::int as n from activity_log where action = 'finance_event.created' and company_id = $1", [company.id])).rows[0].n).toBe(2);
  });
});
