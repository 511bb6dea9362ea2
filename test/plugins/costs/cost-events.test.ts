import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { activityCount, addCost, agentSpent, companySpent, event, eventCount, ISO, postCost, UUID, settling } from './helpers.ts';

let t: TestKernel;
beforeAll(async () => { t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS }); });
afterAll(async () => { await t?.stop(); });

describe('POST /api/companies/{companyId}/cost-events: accepted events', () => {
  it('stores every field and answers 201 with the stored event', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const ids = { issueId: randomUUID(), projectId: randomUUID(), goalId: randomUUID(), heartbeatRunId: randomUUID() };
    const occurredAt = new Date(Date.now() - 60_000);
    const res = await postCost(t.api, company.id, {
      agentId: agent.id, provider: 'alpha', model: 'alpha-large', costCents: 1234, occurredAt: occurredAt.toISOString(),
      ...ids, billingCode: 'R&D-7', biller: 'gateway-inc', billingType: 'metered_api', inputTokens: 1000, cachedInputTokens: 250, outputTokens: 300,
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID), companyId: company.id, agentId: agent.id, ...ids, billingCode: 'R&D-7',
      provider: 'alpha', biller: 'gateway-inc', billingType: 'metered_api', model: 'alpha-large', source: 'self_reported',
      inputTokens: 1000, cachedInputTokens: 250, outputTokens: 300, costCents: 1234,
      occurredAt: occurredAt.toISOString(), createdAt: expect.stringMatching(ISO),
    });
    const { rows } = await t.sql.query('select * from plugin_costs.cost_events where id = $1', [res.body.id]);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      company_id: company.id, agent_id: agent.id, project_id: ids.projectId, issue_id: ids.issueId, goal_id: ids.goalId, heartbeat_run_id: ids.heartbeatRunId,
      provider: 'alpha', biller: 'gateway-inc', model: 'alpha-large', billing_type: 'metered_api', billing_code: 'R&D-7',
      cost_cents: '1234', input_tokens: '1000', cached_input_tokens: '250', output_tokens: '300', idempotency_key: null, source: 'self_reported',
    });
    expect(new Date(rows[0].occurred_at).toISOString()).toBe(occurredAt.toISOString());
  });

  it('defaults biller to the provider and billingType to unknown; optional fields are null', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const res = await postCost(t.api, company.id, event(agent.id, 5, { provider: 'beta', model: 'beta-mini' }));
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      provider: 'beta', biller: 'beta', billingType: 'unknown', model: 'beta-mini', costCents: 5,
      issueId: null, projectId: null, goalId: null, heartbeatRunId: null, billingCode: null,
      inputTokens: null, cachedInputTokens: null, outputTokens: null,
    });
    // An explicit null biller also falls back to the provider.
    const nullBiller = await postCost(t.api, company.id, event(agent.id, 0, { provider: 'gamma', biller: null }));
    expect(nullBiller.status, nullBiller.text).toBe(201);
    expect(nullBiller.body).toMatchObject({ biller: 'gamma', costCents: 0 });
  });

  it('normalises an occurredAt with an offset to UTC', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const res = await postCost(t.api, company.id, event(agent.id, 1, { occurredAt: '2025-03-10T12:30:00+02:00' }));
    expect(res.status, res.text).toBe(201);
    expect(res.body.occurredAt).toBe('2025-03-10T10:30:00.000Z');
  });

  it('lets the board report for any agent of the company', async () => {
    const company = await createCompany(settling(t));
    const first = await createAgent(settling(t), company.id);
    const second = await createAgent(settling(t), company.id);
    const a = await addCost(t.api, company.id, event(first.id, 10));
    const b = await addCost(t.api, company.id, event(second.id, 20));
    expect([a.agentId, b.agentId]).toEqual([first.id, second.id]);
    expect(await eventCount(t, company.id)).toBe(2);
    expect(await agentSpent(t.api, first.id)).toBe(10);
    expect(await agentSpent(t.api, second.id)).toBe(20);
    expect(await companySpent(t.api, company.id)).toBe(30);
  });

  it('accepts an agentId in upper case and stores it in lower case', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const res = await postCost(t.api, company.id, event(agent.id.toUpperCase(), 7));
    expect(res.status, res.text).toBe(201);
    expect(res.body.agentId).toBe(agent.id);
    expect(await agentSpent(t.api, agent.id)).toBe(7);
  });

  it('raises spentMonthlyCents of the agent and the company and writes a cost_event.created activity entry', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const other = await createAgent(settling(t), company.id);
    expect(await agentSpent(t.api, agent.id)).toBe(0);
    expect(await companySpent(t.api, company.id)).toBe(0);
    const first = await addCost(t.api, company.id, event(agent.id, 250, { provider: 'alpha', model: 'm1', billingType: 'credits' }));
    expect(await agentSpent(t.api, agent.id)).toBe(250);
    expect(await companySpent(t.api, company.id)).toBe(250);
    await addCost(t.api, company.id, event(agent.id, 49));
    await addCost(t.api, company.id, event(other.id, 1));
    expect(await agentSpent(t.api, agent.id)).toBe(299);
    expect(await agentSpent(t.api, other.id)).toBe(1);
    expect(await companySpent(t.api, company.id)).toBe(300);

    const feed = await t.api.get(`/api/companies/${company.id}/activity?entityId=${first.id}`);
    expect(feed.status).toBe(200);
    expect(feed.body).toHaveLength(1);
    expect(feed.body[0]).toMatchObject({
      companyId: company.id, action: 'cost_event.created', entityType: 'cost_event', entityId: first.id, actorType: 'user',
      details: { agentId: agent.id, provider: 'alpha', model: 'm1', biller: 'alpha', billingType: 'credits', costCents: 250 },
    });
    expect(await activityCount(t, company.id, 'cost_event.created')).toBe(3);
  });
});

describe('POST cost-events: who may report for whom', () => {
  it('an agent key reports its own costs (201, actor recorded as the agent)', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const key = await createAgentKey(t.api, agent.id);
    const res = await postCost(t.api.as(key), company.id, event(agent.id, 40));
    expect(res.status, res.text).toBe(201);
    expect(res.body.agentId).toBe(agent.id);
    expect(await agentSpent(t.api, agent.id)).toBe(40);
    const { rows } = await t.sql.query("select actor_type, actor_id from activity_log where action = 'cost_event.created' and entity_id = $1", [res.body.id]);
    expect(rows).toEqual([{ actor_type: 'agent', actor_id: agent.id }]);
  });

  it("an agent key may not report another agent's costs (403 forbidden), and nothing is stored", async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const peer = await createAgent(settling(t), company.id);
    const key = await createAgentKey(t.api, agent.id);
    const res = await postCost(t.api.as(key), company.id, event(peer.id, 40));
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('forbidden');
    expect(await eventCount(t, company.id)).toBe(0);
    expect(await agentSpent(t.api, peer.id)).toBe(0);
    expect(await companySpent(t.api, company.id)).toBe(0);
  });

  it('an agent of another company in the body is 404 agent_not_found', async () => {
    const company = await createCompany(settling(t));
    const other = await createCompany(settling(t));
    const stranger = await createAgent(settling(t), other.id);
    const res = await postCost(t.api, company.id, event(stranger.id, 40));
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('agent_not_found');
    expect(await eventCount(t, company.id)).toBe(0);
    expect(await eventCount(t, other.id)).toBe(0);
    expect(await agentSpent(t.api, stranger.id)).toBe(0);
  });

  it('an unknown agent id is 404 agent_not_found', async () => {
    const company = await createCompany(settling(t));
    const res = await postCost(t.api, company.id, event(randomUUID(), 40));
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('agent_not_found');
    expect(await eventCount(t, company.id)).toBe(0);
  });

  it("an agent key of company A on company B's route is 403, even naming its own id", async () => {
    const a = await createCompany(settling(t));
    const b = await createCompany(settling(t));
    const agent = await createAgent(settling(t), a.id);
    const bAgent = await createAgent(settling(t), b.id);
    const key = await createAgentKey(t.api, agent.id);
    for (const agentId of [agent.id, bAgent.id]) {
      const res = await postCost(t.api.as(key), b.id, event(agentId, 40));
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('company_access_denied');
    }
    expect(await eventCount(t, a.id)).toBe(0);
    expect(await eventCount(t, b.id)).toBe(0);
    // The key's own company stays reachable.
    expect((await postCost(t.api.as(key), a.id, event(agent.id, 1))).status).toBe(201);
  });

  it('an unknown company is 404 and a malformed company id is 404', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    expect((await postCost(t.api, randomUUID(), event(agent.id, 1))).status).toBe(404);
    expect((await postCost(t.api, 'not-a-company', event(agent.id, 1))).status).toBe(404);
    expect(await eventCount(t, company.id)).toBe(0);
  });

  it('refuses a request with an invalid bearer token (401)', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const res = await postCost(t.api.as('svc_agent_not-a-real-key'), company.id, event(agent.id, 1));
    expect(res.status).toBe(401);
    expect(await eventCount(t, company.id)).toBe(0);
  });
});

describe('POST cost-events: bad input is refused and stores nothing', () => {
  let company: any;
  let agent: any;
  beforeAll(async () => {
    company = await createCompany(settling(t));
    agent = await createAgent(settling(t), company.id);
    await addCost(t.api, company.id, event(agent.id, 11));
  });

  const valid = () => event(agent.id, 100);
  const without = (field: string) => { const body = valid(); delete body[field]; return body; };
  const cases: Array<[string, () => unknown]> = [
    ['missing agentId', () => without('agentId')],
    ['missing provider', () => without('provider')],
    ['missing model', () => without('model')],
    ['missing costCents', () => without('costCents')],
    ['missing occurredAt', () => without('occurredAt')],
    ['negative costCents', () => ({ ...valid(), costCents: -1 })],
    ['fractional costCents', () => ({ ...valid(), costCents: 1.5 })],
    ['string costCents', () => ({ ...valid(), costCents: '100' })],
    ['null costCents', () => ({ ...valid(), costCents: null })],
    ['costCents above the maximum', () => ({ ...valid(), costCents: 100_000_000_001 })],
    ['occurredAt "yesterday"', () => ({ ...valid(), occurredAt: 'yesterday' })],
    ['occurredAt with month 13', () => ({ ...valid(), occurredAt: '2026-13-01T00:00:00Z' })],
    ['occurredAt on 30 February', () => ({ ...valid(), occurredAt: '2026-02-30T00:00:00Z' })],
    ['occurredAt at hour 25', () => ({ ...valid(), occurredAt: '2026-01-01T25:00:00Z' })],
    ['occurredAt as a number', () => ({ ...valid(), occurredAt: Date.now() })],
    ['unknown billingType', () => ({ ...valid(), billingType: 'barter' })],
    ['non-uuid agentId', () => ({ ...valid(), agentId: 'agent-1' })],
    ['empty provider', () => ({ ...valid(), provider: '' })],
    ['empty model', () => ({ ...valid(), model: '' })],
    ['provider longer than 200', () => ({ ...valid(), provider: 'p'.repeat(201) })],
    ['empty biller', () => ({ ...valid(), biller: '' })],
    ['negative inputTokens', () => ({ ...valid(), inputTokens: -5 })],
    ['fractional outputTokens', () => ({ ...valid(), outputTokens: 2.5 })],
    ['non-uuid projectId', () => ({ ...valid(), projectId: 'proj' })],
    ['an array body', () => [valid()]],
    ['an empty object', () => ({})],
  ];

  for (const [name, body] of cases) {
    it(`${name} -> 400 validation_failed`, async () => {
      const before = await eventCount(t, company.id);
      const res = await postCost(t.api, company.id, body());
      expect(res.status, res.text).toBe(400);
      expect(res.body).toMatchObject({ code: 'validation_failed', error: expect.any(String) });
      expect(await eventCount(t, company.id)).toBe(before);
      expect(await agentSpent(t.api, agent.id)).toBe(11);
      expect(await companySpent(t.api, company.id)).toBe(11);
    });
  }

  it('a body that is not JSON is a 4xx JSON error and stores nothing', async () => {
    const res = await t.api.request('POST', `/api/companies/${company.id}/cost-events`, { rawBody: '{"agentId":', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(typeof res.body.code).toBe('string');
    expect(await eventCount(t, company.id)).toBe(1);
  });

  it('an Idempotency-Key longer than 255 characters -> 400 invalid_idempotency_key', async () => {
    const res = await postCost(t.api, company.id, valid(), { 'idempotency-key': 'k'.repeat(256) });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_idempotency_key');
    expect(await eventCount(t, company.id)).toBe(1);
    expect(await agentSpent(t.api, agent.id)).toBe(11);
  });

  it('no activity entry was written for any refused request', async () => {
    expect(await activityCount(t, company.id, 'cost_event.created')).toBe(1);
  });
});

describe('POST cost-events: Idempotency-Key', () => {
  it('three sequential sends store one event, count the spend once and mark the replays', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const body = event(agent.id, 333, { inputTokens: 10 });
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await postCost(t.api, company.id, body, { 'idempotency-key': 'retry-1' }));
    expect(answers.map((r) => r.status)).toEqual([201, 201, 201]);
    expect(new Set(answers.map((r) => r.body.id)).size).toBe(1);
    expect(answers.map((r) => r.headers.get('x-idempotent-replayed'))).toEqual([null, 'true', 'true']);
    expect(answers[1]!.body).toEqual(answers[0]!.body);
    expect(await eventCount(t, company.id)).toBe(1);
    expect(await agentSpent(t.api, agent.id)).toBe(333);
    expect(await companySpent(t.api, company.id)).toBe(333);
    const { rows } = await t.sql.query('select cost_cents::int, period from plugin_costs.spend_totals where company_id = $1 and scope_type = $2 order by period', [company.id, 'agent']);
    expect(rows.map((r) => r.cost_cents)).toEqual([333, 333]);
    expect(await activityCount(t, company.id, 'cost_event.created')).toBe(1);
  });

  it('the same body with its keys in another order is a replay', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const body = event(agent.id, 9);
    const first = await postCost(t.api, company.id, body, { 'idempotency-key': 'order' });
    const reversed = Object.fromEntries(Object.entries(body).reverse());
    const second = await postCost(t.api, company.id, reversed, { 'idempotency-key': 'order' });
    expect([first.status, second.status]).toEqual([201, 201]);
    expect(second.body.id).toBe(first.body.id);
    expect(second.headers.get('x-idempotent-replayed')).toBe('true');
    expect(await eventCount(t, company.id)).toBe(1);
  });

  it('ten concurrent sends store one event and count the spend once', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const body = event(agent.id, 777);
    const answers = await Promise.all(Array.from({ length: 10 }, () => postCost(t.api, company.id, body, { 'idempotency-key': 'burst' })));
    expect(answers.map((r) => r.status)).toEqual(Array(10).fill(201));
    expect(new Set(answers.map((r) => r.body.id)).size).toBe(1);
    expect(answers.filter((r) => r.headers.get('x-idempotent-replayed') === 'true')).toHaveLength(9);
    expect(await eventCount(t, company.id)).toBe(1);
    expect(await agentSpent(t.api, agent.id)).toBe(777);
    expect(await companySpent(t.api, company.id)).toBe(777);
    const summary = await t.api.get(`/api/companies/${company.id}/costs/summary`);
    expect(summary.body.spendCents).toBe(777);
  });

  it('the same key with a different body is 409 idempotency_key_reused and changes nothing', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const first = await postCost(t.api, company.id, event(agent.id, 100), { 'idempotency-key': 'k-1' });
    expect(first.status).toBe(201);
    const second = await postCost(t.api, company.id, event(agent.id, 101), { 'idempotency-key': 'k-1' });
    expect(second.status).toBe(409);
    expect(second.body.code).toBe('idempotency_key_reused');
    expect(await eventCount(t, company.id)).toBe(1);
    expect(await agentSpent(t.api, agent.id)).toBe(100);
    expect(await companySpent(t.api, company.id)).toBe(100);
  });

  it('different keys, or no key, store separate events', async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const body = event(agent.id, 50);
    const a = await postCost(t.api, company.id, body, { 'idempotency-key': 'a' });
    const b = await postCost(t.api, company.id, body, { 'idempotency-key': 'b' });
    const c = await postCost(t.api, company.id, body);
    const d = await postCost(t.api, company.id, body);
    expect([a, b, c, d].map((r) => r.status)).toEqual([201, 201, 201, 201]);
    expect(new Set([a, b, c, d].map((r) => r.body.id)).size).toBe(4);
    expect(await eventCount(t, company.id)).toBe(4);
    expect(await agentSpent(t.api, agent.id)).toBe(200);
  });

  it('a key is scoped to its company: the same key in another company stores a new event', async () => {
    const one = await createCompany(settling(t));
    const two = await createCompany(settling(t));
    const agentOne = await createAgent(settling(t), one.id);
    const agentTwo = await createAgent(settling(t), two.id);
    const a = await postCost(t.api, one.id, event(agentOne.id, 5), { 'idempotency-key': 'shared-key' });
    const b = await postCost(t.api, two.id, event(agentTwo.id, 5), { 'idempotency-key': 'shared-key' });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(b.body.id).not.toBe(a.body.id);
    expect(b.headers.get('x-idempotent-replayed')).toBeNull();
    expect(await eventCount(t, one.id)).toBe(1);
    expect(await eventCount(t, two.id)).toBe(1);
  });

  it("an agent cannot replay a board-stored key for another agent's event", async () => {
    const company = await createCompany(settling(t));
    const agent = await createAgent(settling(t), company.id);
    const peer = await createAgent(settling(t), company.id);
    const key = await createAgentKey(t.api, agent.id);
    const body = event(peer.id, 60);
    expect((await postCost(t.api, company.id, body, { 'idempotency-key': 'peer' })).status).toBe(201);
    const replay = await postCost(t.api.as(key), company.id, body, { 'idempotency-key': 'peer' });
    expect(replay.status).toBe(403);
    expect(replay.body.code).toBe('forbidden');
  });
});
