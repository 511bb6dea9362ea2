import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { addCost, event, settling } from './helpers.ts';

/** GET costs/by-run: the spend and tokens of given runs from their cost events, split by source. */
let t: TestKernel;
let company: any;
let other: any;
let agent: any;
let otherAgent: any;
const runA = randomUUID();
const runB = randomUUID();
const idle = randomUUID();

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  company = await createCompany(settling(t), { name: 'Runs Co' });
  other = await createCompany(settling(t), { name: 'Other Co' });
  agent = await createAgent(settling(t), company.id, { name: 'Ada' });
  otherAgent = await createAgent(settling(t), other.id, { name: 'Eve' });
  await addCost(t.api, company.id, event(agent.id, 120, { heartbeatRunId: runA, inputTokens: 1000, cachedInputTokens: 100, outputTokens: 50 }));
  await addCost(t.api, company.id, event(agent.id, 30, { heartbeatRunId: runA, inputTokens: 10, outputTokens: 5 }));
  await addCost(t.api, company.id, event(agent.id, 7, { heartbeatRunId: runB, inputTokens: null, outputTokens: 2 }));
  await addCost(t.api, company.id, event(agent.id, 999, { heartbeatRunId: null }));
  // Another company's event naming the same run id never counts here.
  await addCost(t.api, other.id, event(otherAgent.id, 5000, { heartbeatRunId: runA }));
});
afterAll(async () => { await t?.stop(); });

const byRun = (companyId: string, runIds: string, token?: string) => t.api.get(`/api/companies/${companyId}/costs/by-run?runIds=${runIds}`, token ? { token } : undefined);

describe('GET /api/companies/{companyId}/costs/by-run', () => {
  it('answers each asked run in order, with totals and the split by source; zeros for a run without events', async () => {
    const res = await byRun(company.id, [runB, idle, runA.toUpperCase(), runB].join(','));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual([
      { runId: runB, spendCents: 7, inputTokens: 0, cachedInputTokens: 0, outputTokens: 2, eventCount: 1,
        bySource: [{ source: 'self_reported', spendCents: 7, inputTokens: 0, cachedInputTokens: 0, outputTokens: 2, eventCount: 1 }] },
      { runId: idle, spendCents: 0, inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, eventCount: 0, bySource: [] },
      { runId: runA, spendCents: 150, inputTokens: 1010, cachedInputTokens: 100, outputTokens: 55, eventCount: 2,
        bySource: [{ source: 'self_reported', spendCents: 150, inputTokens: 1010, cachedInputTokens: 100, outputTokens: 55, eventCount: 2 }] },
    ]);
  });

  it('serves an agent of the company, not one of another company', async () => {
    const key = await createAgentKey(t.api, agent.id);
    const own = await byRun(company.id, runA, key);
    expect(own.status, own.text).toBe(200);
    expect(own.body[0].spendCents).toBe(150);
    const otherKey = await createAgentKey(t.api, otherAgent.id);
    const refused = await byRun(company.id, runA, otherKey);
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBeTruthy();
  });

  it('refuses a missing or malformed runIds with 400 validation_failed', async () => {
    const missing = await t.api.get(`/api/companies/${company.id}/costs/by-run`);
    expect(missing.status).toBe(400);
    expect(missing.body.code).toBe('validation_failed');
    const malformed = await byRun(company.id, `${runA},not-a-run`);
    expect(malformed.status).toBe(400);
    expect(malformed.body.code).toBe('validation_failed');
    const tooMany = await byRun(company.id, Array.from({ length: 201 }, () => randomUUID()).join(','));
    expect(tooMany.status).toBe(400);
  });
});
