import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { startAnthropicModel, type ScriptedAnthropic } from '../../support/scripted-models/anthropic.ts';
import { startScriptedChat, type ScriptedChat } from '../../support/scripted-models/openai-chat.ts';
import { startScriptedGemini, type ScriptedGemini } from '../../support/scripted-models/gemini.ts';
import { addProvider } from './helpers.ts';
import { callsSettled, costRows, endRun, liveRun, startGatewayWorld, type GatewayWorld, type LiveRun } from './world.ts';

/**
 * Every refusal of the gateway, in the error shape of the protocol the client speaks, and never
 * forwarded: the scripted providers count what reached them.
 */
let world: GatewayWorld;
let anthropic: ScriptedAnthropic;
let chat: ScriptedChat;
let gemini: ScriptedGemini;
let company: any;
let providers: { anthropic: any; openai: any; gemini: any };
let run: LiveRun;

const PRICES = (model: string) => [{ model, inputCentsPerMTok: 100, cachedInputCentsPerMTok: 10, cacheWriteCentsPerMTok: 125, outputCentsPerMTok: 500 }];

beforeAll(async () => {
  world = await startGatewayWorld();
  anthropic = await startAnthropicModel(() => ({ text: 'ok', usage: { inputTokens: 10, outputTokens: 2 } }));
  chat = await startScriptedChat(() => ({ text: 'ok' }));
  gemini = await startScriptedGemini(() => ({ text: 'ok' }));
  company = await createCompany(world.t.api);
  providers = {
    anthropic: await addProvider(world.t.api, company.id, { name: 'A', baseUrl: anthropic.url, models: PRICES('claude-*') }),
    openai: await addProvider(world.t.api, company.id, { name: 'O', kind: 'openai', baseUrl: chat.url.replace(/\/v1$/, ''), models: PRICES('gpt-*') }),
    gemini: await addProvider(world.t.api, company.id, { name: 'G', kind: 'gemini', baseUrl: gemini.url, models: PRICES('gemini-*') }),
  };
  run = await liveRun(world, company.id, { runtimeConfig: { allowedModels: ['claude-*', 'gpt-4o', 'gemini-*'] } });
});
afterAll(async () => {
  for (const server of [anthropic, chat, gemini]) await server?.close();
  await world?.stop();
});

type Kind = 'anthropic' | 'openai' | 'gemini';
const PATHS: Record<Kind, (model: string) => string> = {
  anthropic: () => '/v1/messages', openai: () => '/v1/chat/completions', gemini: (model) => `/v1beta/models/${model}:generateContent`,
};
const MODELS: Record<Kind, string> = { anthropic: 'claude-test', openai: 'gpt-4o', gemini: 'gemini-test' };

async function call(kind: Kind, options: { providerId?: string; token?: string | null; model?: string; path?: string; headers?: Record<string, string> } = {}) {
  const model = options.model ?? MODELS[kind];
  const token = options.token === undefined ? run.token : options.token;
  const auth: Record<string, string> = token === null ? {} : kind === 'anthropic' ? { 'x-api-key': token } : kind === 'gemini' ? { 'x-goog-api-key': token } : { authorization: `Bearer ${token}` };
  const body = kind === 'gemini' ? { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] } : { model, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
  const res = await fetch(`${world.t.url}/api/llm/${options.providerId ?? providers[kind].id}${options.path ?? PATHS[kind](model)}`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...auth, ...options.headers }, body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: JSON.parse(text) };
}

const forwarded = () => anthropic.requests.length + chat.requests.length + gemini.requests.length;

/** The provider's own error shape for a status. */
function expectShape(kind: Kind, answer: { status: number; body: any }, status: number, type: { anthropic: string; openai: string; gemini: string }, text?: RegExp) {
  expect(answer.status, JSON.stringify(answer.body)).toBe(status);
  if (kind === 'anthropic') expect(answer.body).toEqual({ type: 'error', error: { type: type.anthropic, message: expect.any(String) } });
  if (kind === 'openai') expect(answer.body).toEqual({ error: { message: expect.any(String), type: type.openai, param: null, code: expect.any(String) } });
  if (kind === 'gemini') expect(answer.body).toEqual({ error: { code: status, message: expect.any(String), status: type.gemini } });
  const message = kind === 'anthropic' ? answer.body.error.message : answer.body.error.message;
  if (text) expect(message).toMatch(text);
}

const UNAUTHENTICATED = { anthropic: 'authentication_error', openai: 'authentication_error', gemini: 'UNAUTHENTICATED' };
const FORBIDDEN = { anthropic: 'permission_error', openai: 'permission_error', gemini: 'PERMISSION_DENIED' };
const NOT_FOUND = { anthropic: 'not_found_error', openai: 'not_found_error', gemini: 'NOT_FOUND' };
const KINDS: Kind[] = ['anthropic', 'openai', 'gemini'];

describe('the gateway refuses in the provider\'s own error shape, and forwards nothing', () => {
  it('answers the allowed call (the control: the same requests otherwise reach the provider)', async () => {
    const before = forwarded();
    for (const kind of KINDS) expect((await call(kind)).status).toBe(200);
    expect(forwarded()).toBe(before + 3);
  });

  it('401 without a credential, with an unknown one, and for the local board (no credential in local_trusted)', async () => {
    const before = forwarded();
    for (const kind of KINDS) {
      expectShape(kind, await call(kind, { token: null }), 401, UNAUTHENTICATED);
      expectShape(kind, await call(kind, { token: 'sk-not-a-keel-token' }), 401, UNAUTHENTICATED);
      expectShape(kind, await call(kind, { token: 'svc_agent_0000000000000000' }), 401, UNAUTHENTICATED);
    }
    expect(forwarded()).toBe(before);
  });

  it('an agent key alone calls outside any run: forwarded, and charged to the agent with no run', async () => {
    const key = await createAgentKey(world.t.api, run.agent.id);
    const before = forwarded();
    for (const kind of KINDS) expect((await call(kind, { token: key })).status).toBe(200);
    expect(forwarded()).toBe(before + KINDS.length);
    await callsSettled(world.t);
    const rows = (await costRows(world.t, company.id)).filter((row) => row.heartbeat_run_id === null);
    expect(rows).toHaveLength(KINDS.length);
    expect(rows.every((row) => row.agent_id === run.agent.id && row.source === 'gateway')).toBe(true);
  });

  it('404 for an unknown provider id, a malformed one, and a provider of another kind than the path', async () => {
    const before = forwarded();
    for (const kind of KINDS) {
      expectShape(kind, await call(kind, { providerId: randomUUID() }), 404, NOT_FOUND);
      expectShape(kind, await call(kind, { providerId: 'not-a-uuid' }), 404, NOT_FOUND);
    }
    expectShape('openai', await call('openai', { providerId: providers.anthropic.id }), 404, NOT_FOUND);
    expectShape('anthropic', await call('anthropic', { providerId: providers.gemini.id }), 404, NOT_FOUND);
    expectShape('gemini', await call('gemini', { providerId: providers.openai.id }), 404, NOT_FOUND);
    expectShape('gemini', await call('gemini', { path: '/v1beta/models/gemini-test:countTokens' }), 404, NOT_FOUND);
    expect(forwarded()).toBe(before);
  });

  it('403 for a model outside the agent\'s allowedModels, naming the model', async () => {
    const before = forwarded();
    expectShape('anthropic', await call('anthropic', { model: 'haiku-3' }), 403, FORBIDDEN, /haiku-3.*allowedModels/);
    expectShape('openai', await call('openai', { model: 'gpt-4o-mini' }), 403, FORBIDDEN, /gpt-4o-mini/);
    expectShape('gemini', await call('gemini', { model: 'other-model' }), 403, FORBIDDEN, /other-model/);
    expect(forwarded()).toBe(before);
  });

  it('403 for a model without a price unless the provider allows unpriced models (then metered at 0 cents)', async () => {
    const other = await createCompany(world.t.api);
    const provider = await addProvider(world.t.api, other.id, { baseUrl: anthropic.url, models: PRICES('claude-priced') });
    const agentRun = await liveRun(world, other.id);
    const before = forwarded();
    const refused = await call('anthropic', { providerId: provider.id, token: agentRun.token, model: 'claude-free' });
    expectShape('anthropic', refused, 403, FORBIDDEN, /claude-free.*no price/);
    expect(refused.headers.get('x-keel-refusal')).toBe('model_not_priced');
    expect(forwarded()).toBe(before);
    expect((await world.t.api.patch(`/api/model-providers/${provider.id}`, { allowUnpricedModels: true })).status).toBe(200);
    expect((await call('anthropic', { providerId: provider.id, token: agentRun.token, model: 'claude-free' })).status).toBe(200);
    await callsSettled(world.t);
    expect(await costRows(world.t, other.id)).toEqual([expect.objectContaining({ model: 'claude-free', cost_cents: '0', input_tokens: '10', output_tokens: '2', source: 'gateway' })]);
  });

  it('403 naming the budget and its scope while a hard stop is open on the agent', async () => {
    const other = await createCompany(world.t.api);
    const provider = await addProvider(world.t.api, other.id, { baseUrl: anthropic.url, models: PRICES('claude-*') });
    const agentRun = await liveRun(world, other.id);
    const policy = await world.t.api.post(`/api/companies/${other.id}/budgets/policies`, { scopeType: 'agent', scopeId: agentRun.agent.id, amount: 100, hardStopEnabled: true });
    expect(policy.status, policy.text).toBeLessThan(300);
    // The moment between a stop opening and its runs being cancelled: the stop is open, the run still lives.
    await world.t.sql.query(
      `insert into plugin_costs.budget_incidents (company_id, policy_id, scope_type, scope_id, metric, window_kind, window_start, threshold_type, policy_revision, amount_limit, amount_observed)
       values ($1, $2, 'agent', $3, 'billed_cents', 'calendar_month_utc', date_trunc('month', now()), 'hard', 1, 100, 150)`, [other.id, policy.body.id, agentRun.agent.id]);
    const before = forwarded();
    const refused = await call('anthropic', { providerId: provider.id, token: agentRun.token });
    expectShape('anthropic', refused, 403, FORBIDDEN, new RegExp(`agent budget hard stop.*agent ${agentRun.agent.id}`));
    expect(refused.headers.get('x-keel-refusal')).toBe('budget_exceeded');
    expect(forwarded()).toBe(before);
  });

  it('a call that crosses the agent\'s hard stop pauses it, and its next call is refused before the provider', async () => {
    const other = await createCompany(world.t.api);
    const provider = await addProvider(world.t.api, other.id, { baseUrl: anthropic.url, models: [{ model: 'claude-*', inputCentsPerMTok: 10_000_000, cachedInputCentsPerMTok: 0, cacheWriteCentsPerMTok: 0, outputCentsPerMTok: 0 }] });
    const agentRun = await liveRun(world, other.id);
    expect((await world.t.api.post(`/api/companies/${other.id}/budgets/policies`, { scopeType: 'agent', scopeId: agentRun.agent.id, amount: 50, hardStopEnabled: true })).status).toBeLessThan(300);
    // 10 input tokens at 10,000,000 cents per MTok: 100 cents, over the 50 of the budget.
    expect((await call('anthropic', { providerId: provider.id, token: agentRun.token })).status).toBe(200);
    await callsSettled(world.t);
    expect(await costRows(world.t, other.id)).toEqual([expect.objectContaining({ cost_cents: '100' })]);
    const agent = await world.t.api.get(`/api/agents/${agentRun.agent.id}`);
    expect(agent.body.status).toBe('paused');
    const before = forwarded();
    const refused = await call('anthropic', { providerId: provider.id, token: agentRun.token });
    // 403 while the run still lives, 401 once the stop has cancelled it: refused either way.
    expect([401, 403]).toContain(refused.status);
    expect(refused.body.type).toBe('error');
    expect(forwarded()).toBe(before);
  });

  it('401 for an ended run\'s token', async () => {
    const other = await createCompany(world.t.api);
    const provider = await addProvider(world.t.api, other.id, { baseUrl: anthropic.url, models: PRICES('claude-*') });
    const agentRun = await liveRun(world, other.id);
    expect((await call('anthropic', { providerId: provider.id, token: agentRun.token })).status).toBe(200);
    await endRun(world, agentRun.runId);
    const before = forwarded();
    expectShape('anthropic', await call('anthropic', { providerId: provider.id, token: agentRun.token }), 401, UNAUTHENTICATED);
    expect(forwarded()).toBe(before);
  });

  it('a timer run still being started (in the run ledger only) is served; a ledger-only run of another source is refused', async () => {
    const other = await createCompany(world.t.api);
    const provider = await addProvider(world.t.api, other.id, { baseUrl: anthropic.url, models: PRICES('claude-*') });
    const agent = await createAgent(world.t.api, other.id, { name: 'Ledger only' });
    const { db, runs } = world.t.kernel.services;
    const open = (invocationSource: string) => db.transaction((tx) => runs.open(tx, { agentId: agent.id, companyId: other.id, invocationSource }));
    // A heartbeat's job opens its run in the ledger and starts its process before its own
    // transaction, which stores the run in the runtime, commits: the runtime does not name it yet.
    const timer = await open('timer');
    expect((await world.t.sql.query('select 1 from plugin_runtime.runs where id = $1', [timer.run.runId])).rows).toHaveLength(0);
    const before = forwarded();
    const served = await call('anthropic', { providerId: provider.id, token: timer.token });
    expect(served.status, served.text).toBe(200);
    expect(forwarded()).toBe(before + 1);
    const onDemand = await open('on_demand');
    expectShape('anthropic', await call('anthropic', { providerId: provider.id, token: onDemand.token }), 401, UNAUTHENTICATED);
    expect(forwarded()).toBe(before + 1);
  });

  it('a paused company\'s agent is refused before any provider call', async () => {
    const other = await createCompany(world.t.api);
    const provider = await addProvider(world.t.api, other.id, { baseUrl: anthropic.url, models: PRICES('claude-*') });
    const agentRun = await liveRun(world, other.id);
    const paused = await world.t.api.patch(`/api/companies/${other.id}`, { status: 'paused' });
    expect(paused.status, paused.text).toBeLessThan(300);
    const before = forwarded();
    const refused = await call('anthropic', { providerId: provider.id, token: agentRun.token });
    expect([401, 403]).toContain(refused.status);
    expect(refused.body.type).toBe('error');
    expect(forwarded()).toBe(before);
  });
});

describe('per-company rate limits', () => {
  it('429 with retry-after once the calls per minute are used, in the provider\'s shape; a refused call is not counted', async () => {
    const other = await createCompany(world.t.api);
    const provider = await addProvider(world.t.api, other.id, { kind: 'openai', baseUrl: chat.url.replace(/\/v1$/, ''), models: PRICES('gpt-*') });
    const agentRun = await liveRun(world, other.id);
    expect((await world.t.api.put(`/api/companies/${other.id}/model-gateway/limits`, { callsPerMinute: 2, tokensPerMinute: null })).status).toBe(200);
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await call('openai', { providerId: provider.id, token: agentRun.token }));
    // Two calls of one minute pass; a minute boundary in between lets at most one more through.
    const passed = answers.filter((answer) => answer.status === 200).length;
    expect(passed).toBeGreaterThanOrEqual(2);
    expect(passed).toBeLessThanOrEqual(3);
    const limited = answers.find((answer) => answer.status === 429)!;
    expect(limited.body).toEqual({ error: { message: expect.stringMatching(/2 calls per minute/), type: 'rate_limit_error', param: null, code: 'calls_per_minute_exceeded' } });
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    const { rows } = await world.t.sql.query('select max(calls)::int as n from plugin_model_gateway.minute_counters where company_id = $1', [other.id]);
    expect(rows[0].n).toBe(2);
  });

  it('429 once the tokens per minute are used (tokens count when calls finish)', async () => {
    const other = await createCompany(world.t.api);
    const provider = await addProvider(world.t.api, other.id, { baseUrl: anthropic.url, models: PRICES('claude-*') });
    const agentRun = await liveRun(world, other.id);
    expect((await world.t.api.put(`/api/companies/${other.id}/model-gateway/limits`, { callsPerMinute: null, tokensPerMinute: 12 })).status).toBe(200);
    const first = await call('anthropic', { providerId: provider.id, token: agentRun.token });
    expect(first.status).toBe(200);
    await callsSettled(world.t);
    const second = await call('anthropic', { providerId: provider.id, token: agentRun.token });
    // A minute boundary between the two calls starts a new count.
    if (second.status !== 200) {
      expectShape('anthropic', second, 429, { anthropic: 'rate_limit_error', openai: '', gemini: '' }, /12 tokens per minute/);
      expect(Number(second.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    } else {
      const { rows } = await world.t.sql.query('select count(*)::int as n from plugin_model_gateway.minute_counters where company_id = $1', [other.id]);
      expect(rows[0].n).toBe(2);
    }
  });
});
