import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { addCost, q, settling } from './helpers.ts';

let t: TestKernel;
let company: any;
let agentA: any;
let agentB: any;
let agentC: any;
const P1 = randomUUID();
const P2 = randomUUID();

interface Ev { agent: 'A' | 'B' | 'C'; at: string; cents: number; provider: string; model: string; biller?: string; projectId?: string; tokens?: [number, number, number] }

/** Spread over several hours and three days, all in a past month so that monthly spend stays out of it. */
const EVENTS: Ev[] = [
  { agent: 'A', at: '2025-06-10T10:05:00.000Z', cents: 100, provider: 'alpha', model: 'm1', tokens: [10, 5, 20] },
  { agent: 'A', at: '2025-06-10T10:40:00.000Z', cents: 200, provider: 'alpha', model: 'm2' },
  { agent: 'B', at: '2025-06-10T11:15:00.000Z', cents: 400, provider: 'beta', model: 'mb', biller: 'gateway', tokens: [1, 0, 2] },
  { agent: 'B', at: '2025-06-10T12:00:00.000Z', cents: 800, provider: 'alpha', model: 'm1' },
  { agent: 'A', at: '2025-06-10T13:59:59.999Z', cents: 1600, provider: 'beta', model: 'mb', tokens: [100, 50, 200] },
  { agent: 'C', at: '2025-06-11T09:30:00.000Z', cents: 3200, provider: 'gamma', model: 'g1', projectId: P1 },
  { agent: 'A', at: '2025-06-12T00:00:00.000Z', cents: 6400, provider: 'alpha', model: 'm1', biller: 'gateway', projectId: P2 },
  // Two more in the hour of the first ones, to make the rollup of 10:00 hold several events.
  { agent: 'A', at: '2025-06-10T10:00:00.000Z', cents: 3, provider: 'alpha', model: 'm1' },
  { agent: 'A', at: '2025-06-10T10:59:59.999Z', cents: 5, provider: 'alpha', model: 'm1' },
];
const TOTAL = EVENTS.reduce((sum, e) => sum + e.cents, 0);

/** The expected sum of a range with inclusive ends, straight from the events. */
function expectedSum(from?: string, to?: string): number {
  return EVENTS.filter((e) => (!from || Date.parse(e.at) >= Date.parse(from)) && (!to || Date.parse(e.at) <= Date.parse(to))).reduce((s, e) => s + e.cents, 0);
}

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  company = await createCompany(settling(t), { budgetMonthlyCents: 50_000 });
  agentA = await createAgent(settling(t), company.id, { name: 'Ada' });
  agentB = await createAgent(settling(t), company.id, { name: 'Bob' });
  agentC = await createAgent(settling(t), company.id, { name: 'Cy' });
  const ids = { A: agentA.id, B: agentB.id, C: agentC.id };
  for (const e of EVENTS) {
    await addCost(t.api, company.id, {
      agentId: ids[e.agent], provider: e.provider, model: e.model, costCents: e.cents, occurredAt: e.at,
      ...(e.biller ? { biller: e.biller } : {}), ...(e.projectId ? { projectId: e.projectId } : {}),
      ...(e.tokens ? { inputTokens: e.tokens[0], cachedInputTokens: e.tokens[1], outputTokens: e.tokens[2] } : {}),
    });
  }
});
afterAll(async () => { await t?.stop(); });

const get = (path: string, params: Record<string, string> = {}) => t.api.get(`/api/companies/${company.id}/costs/${path}${Object.keys(params).length ? q(params) : ''}`);

describe('GET costs/summary', () => {
  it('all time: spend, the monthly budget and utilisation', async () => {
    const res = await get('summary');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ companyId: company.id, from: null, to: null, spendCents: TOTAL, budgetCents: 50_000, utilizationPercent: Math.round((TOTAL / 50_000) * 10_000) / 100 });
    expect(TOTAL).toBe(12_708);
    expect(res.body.utilizationPercent).toBe(25.42);
  });

  it('echoes from and to and sums only the range', async () => {
    const from = '2025-06-10T10:30:00.000Z';
    const to = '2025-06-10T11:30:00.000Z';
    const res = await get('summary', { from, to });
    expect(res.body).toEqual({ companyId: company.id, from, to, spendCents: 605, budgetCents: 50_000, utilizationPercent: 1.21 });
  });

  const ranges: Array<[string, string | undefined, string | undefined, number]> = [
    ['cuts inside two hours', '2025-06-10T10:30:00.000Z', '2025-06-10T11:30:00.000Z', 605],
    ['whole hours, to inclusive on the hour', '2025-06-10T10:00:00.000Z', '2025-06-10T12:00:00.000Z', 1508],
    ['whole hours ending one millisecond before the hour', '2025-06-10T10:00:00.000Z', '2025-06-10T11:59:59.999Z', 708],
    ['starting one millisecond after an event on the hour', '2025-06-10T12:00:00.001Z', '2025-06-10T13:59:59.999Z', 1600],
    ['ending one millisecond before an event', '2025-06-10T12:00:00.000Z', '2025-06-10T13:59:59.998Z', 800],
    ['inside one hour with no event', '2025-06-10T10:41:00.000Z', '2025-06-10T10:59:00.000Z', 0],
    ['inside one hour, both ends on events', '2025-06-10T10:05:00.000Z', '2025-06-10T10:59:59.999Z', 305],
    ['from equal to to on an event', '2025-06-10T10:05:00.000Z', '2025-06-10T10:05:00.000Z', 100],
    ['from equal to to on the hour', '2025-06-10T12:00:00.000Z', '2025-06-10T12:00:00.000Z', 800],
    ['only from', '2025-06-11T00:00:00.000Z', undefined, 9600],
    ['only from, inside an hour', '2025-06-10T10:40:00.000Z', undefined, TOTAL - 103],
    ['only to, inside an hour', undefined, '2025-06-10T11:15:00.000Z', 708],
    ['only to, on the hour', undefined, '2025-06-10T11:00:00.000Z', 308],
    ['three whole days', '2025-06-10T00:00:00.000Z', '2025-06-12T00:00:00.000Z', TOTAL],
    ['three days ending just before the last event', '2025-06-10T00:00:00.000Z', '2025-06-11T23:59:59.999Z', TOTAL - 6400],
    ['across a day boundary cutting both ends', '2025-06-10T13:30:00.000Z', '2025-06-11T09:30:00.000Z', 4800],
    ['before every event', '2024-01-01T00:00:00.000Z', '2025-06-10T09:59:59.999Z', 0],
  ];
  for (const [name, from, to, cents] of ranges) {
    it(`range ${name}: ${cents} cents`, async () => {
      const params: Record<string, string> = {};
      if (from) params.from = from;
      if (to) params.to = to;
      expect(expectedSum(from, to)).toBe(cents);
      const res = await get('summary', params);
      expect(res.status, res.text).toBe(200);
      expect(res.body.spendCents).toBe(cents);
    });
  }

  it('agrees with the events for every pair of many interesting bounds', async () => {
    const points = new Set<number>();
    for (const e of EVENTS) for (const d of [-1, 0, 1]) points.add(Date.parse(e.at) + d);
    for (const hour of ['2025-06-10T10', '2025-06-10T11', '2025-06-10T12', '2025-06-10T13', '2025-06-10T14', '2025-06-11T09', '2025-06-11T10']) {
      points.add(Date.parse(`${hour}:00:00.000Z`));
      points.add(Date.parse(`${hour}:30:00.000Z`));
    }
    const sorted = [...points].sort((a, b) => a - b);
    const mismatches: string[] = [];
    const pairs: Array<[number, number]> = [];
    for (let i = 0; i < sorted.length; i += 2) for (let j = i; j < sorted.length; j += 3) pairs.push([sorted[i]!, sorted[j]!]);
    for (const [a, b] of pairs) {
      const from = new Date(a).toISOString();
      const to = new Date(b).toISOString();
      const res = await get('summary', { from, to });
      if (res.body.spendCents !== expectedSum(from, to)) mismatches.push(`${from}..${to}: ${res.body.spendCents} != ${expectedSum(from, to)}`);
    }
    expect(pairs.length).toBeGreaterThan(50);
    expect(mismatches).toEqual([]);
  });

  it('accepts bounds with a time-zone offset', async () => {
    const res = await get('summary', { from: '2025-06-10T12:30:00+02:00', to: '2025-06-10T13:30:00+02:00' });
    expect(res.status).toBe(200);
    expect(res.body.spendCents).toBe(605);
  });

  it('from after to is 400 invalid_range', async () => {
    const res = await get('summary', { from: '2025-06-10T12:00:00.001Z', to: '2025-06-10T12:00:00.000Z' });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_range');
    for (const path of ['by-agent', 'by-provider', 'by-biller', 'by-project', 'by-agent-model']) {
      const r = await get(path, { from: '2025-06-12T00:00:00Z', to: '2025-06-10T00:00:00Z' });
      expect({ path, status: r.status, code: r.body.code }).toEqual({ path, status: 400, code: 'invalid_range' });
    }
  });

  it('a malformed from or to is 400 validation_failed', async () => {
    for (const params of [{ from: 'yesterday' }, { to: '2025-13-01T00:00:00Z' }, { from: '2025-06-10' }] as Array<Record<string, string>>) {
      const res = await get('summary', params);
      expect({ params, status: res.status, code: res.body.code }).toEqual({ params, status: 400, code: 'validation_failed' });
    }
    const byAgent = await get('by-agent', { from: 'not-a-date' });
    expect(byAgent.status).toBe(400);
    expect(byAgent.body.code).toBe('validation_failed');
  });

  it('a company without events or budget reads zero', async () => {
    const empty = await createCompany(settling(t));
    const res = await t.api.get(`/api/companies/${empty.id}/costs/summary`);
    expect(res.body).toEqual({ companyId: empty.id, from: null, to: null, spendCents: 0, budgetCents: 0, utilizationPercent: 0 });
    const ranged = await t.api.get(`/api/companies/${empty.id}/costs/summary${q({ from: '2025-06-10T10:30:00Z', to: '2025-06-10T11:30:00Z' })}`);
    expect(ranged.body.spendCents).toBe(0);
    const byAgent = await t.api.get(`/api/companies/${empty.id}/costs/by-agent`);
    expect(byAgent.body).toEqual([]);
  });

  it('agents of the company may read it (BA)', async () => {
    const key = await createAgentKey(t.api, agentB.id);
    const res = await t.api.as(key).get(`/api/companies/${company.id}/costs/summary`);
    expect(res.status).toBe(200);
    expect(res.body.spendCents).toBe(TOTAL);
    const byAgent = await t.api.as(key).get(`/api/companies/${company.id}/costs/by-agent`);
    expect(byAgent.status).toBe(200);
  });
});

describe('breakdowns', () => {
  const m = (spendCents: number, eventCount: number, tokens: [number, number, number] = [0, 0, 0]) => ({ spendCents, eventCount, inputTokens: tokens[0], cachedInputTokens: tokens[1], outputTokens: tokens[2] });

  it('by-agent: all time, largest first, with names and tokens', async () => {
    const res = await get('by-agent');
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      { agentId: agentA.id, agentName: 'Ada', ...m(8308, 6, [110, 55, 220]) },
      { agentId: agentC.id, agentName: 'Cy', ...m(3200, 1) },
      { agentId: agentB.id, agentName: 'Bob', ...m(1200, 2, [1, 0, 2]) },
    ]);
  });

  it('by-agent: a range cutting inside hours reorders the agents', async () => {
    const res = await get('by-agent', { from: '2025-06-10T10:30:00Z', to: '2025-06-10T12:00:00Z' });
    expect(res.body).toEqual([
      { agentId: agentB.id, agentName: 'Bob', ...m(1200, 2, [1, 0, 2]) },
      { agentId: agentA.id, agentName: 'Ada', ...m(205, 2) },
    ]);
  });

  it('by-agent: tokens of a partial hour come from the raw events', async () => {
    const res = await get('by-agent', { from: '2025-06-10T10:01:00Z', to: '2025-06-10T10:30:00Z' });
    expect(res.body).toEqual([{ agentId: agentA.id, agentName: 'Ada', ...m(100, 1, [10, 5, 20]) }]);
  });

  it('by-agent-model: one row per agent, provider, biller and model, largest first', async () => {
    const res = await get('by-agent-model');
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      { agentId: agentA.id, agentName: 'Ada', provider: 'alpha', biller: 'gateway', model: 'm1', ...m(6400, 1) },
      { agentId: agentC.id, agentName: 'Cy', provider: 'gamma', biller: 'gamma', model: 'g1', ...m(3200, 1) },
      { agentId: agentA.id, agentName: 'Ada', provider: 'beta', biller: 'beta', model: 'mb', ...m(1600, 1, [100, 50, 200]) },
      { agentId: agentB.id, agentName: 'Bob', provider: 'alpha', biller: 'alpha', model: 'm1', ...m(800, 1) },
      { agentId: agentB.id, agentName: 'Bob', provider: 'beta', biller: 'gateway', model: 'mb', ...m(400, 1, [1, 0, 2]) },
      { agentId: agentA.id, agentName: 'Ada', provider: 'alpha', biller: 'alpha', model: 'm2', ...m(200, 1) },
      { agentId: agentA.id, agentName: 'Ada', provider: 'alpha', biller: 'alpha', model: 'm1', ...m(108, 3, [10, 5, 20]) },
    ]);
  });

  it('by-provider: largest first', async () => {
    const res = await get('by-provider');
    expect(res.body).toEqual([
      { provider: 'alpha', ...m(7508, 6, [10, 5, 20]) },
      { provider: 'gamma', ...m(3200, 1) },
      { provider: 'beta', ...m(2000, 2, [101, 50, 202]) },
    ]);
  });

  it('by-provider: in a range', async () => {
    const res = await get('by-provider', { from: '2025-06-10T11:00:00Z', to: '2025-06-10T13:59:59.999Z' });
    expect(res.body).toEqual([
      { provider: 'beta', ...m(2000, 2, [101, 50, 202]) },
      { provider: 'alpha', ...m(800, 1) },
    ]);
  });

  it('by-biller: the biller defaults to the provider; largest first', async () => {
    const res = await get('by-biller');
    expect(res.body).toEqual([
      { biller: 'gateway', ...m(6800, 2, [1, 0, 2]) },
      { biller: 'gamma', ...m(3200, 1) },
      { biller: 'beta', ...m(1600, 1, [100, 50, 200]) },
      { biller: 'alpha', ...m(1108, 5, [10, 5, 20]) },
    ]);
  });

  it('by-project: projectId null for unattributed spend; largest first', async () => {
    const res = await get('by-project');
    expect(res.body).toEqual([
      { projectId: P2, ...m(6400, 1) },
      { projectId: P1, ...m(3200, 1) },
      { projectId: null, ...m(3108, 7, [111, 55, 222]) },
    ]);
    const ranged = await get('by-project', { from: '2025-06-11T00:00:00Z' });
    expect(ranged.body).toEqual([{ projectId: P2, ...m(6400, 1) }, { projectId: P1, ...m(3200, 1) }]);
  });

  it('breakdowns of one company never include another company', async () => {
    const other = await createCompany(settling(t));
    const stranger = await createAgent(settling(t), other.id);
    await addCost(t.api, other.id, { agentId: stranger.id, provider: 'alpha', model: 'm1', costCents: 999, occurredAt: '2025-06-10T10:10:00Z' });
    const res = await get('by-provider', { from: '2025-06-10T10:00:00Z', to: '2025-06-10T10:59:59.999Z' });
    expect(res.body).toEqual([{ provider: 'alpha', ...m(308, 4, [10, 5, 20]) }]);
    const theirs = await t.api.get(`/api/companies/${other.id}/costs/by-agent`);
    expect(theirs.body).toEqual([{ agentId: stranger.id, agentName: stranger.name, ...m(999, 1) }]);
  });
});

describe('GET costs/window-spend and costs/quota-windows', () => {
  let windowCompany: any;
  beforeAll(async () => {
    windowCompany = await createCompany(settling(t));
    const agent = await createAgent(settling(t), windowCompany.id);
    const now = Date.now();
    const at = (hours: number) => new Date(now - hours * 3_600_000).toISOString();
    await addCost(t.api, windowCompany.id, { agentId: agent.id, provider: 'alpha', model: 'm', costCents: 10, occurredAt: at(2), inputTokens: 1 });
    await addCost(t.api, windowCompany.id, { agentId: agent.id, provider: 'beta', model: 'm', costCents: 20, occurredAt: at(10), outputTokens: 2 });
    await addCost(t.api, windowCompany.id, { agentId: agent.id, provider: 'alpha', model: 'm', costCents: 40, occurredAt: at(72) });
    await addCost(t.api, windowCompany.id, { agentId: agent.id, provider: 'beta', model: 'm', costCents: 80, occurredAt: at(240) });
  });

  it('sums the last 5 hours, 24 hours and 7 days', async () => {
    const res = await t.api.get(`/api/companies/${windowCompany.id}/costs/window-spend`);
    expect(res.status).toBe(200);
    const asOf = Date.parse(res.body.asOf);
    expect(res.body.companyId).toBe(windowCompany.id);
    expect(res.body.windows.map((w: any) => [w.window, Date.parse(w.to) - Date.parse(w.from), Date.parse(w.to) - asOf])).toEqual([
      ['5h', 5 * 3_600_000, 0], ['24h', 24 * 3_600_000, 0], ['7d', 168 * 3_600_000, 0],
    ]);
    expect(res.body.windows.map(({ from: _f, to: _t, ...rest }: any) => rest)).toEqual([
      { window: '5h', spendCents: 10, eventCount: 1, byProvider: [{ provider: 'alpha', spendCents: 10, eventCount: 1, inputTokens: 1, cachedInputTokens: 0, outputTokens: 0 }] },
      { window: '24h', spendCents: 30, eventCount: 2, byProvider: [
        { provider: 'beta', spendCents: 20, eventCount: 1, inputTokens: 0, cachedInputTokens: 0, outputTokens: 2 },
        { provider: 'alpha', spendCents: 10, eventCount: 1, inputTokens: 1, cachedInputTokens: 0, outputTokens: 0 },
      ] },
      { window: '7d', spendCents: 70, eventCount: 3, byProvider: [
        { provider: 'alpha', spendCents: 50, eventCount: 2, inputTokens: 1, cachedInputTokens: 0, outputTokens: 0 },
        { provider: 'beta', spendCents: 20, eventCount: 1, inputTokens: 0, cachedInputTokens: 0, outputTokens: 2 },
      ] },
    ]);
  });

  it('window-spend is readable by an agent of the company', async () => {
    const agent = await createAgent(settling(t), windowCompany.id);
    const key = await createAgentKey(t.api, agent.id);
    const res = await t.api.as(key).get(`/api/companies/${windowCompany.id}/costs/window-spend`);
    expect(res.status).toBe(200);
    expect(res.body.windows.map((w: any) => w.spendCents)).toEqual([10, 30, 70]);
  });

  it('quota-windows is board only: an agent key gets 403', async () => {
    const agent = await createAgent(settling(t), windowCompany.id);
    const key = await createAgentKey(t.api, agent.id);
    const res = await t.api.as(key).get(`/api/companies/${windowCompany.id}/costs/quota-windows`);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('board_required');
  });

  it('quota-windows of an unknown company is 404', async () => {
    const res = await t.api.get(`/api/companies/${randomUUID()}/costs/quota-windows`);
    expect(res.status).toBe(404);
  });

  it('quota-windows without configured quotas: spend per provider, no limits', async () => {
    const res = await t.api.get(`/api/companies/${windowCompany.id}/costs/quota-windows`);
    expect(res.status).toBe(200);
    const w = (window: string, spendCents: number, eventCount: number, tokens: [number, number] = [0, 0]) =>
      ({ window, spendCents, eventCount, inputTokens: tokens[0], cachedInputTokens: 0, outputTokens: tokens[1], limitCents: null, usedPercent: null, exceeded: false });
    expect(res.body).toEqual([
      { provider: 'alpha', windows: [w('5h', 10, 1, [1, 0]), w('24h', 10, 1, [1, 0]), w('7d', 50, 2, [1, 0])] },
      { provider: 'beta', windows: [w('5h', 0, 0), w('24h', 20, 1, [0, 2]), w('7d', 20, 1, [0, 2])] },
    ]);
  });

  it('quota-windows against configured quotas (plugin config)', async () => {
    const config = await t.api.post('/api/plugins/costs/config', { config: { quotas: { alpha: { '5h': 20, '7d': 1000 }, beta: { '24h': 20 }, delta: { '5h': 5 } } } });
    expect(config.status, config.text).toBe(200);
    const res = await t.api.get(`/api/companies/${windowCompany.id}/costs/quota-windows`);
    expect(res.status).toBe(200);
    const pick = (entry: any) => ({ provider: entry.provider, windows: entry.windows.map((x: any) => [x.window, x.spendCents, x.limitCents, x.usedPercent, x.exceeded]) });
    expect(res.body.map(pick)).toEqual([
      { provider: 'alpha', windows: [['5h', 10, 20, 50, false], ['24h', 10, null, null, false], ['7d', 50, 1000, 5, false]] },
      { provider: 'beta', windows: [['5h', 0, null, null, false], ['24h', 20, 20, 100, true], ['7d', 20, null, null, false]] },
      { provider: 'delta', windows: [['5h', 0, 5, 0, false], ['24h', 0, null, null, false], ['7d', 0, null, null, false]] },
    ]);
  });
});
