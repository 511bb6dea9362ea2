import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { installAndEnable } from '../../support/plugins.ts';
import { activityCount, addCost, allowGatewayCaller, event, eventCount, lastMonthMoment, postCost, settling } from './helpers.ts';

/** Where a cost event's figures come from: `source` on events, their activity, the usage services and `costs/by-source`. */
const CALLER = fileURLToPath(new URL('./fixtures/usage-caller', import.meta.url));

let t: TestKernel;
let company: any;
let agent: any;

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  await installAndEnable(t, CALLER);
  await allowGatewayCaller(t.api);
  company = await createCompany(settling(t));
  agent = await createAgent(settling(t), company.id, { name: 'Ada' });
});
afterAll(async () => { await t?.stop(); });

/** Calls a costs service through the fixture, in `companyId` (as the runtime or the gateway would). */
function callService(companyId: string, service: string, input: unknown, key?: string) {
  return t.api.post(`/api/plugins/usage-caller/companies/${companyId}/call/${service}`, input, { headers: key ? { 'idempotency-key': key } : {} });
}

function usage(agentId: string, costCents: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    agentId, runId: randomUUID(), issueId: null, projectId: null, provider: 'alpha', model: 'alpha-large', biller: 'alpha', billingType: 'metered_api',
    inputTokens: 10, cachedInputTokens: 2, outputTokens: 5, costCents, occurredAt: new Date().toISOString(), ...extra,
  };
}

/** One report of a record-usages call. */
function report(costCents: number): Record<string, unknown> {
  return { provider: 'alpha', model: 'alpha-large', biller: 'alpha', billingType: 'metered_api', inputTokens: 10, cachedInputTokens: 2, outputTokens: 5, costCents, occurredAt: new Date().toISOString(), idempotencyKey: randomUUID() };
}

async function storedSource(id: string): Promise<string> {
  const { rows } = await t.sql.query('select source from plugin_costs.cost_events where id = $1', [id]);
  return rows[0].source;
}

async function activityDetails(id: string): Promise<Record<string, unknown>> {
  const { rows } = await t.sql.query(`select details from activity_log where action = 'cost_event.created' and entity_id = $1`, [id]);
  expect(rows).toHaveLength(1);
  return rows[0].details;
}

describe('source of cost events', () => {
  it('an event posted with the route is self_reported: in its JSON, its row and its activity details', async () => {
    const posted = await addCost(t.api, company.id, event(agent.id, 12));
    expect(posted.source).toBe('self_reported');
    expect(await storedSource(posted.id)).toBe('self_reported');
    expect(await activityDetails(posted.id)).toMatchObject({ source: 'self_reported', costCents: 12 });
    // Naming the only source the route stands for is accepted.
    const named = await addCost(t.api, company.id, event(agent.id, 1, { source: 'self_reported' }));
    expect(named.source).toBe('self_reported');
  });

  it('a poster cannot mark its event as measured by Keel: 400 validation_failed and nothing stored', async () => {
    const key = await createAgentKey(t.api, agent.id);
    const before = await eventCount(t, company.id);
    for (const source of ['gateway', 'adapter', 'remote_runner', 'anything']) {
      for (const api of [t.api, t.api.as(key)]) {
        const res = await postCost(api, company.id, event(agent.id, 7, { source }));
        expect({ source, status: res.status, code: res.body.code }).toEqual({ source, status: 400, code: 'validation_failed' });
      }
    }
    expect(await eventCount(t, company.id)).toBe(before);
  });

  it('record-usage without source stores an adapter event; with source, that source (JSON, row, activity)', async () => {
    const plain = await callService(company.id, 'record-usage', usage(agent.id, 3), randomUUID());
    expect(plain.status, plain.text).toBe(200);
    expect(plain.body).toMatchObject({ duplicate: false, stopped: [] });
    expect(await storedSource(plain.body.costEventId)).toBe('adapter');
    expect(await activityDetails(plain.body.costEventId)).toMatchObject({ source: 'adapter', costCents: 3 });
    for (const source of ['gateway', 'remote_runner', 'self_reported', 'adapter']) {
      const res = await callService(company.id, 'record-usage', usage(agent.id, 4, { source }), randomUUID());
      expect(res.status, res.text).toBe(200);
      expect(await storedSource(res.body.costEventId)).toBe(source);
      expect(await activityDetails(res.body.costEventId)).toMatchObject({ source });
    }
  });

  it('only a gateway plugin of the costs config records gateway spend: another caller is refused (403) and stores nothing', async () => {
    await t.api.post('/api/plugins/costs/config', { config: {} });
    try {
      const before = await eventCount(t, company.id);
      const one = await callService(company.id, 'record-usage', usage(agent.id, 5, { source: 'gateway' }), randomUUID());
      expect({ status: one.status, code: one.body.code }).toEqual({ status: 403, code: 'source_not_allowed' });
      expect(one.body.error).toContain('model-gateway');
      const many = await callService(company.id, 'record-usages', { agentId: agent.id, runId: randomUUID(), source: 'gateway', reports: [report(1)] });
      expect({ status: many.status, code: many.body.code }).toEqual({ status: 403, code: 'source_not_allowed' });
      // Other sources stay open to any consumer of the service.
      expect((await callService(company.id, 'record-usage', usage(agent.id, 1, { source: 'remote_runner' }), randomUUID())).status).toBe(200);
      expect(await eventCount(t, company.id)).toBe(before + 1);
    } finally {
      await allowGatewayCaller(t.api);
    }
  });

  it('record-usage may leave out runId (an agent key\'s call outside a run)', async () => {
    const { runId: _run, ...bare } = usage(agent.id, 2, { source: 'gateway' });
    const res = await callService(company.id, 'record-usage', bare, randomUUID());
    expect(res.status, res.text).toBe(200);
    const { rows } = await t.sql.query('select heartbeat_run_id from plugin_costs.cost_events where id = $1', [res.body.costEventId]);
    expect(rows).toEqual([{ heartbeat_run_id: null }]);
  });

  it('record-usage may leave out issueId and projectId (a call with no issue or project)', async () => {
    const { issueId: _issue, projectId: _project, ...bare } = usage(agent.id, 2, { source: 'gateway' });
    const res = await callService(company.id, 'record-usage', bare, randomUUID());
    expect(res.status, res.text).toBe(200);
    const { rows } = await t.sql.query('select issue_id, project_id, source from plugin_costs.cost_events where id = $1', [res.body.costEventId]);
    expect(rows).toEqual([{ issue_id: null, project_id: null, source: 'gateway' }]);
  });

  it('record-usages applies its source to every report, adapter by default', async () => {
    const batch = (source?: string) => ({
      agentId: agent.id, runId: randomUUID(), ...(source ? { source } : {}),
      reports: [report(1), report(2)],
    });
    const gateway = await callService(company.id, 'record-usages', batch('gateway'));
    expect(gateway.status, gateway.text).toBe(200);
    expect(await Promise.all(gateway.body.results.map((r: any) => storedSource(r.costEventId)))).toEqual(['gateway', 'gateway']);
    const plain = await callService(company.id, 'record-usages', batch());
    expect(plain.status, plain.text).toBe(200);
    expect(await Promise.all(plain.body.results.map((r: any) => storedSource(r.costEventId)))).toEqual(['adapter', 'adapter']);
  });

  it('record-usage and record-usages refuse a source outside the enum, storing nothing', async () => {
    const before = await eventCount(t, company.id);
    const one = await callService(company.id, 'record-usage', usage(agent.id, 5, { source: 'measured' }), randomUUID());
    expect({ status: one.status, code: one.body.code }).toEqual({ status: 400, code: 'validation_failed' });
    const many = await callService(company.id, 'record-usages', {
      agentId: agent.id, runId: randomUUID(), source: 'keel',
      reports: [report(1)],
    });
    expect({ status: many.status, code: many.body.code }).toEqual({ status: 400, code: 'validation_failed' });
    expect(await eventCount(t, company.id)).toBe(before);
  });

  it('a retried report counts once; the same report key with another source is refused (409) and stores nothing', async () => {
    const key = randomUUID();
    const body = usage(agent.id, 9, { source: 'gateway' });
    const first = await callService(company.id, 'record-usage', body, key);
    const before = await eventCount(t, company.id);
    const again = await callService(company.id, 'record-usage', body, key);
    expect([first.status, again.status]).toEqual([200, 200]);
    expect(again.body.costEventId).toBe(first.body.costEventId);
    expect(await eventCount(t, company.id)).toBe(before);

    // record-usages keys each report itself: a report is the same report only with the same source.
    const one = report(6);
    const runId = randomUUID();
    const batch = (source: string) => ({ agentId: agent.id, runId, source, reports: [one] });
    const stored = await callService(company.id, 'record-usages', batch('gateway'));
    expect(stored.status, stored.text).toBe(200);
    const replayed = await callService(company.id, 'record-usages', batch('gateway'));
    expect(replayed.status, replayed.text).toBe(200);
    expect(replayed.body.results).toEqual([{ costEventId: stored.body.results[0].costEventId, duplicate: true }]);
    const count = await eventCount(t, company.id);
    const other = await callService(company.id, 'record-usages', batch('remote_runner'));
    expect({ status: other.status, code: other.body.code }).toEqual({ status: 409, code: 'idempotency_key_reused' });
    expect(await eventCount(t, company.id)).toBe(count);
    expect(await storedSource(stored.body.results[0].costEventId)).toBe('gateway');
  });

  it('the budget overview shows this month\'s spend per source, measured apart from reported', async () => {
    const co = await createCompany(settling(t));
    const worker = await createAgent(settling(t), co.id);
    await addCost(t.api, co.id, event(worker.id, 30));
    await addCost(t.api, co.id, event(worker.id, 999, { occurredAt: lastMonthMoment().toISOString() }));
    const measured = await callService(co.id, 'record-usage', usage(worker.id, 70, { source: 'gateway' }), randomUUID());
    expect(measured.status, measured.text).toBe(200);
    const res = await t.api.get(`/api/companies/${co.id}/budgets/overview`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.monthSpendBySource).toEqual([
      { source: 'gateway', spendCents: 70, inputTokens: 10, cachedInputTokens: 2, outputTokens: 5, eventCount: 1 },
      { source: 'self_reported', spendCents: 30, inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, eventCount: 1 },
    ]);
  });
});
