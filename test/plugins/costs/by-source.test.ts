import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { installAndEnable } from '../../support/plugins.ts';
import { addCost, q, settling } from './helpers.ts';
import { allowGatewayCaller } from './helpers.ts';

/** GET costs/by-source: spend per source (and per model), over ranges read from daily and hourly rollups and raw events. */
const CALLER = fileURLToPath(new URL('./fixtures/usage-caller', import.meta.url));

let t: TestKernel;
let company: any;
let agentA: any;
let agentB: any;

type Source = 'self_reported' | 'adapter' | 'gateway' | 'remote_runner';
interface Ev { source: Source; agent: 'A' | 'B'; at: string; cents: number; provider: string; model: string; tokens: [number, number, number] }

/** Over several hours and three days of a past month; every group's sum differs, so the order is the spend's alone. */
const EVENTS: Ev[] = [
  { source: 'self_reported', agent: 'A', at: '2025-05-10T10:05:00.000Z', cents: 100, provider: 'alpha', model: 'a-large', tokens: [10, 1, 20] },
  { source: 'gateway', agent: 'A', at: '2025-05-10T10:40:00.000Z', cents: 203, provider: 'alpha', model: 'a-large', tokens: [1000, 200, 300] },
  { source: 'gateway', agent: 'B', at: '2025-05-10T11:15:00.000Z', cents: 401, provider: 'openai', model: 'o-mini', tokens: [50, 0, 70] },
  { source: 'adapter', agent: 'B', at: '2025-05-10T12:00:00.000Z', cents: 802, provider: 'alpha', model: 'a-small', tokens: [7, 0, 9] },
  { source: 'self_reported', agent: 'A', at: '2025-05-10T13:59:59.999Z', cents: 1604, provider: 'beta', model: 'b-1', tokens: [0, 0, 0] },
  { source: 'remote_runner', agent: 'B', at: '2025-05-11T09:30:00.000Z', cents: 3208, provider: 'gamma', model: 'g-1', tokens: [3, 2, 1] },
  { source: 'gateway', agent: 'A', at: '2025-05-12T00:00:00.000Z', cents: 6416, provider: 'alpha', model: 'a-small', tokens: [40, 4, 44] },
  { source: 'adapter', agent: 'A', at: '2025-05-12T00:30:00.000Z', cents: 5, provider: 'alpha', model: 'a-small', tokens: [1, 1, 1] },
];

interface Row { source: string; provider?: string; model?: string; spendCents: number; inputTokens: number; cachedInputTokens: number; outputTokens: number; eventCount: number }

/** What by-source must answer for a range with inclusive ends, computed from the events themselves. */
function expected(from: string | undefined, to: string | undefined, byModel: boolean): Row[] {
  const rows = new Map<string, Row>();
  for (const e of EVENTS) {
    if ((from && Date.parse(e.at) < Date.parse(from)) || (to && Date.parse(e.at) > Date.parse(to))) continue;
    const key = byModel ? `${e.source}/${e.provider}/${e.model}` : e.source;
    const row = rows.get(key) ?? { source: e.source, ...(byModel ? { provider: e.provider, model: e.model } : {}), spendCents: 0, inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, eventCount: 0 };
    row.spendCents += e.cents;
    row.inputTokens += e.tokens[0];
    row.cachedInputTokens += e.tokens[1];
    row.outputTokens += e.tokens[2];
    row.eventCount += 1;
    rows.set(key, row);
  }
  return [...rows.values()].sort((a, b) => b.spendCents - a.spendCents);
}

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  await installAndEnable(t, CALLER);
  await allowGatewayCaller(t.api);
  company = await createCompany(settling(t));
  agentA = await createAgent(settling(t), company.id, { name: 'Ada' });
  agentB = await createAgent(settling(t), company.id, { name: 'Bob' });
  for (const e of EVENTS) {
    const agentId = e.agent === 'A' ? agentA.id : agentB.id;
    const figures = { provider: e.provider, model: e.model, costCents: e.cents, occurredAt: e.at, inputTokens: e.tokens[0], cachedInputTokens: e.tokens[1], outputTokens: e.tokens[2] };
    if (e.source === 'self_reported') {
      await addCost(t.api, company.id, { agentId, ...figures });
      continue;
    }
    const res = await t.api.post(`/api/plugins/usage-caller/companies/${company.id}/call/record-usage`, {
      agentId, runId: randomUUID(), issueId: null, projectId: null, biller: e.provider, billingType: 'metered_api', source: e.source, ...figures,
    }, { headers: { 'idempotency-key': randomUUID() } });
    expect(res.status, res.text).toBe(200);
  }
});
afterAll(async () => { await t?.stop(); });

const get = (params: Record<string, string> = {}) => t.api.get(`/api/companies/${company.id}/costs/by-source${Object.keys(params).length ? q(params) : ''}`);

describe('GET /api/companies/{companyId}/costs/by-source', () => {
  it('all time: one row per source with spend, largest first', async () => {
    const res = await get();
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual([
      { source: 'gateway', spendCents: 7020, inputTokens: 1090, cachedInputTokens: 204, outputTokens: 414, eventCount: 3 },
      { source: 'remote_runner', spendCents: 3208, inputTokens: 3, cachedInputTokens: 2, outputTokens: 1, eventCount: 1 },
      { source: 'self_reported', spendCents: 1704, inputTokens: 10, cachedInputTokens: 1, outputTokens: 20, eventCount: 2 },
      { source: 'adapter', spendCents: 807, inputTokens: 8, cachedInputTokens: 1, outputTokens: 10, eventCount: 2 },
    ]);
    expect(res.body).toEqual(expected(undefined, undefined, false));
  });

  it('groupBy=model: one row per source, provider and model', async () => {
    const res = await get({ groupBy: 'model' });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual([
      { source: 'gateway', provider: 'alpha', model: 'a-small', spendCents: 6416, inputTokens: 40, cachedInputTokens: 4, outputTokens: 44, eventCount: 1 },
      { source: 'remote_runner', provider: 'gamma', model: 'g-1', spendCents: 3208, inputTokens: 3, cachedInputTokens: 2, outputTokens: 1, eventCount: 1 },
      { source: 'self_reported', provider: 'beta', model: 'b-1', spendCents: 1604, inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, eventCount: 1 },
      { source: 'adapter', provider: 'alpha', model: 'a-small', spendCents: 807, inputTokens: 8, cachedInputTokens: 1, outputTokens: 10, eventCount: 2 },
      { source: 'gateway', provider: 'openai', model: 'o-mini', spendCents: 401, inputTokens: 50, cachedInputTokens: 0, outputTokens: 70, eventCount: 1 },
      { source: 'gateway', provider: 'alpha', model: 'a-large', spendCents: 203, inputTokens: 1000, cachedInputTokens: 200, outputTokens: 300, eventCount: 1 },
      { source: 'self_reported', provider: 'alpha', model: 'a-large', spendCents: 100, inputTokens: 10, cachedInputTokens: 1, outputTokens: 20, eventCount: 1 },
    ]);
    expect(res.body).toEqual(expected(undefined, undefined, true));
  });

  // Ranges read whole days from daily rollups, whole hours from hourly ones and the rest from raw events.
  const ranges: Array<[string, string | undefined, string | undefined]> = [
    ['cutting inside two hours (raw events only)', '2025-05-10T10:30:00.000Z', '2025-05-10T11:30:00.000Z'],
    ['whole hours (hourly rollups)', '2025-05-10T10:00:00.000Z', '2025-05-10T12:59:59.999Z'],
    ['three whole days (daily rollups)', '2025-05-10T00:00:00.000Z', '2025-05-12T23:59:59.999Z'],
    ['across a day boundary cutting both ends (all three)', '2025-05-10T10:20:00.000Z', '2025-05-12T00:10:00.000Z'],
    ['only from, inside an hour', '2025-05-10T12:00:00.001Z', undefined],
    ['only to, on an event', undefined, '2025-05-11T09:30:00.000Z'],
    ['before every event', '2025-01-01T00:00:00.000Z', '2025-05-10T10:04:59.999Z'],
  ];
  for (const [name, from, to] of ranges) {
    it(`range ${name}: per source and per model as the events say`, async () => {
      const params: Record<string, string> = {};
      if (from) params.from = from;
      if (to) params.to = to;
      const bySource = await get(params);
      expect(bySource.status, bySource.text).toBe(200);
      expect(bySource.body).toEqual(expected(from, to, false));
      const byModel = await get({ ...params, groupBy: 'model' });
      expect(byModel.status, byModel.text).toBe(200);
      expect(byModel.body).toEqual(expected(from, to, true));
    });
  }

  it('the other breakdowns still sum every source together', async () => {
    const byProvider = await t.api.get(`/api/companies/${company.id}/costs/by-provider`);
    expect(byProvider.body.map((r: any) => [r.provider, r.spendCents, r.eventCount])).toEqual([['alpha', 7526, 5], ['gamma', 3208, 1], ['beta', 1604, 1], ['openai', 401, 1]]);
    const summary = await t.api.get(`/api/companies/${company.id}/costs/summary${q({ from: '2025-05-10T00:00:00.000Z', to: '2025-05-12T23:59:59.999Z' })}`);
    expect(summary.body.spendCents).toBe(EVENTS.reduce((sum, e) => sum + e.cents, 0));
  });

  it('an agent of the company may read it (BA)', async () => {
    const key = await createAgentKey(t.api, agentB.id);
    const res = await t.api.as(key).get(`/api/companies/${company.id}/costs/by-source${q({ groupBy: 'model' })}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toHaveLength(7);
  });

  it('a company without events answers an empty list', async () => {
    const empty = await createCompany(settling(t));
    const res = await t.api.get(`/api/companies/${empty.id}/costs/by-source`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
  });

  it('bad query values are 400 with the usual error body', async () => {
    for (const params of [{ groupBy: 'agent' }, { groupBy: '' }, { from: 'yesterday' }, { to: '2025-13-01T00:00:00Z' }] as Array<Record<string, string>>) {
      const res = await get(params);
      expect({ params, status: res.status, code: res.body.code }).toEqual({ params, status: 400, code: 'validation_failed' });
      expect(res.body.error).toEqual(expect.any(String));
    }
    const reversed = await get({ from: '2025-05-12T00:00:00Z', to: '2025-05-10T00:00:00Z', groupBy: 'model' });
    expect({ status: reversed.status, code: reversed.body.code }).toEqual({ status: 400, code: 'invalid_range' });
  });

  it('an unknown company is 404', async () => {
    const res = await t.api.get(`/api/companies/${randomUUID()}/costs/by-source`);
    expect(res.status).toBe(404);
  });
});
