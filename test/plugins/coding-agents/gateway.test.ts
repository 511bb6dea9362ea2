import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codingTool } from '../../support/coding-tools.ts';
import { eventsSettled } from '../../support/events.ts';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { bash, conversationText, startAnthropicModel, toolResults, type AnthropicReply, type MessagesRequest, type ScriptedAnthropic } from '../../support/scripted-models/anthropic.ts';
import { lastFunctionResponses, startScriptedGemini, type ScriptedGemini } from '../../support/scripted-models/gemini.ts';
import { answersToolCall, startScriptedResponsesServer, toolOutputs, type ScriptedResponsesServer } from '../../support/scripted-models/openai-responses.ts';
import { waitFor } from '../../support/wait-for.ts';
import { callsSettled, liveRun, startGatewayWorld, type GatewayWorld } from '../model-gateway/world.ts';
import { runWhen, wakeOk } from '../runtime/helpers.ts';

/**
 * The model gateway end to end with the real tools: a running Keel with a model provider of the
 * company (kind anthropic for Claude Code, openai for Codex) whose baseUrl is a scripted provider
 * of this process and whose key is a plain value stored in the vault. The agents' runs call
 * `/api/llm/<providerId>/` with their run token; the provider sees only the company's key; the
 * scripted model has the agent print its environment with its shell tool and the test reads the
 * tool result in the next request: the key is not there. Every call is one gateway cost event
 * with exact tokens and cents; the tool's own usage report is kept beside the run, not charged.
 */
const ANTHROPIC_KEY = 'sk-ant-company-key-only-the-provider-sees';
const OPENAI_KEY = 'sk-openai-company-key-only-the-provider-sees';
const AGENT_OWN_KEY = 'sk-agent-own-key-withheld-when-served';
const CLAUDE_PRICE = { model: 'claude-gw', inputCentsPerMTok: 300, cachedInputCentsPerMTok: 30, cacheWriteCentsPerMTok: 375, outputCentsPerMTok: 1500 };
const GEMINI_KEY = 'gemini-company-key-only-the-provider-sees';
const GEMINI_PRICE = { model: 'gemini-*', inputCentsPerMTok: 100, cachedInputCentsPerMTok: 10, cacheWriteCentsPerMTok: 0, outputCentsPerMTok: 400 };
const GPT_PRICE = { model: 'gpt-gw', inputCentsPerMTok: 200, cachedInputCentsPerMTok: 20, cacheWriteCentsPerMTok: 0, outputCentsPerMTok: 800 };

let world: GatewayWorld;
let company: any;
let anthropic: ScriptedAnthropic;
let responses: ScriptedResponsesServer;
let gemini: ScriptedGemini;
let geminiProvider: any;
let anthropicProvider: any;
let openaiProvider: any;
/** The Anthropic script of the test that runs. */
let script: (request: MessagesRequest) => AnthropicReply = () => ({ text: 'unscripted' });

beforeAll(async () => {
  anthropic = await startAnthropicModel((request) => (conversationText(request).includes('single word: ready') ? { text: 'ready' } : script(request)), { apiKey: ANTHROPIC_KEY });
  responses = await startScriptedResponsesServer((request) => (answersToolCall(request)
    ? { text: 'Printed the environment.', usage: { inputTokens: 150_000, cachedInputTokens: 100_000, outputTokens: 2_500 } }
    : { shell: 'env', usage: { inputTokens: 100_000, cachedInputTokens: 40_000, outputTokens: 5_000 } }));
  gemini = await startScriptedGemini((request) => (lastFunctionResponses(request).length > 0
    ? { text: 'Printed the environment.', usage: { promptTokenCount: 120_000, cachedContentTokenCount: 60_000, candidatesTokenCount: 2_000 } }
    : { functionCall: { name: 'run_shell_command', args: { command: 'env' } }, usage: { promptTokenCount: 100_000, cachedContentTokenCount: 20_000, candidatesTokenCount: 5_000, thoughtsTokenCount: 1_000 } }));
  world = await startGatewayWorld();
  company = await createCompany(world.t.api, { name: 'Gateway Tools Co' });
  anthropicProvider = await provider(company.id, { name: 'Anthropic', kind: 'anthropic', baseUrl: anthropic.url, apiKey: ANTHROPIC_KEY, models: [CLAUDE_PRICE], isDefault: true });
  geminiProvider = await provider(company.id, { name: 'Gemini', kind: 'gemini', baseUrl: gemini.url, apiKey: GEMINI_KEY, models: [GEMINI_PRICE], isDefault: true });
  openaiProvider = await provider(company.id, { name: 'OpenAI', kind: 'openai', baseUrl: new URL(responses.baseUrl).origin, apiKey: OPENAI_KEY, models: [GPT_PRICE], isDefault: true });
}, 120_000);
afterAll(async () => {
  await world?.stop();
  await Promise.all([anthropic?.close(), responses?.close(), gemini?.close()]);
});

async function provider(companyId: string, body: Record<string, unknown>) {
  const res = await world.t.api.post(`/api/companies/${companyId}/model-providers`, body);
  expect(res.status, res.text).toBe(201);
  expect(res.text).not.toContain(String(body.apiKey));
  return res.body;
}

async function ownKey(companyId: string): Promise<Record<string, unknown>> {
  const secret = await world.t.api.post(`/api/companies/${companyId}/secrets`, { name: `OWN_${Math.random().toString(36).slice(2, 8)}`, value: AGENT_OWN_KEY });
  expect(secret.status, secret.text).toBe(201);
  return { type: 'secret_ref', secretId: secret.body.id };
}

const costEventsOf = async (runId: string) =>
  (await world.t.sql.query('select source, provider, biller, model, billing_type, input_tokens, cached_input_tokens, output_tokens, cost_cents from plugin_costs.cost_events where heartbeat_run_id = $1 order by occurred_at, created_at', [runId])).rows;

async function ended(runId: string) {
  const run = await runWhen(world.t, runId, undefined, 240_000);
  await callsSettled(world.t);
  return run;
}

describe('real tools through the model gateway', { timeout: 300_000 }, () => {
  it('Claude Code: the provider sees the company\'s key, the tool never holds it, each call is a gateway cost event with exact tokens and cents', async () => {
    const claude = await codingTool('claude');
    script = (request) => (toolResults(request).length === 0
      ? bash('env', { usage: { inputTokens: 100_000, cacheCreationInputTokens: 50_000, cacheReadInputTokens: 200_000, outputTokens: 10_000 } })
      : { text: 'Printed the environment.', usage: { inputTokens: 20_000, cacheReadInputTokens: 300_000, outputTokens: 2_000 } });
    const agent = await createAgent(world.t.api, company.id, {
      adapterType: 'alpha_local', adapterConfig: { command: claude, model: 'claude-gw', timeoutSec: 240, graceSec: 5, env: { ANTHROPIC_API_KEY: await ownKey(company.id) } },
    });
    const asked = anthropic.requests.length;
    const run = await ended((await wakeOk(world.t.api, agent.id, { reason: 'print your environment' })).run.id);
    expect(run.status, JSON.stringify(run)).toBe('succeeded');

    const calls = anthropic.requests.slice(asked).filter((request) => request.path === '/v1/messages');
    expect(calls).toHaveLength(2);
    for (const call of calls) {
      expect(call.headers['x-api-key']).toBe(ANTHROPIC_KEY);
      expect(call.headers.authorization).toBeUndefined();
    }
    // The tool's shell printed its environment: the gateway's address and a run token, no provider key.
    const printed = toolResults(calls[1]!.body!).map((result) => result.text).join('\n');
    expect(printed).toContain(`ANTHROPIC_BASE_URL=${world.t.url}/api/llm/${anthropicProvider.id}`);
    expect(printed).toMatch(/^ANTHROPIC_API_KEY=/m);
    for (const key of [ANTHROPIC_KEY, OPENAI_KEY, GEMINI_KEY, AGENT_OWN_KEY]) expect(printed).not.toContain(key);

    // 100k uncached + 50k cache writes + 200k cached + 10k out: 30 + 18.75 + 6 + 15 = 69.75 → 70 cents; then 6 + 9 + 3 = 18 cents.
    expect(await costEventsOf(run.id)).toEqual([
      { source: 'gateway', provider: 'Anthropic', biller: 'anthropic', model: 'claude-gw', billing_type: 'metered_api', input_tokens: '150000', cached_input_tokens: '200000', output_tokens: '10000', cost_cents: '70' },
      { source: 'gateway', provider: 'Anthropic', biller: 'anthropic', model: 'claude-gw', billing_type: 'metered_api', input_tokens: '20000', cached_input_tokens: '300000', output_tokens: '2000', cost_cents: '18' },
    ]);
    // Claude Code's own report of the same usage is kept beside the run, not charged a second time.
    expect(run.resultJson.modelGateway).toEqual({ providerId: anthropicProvider.id });
    expect(run.usageJson).toMatchObject({ reports: 0, costCents: 0, toolReported: { reports: 1, inputTokens: 170_000, cachedInputTokens: 500_000, outputTokens: 12_000 } });
  });

  it('Codex: the provider sees the company\'s key as its bearer, the tool never holds it, each call is a gateway cost event with exact tokens and cents', async () => {
    const codex = await codingTool('codex');
    const agent = await createAgent(world.t.api, company.id, {
      adapterType: 'beta_local', adapterConfig: { command: codex, model: 'gpt-gw', timeoutSec: 240, graceSec: 2, env: { OPENAI_API_KEY: await ownKey(company.id) } },
    });
    const asked = responses.requests.length;
    const run = await ended((await wakeOk(world.t.api, agent.id, { reason: 'print your environment' })).run.id);
    expect(run.status, JSON.stringify(run)).toBe('succeeded');

    const calls = responses.requests.slice(asked);
    expect(calls).toHaveLength(2);
    for (const call of calls) expect(call.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    const printed = toolOutputs(calls[1]!.body).join('\n');
    expect(printed).toContain(`SERVICE_LLM_URL=${world.t.url}/api/llm`);
    expect(printed).toMatch(/^OPENAI_API_KEY=/m);
    for (const key of [ANTHROPIC_KEY, OPENAI_KEY, GEMINI_KEY, AGENT_OWN_KEY]) expect(printed).not.toContain(key);

    // 60k uncached + 40k cached + 5k out: 12 + 0.8 + 4 = 16.8 → 17 cents; then 50k + 100k + 2.5k: 10 + 2 + 2 = 14 cents.
    expect(await costEventsOf(run.id)).toEqual([
      { source: 'gateway', provider: 'OpenAI', biller: 'openai', model: 'gpt-gw', billing_type: 'metered_api', input_tokens: '60000', cached_input_tokens: '40000', output_tokens: '5000', cost_cents: '17' },
      { source: 'gateway', provider: 'OpenAI', biller: 'openai', model: 'gpt-gw', billing_type: 'metered_api', input_tokens: '50000', cached_input_tokens: '100000', output_tokens: '2500', cost_cents: '14' },
    ]);
    expect(run.resultJson.modelGateway).toEqual({ providerId: openaiProvider.id });
    expect(run.usageJson).toMatchObject({ reports: 0, costCents: 0 });
    expect(run.usageJson.toolReported.reports).toBeGreaterThan(0);
  });

  it('Gemini CLI: the provider sees the company\'s key as x-goog-api-key, the tool never holds it, its model\'s calls are gateway cost events with exact tokens and cents', async () => {
    const tool = await codingTool('gemini');
    const agent = await createAgent(world.t.api, company.id, {
      adapterType: 'gamma_local', adapterConfig: { command: tool, model: 'gemini-gw', timeoutSec: 240, graceSec: 2, env: { GEMINI_API_KEY: await ownKey(company.id) } },
    });
    const asked = gemini.requests.length;
    const run = await ended((await wakeOk(world.t.api, agent.id, { reason: 'print your environment' })).run.id);
    expect(run.status, JSON.stringify(run)).toBe('succeeded');
    const calls = gemini.requests.slice(asked);
    expect(calls.filter((call) => call.model === 'gemini-gw')).toHaveLength(2);
    for (const call of calls) expect(call.headers['x-goog-api-key']).toBe(GEMINI_KEY);
    const printed = JSON.stringify(lastFunctionResponses(calls.filter((call) => call.model === 'gemini-gw')[1]!));
    expect(printed).toContain(`GOOGLE_GEMINI_BASE_URL=${world.t.url}/api/llm/${geminiProvider.id}`);
    for (const key of [ANTHROPIC_KEY, OPENAI_KEY, GEMINI_KEY, AGENT_OWN_KEY]) expect(printed).not.toContain(key);
    // 80k uncached + 20k cached + 6k out (with thoughts): 8 + 0.2 + 2.4 = 10.6 → 11 cents; then 60k + 60k + 2k: 6 + 0.6 + 0.8 = 7.4 → 8 cents.
    const events = (await costEventsOf(run.id)).filter((event) => event.model === 'gemini-gw');
    expect(events).toEqual([
      { source: 'gateway', provider: 'Gemini', biller: 'gemini', model: 'gemini-gw', billing_type: 'metered_api', input_tokens: '80000', cached_input_tokens: '20000', output_tokens: '6000', cost_cents: '11' },
      { source: 'gateway', provider: 'Gemini', biller: 'gemini', model: 'gemini-gw', billing_type: 'metered_api', input_tokens: '60000', cached_input_tokens: '60000', output_tokens: '2000', cost_cents: '8' },
    ]);
    expect((await costEventsOf(run.id)).every((event) => event.source === 'gateway')).toBe(true);
    expect(run.resultJson.modelGateway).toEqual({ providerId: geminiProvider.id });
  });

  it('the environment test of a Claude Code agent calls through the gateway as a run of its own, metered as the agent\'s', async () => {
    const claude = await codingTool('claude');
    const agent = await createAgent(world.t.api, company.id, { adapterType: 'alpha_local', adapterConfig: { command: claude, model: 'claude-gw', env: { ANTHROPIC_API_KEY: await ownKey(company.id) } } });
    const asked = anthropic.requests.length;
    const res = await world.t.api.post(`/api/agents/${agent.id}/adapter-test`, {});
    expect(res.status, res.text).toBe(200);
    expect(res.body, JSON.stringify(res.body)).toMatchObject({ ok: true, checks: [{ name: 'version', ok: true }, { name: 'model_call', ok: true }] });
    expect(anthropic.requests.slice(asked).map((request) => request.headers['x-api-key'])).toEqual([ANTHROPIC_KEY]);
    await callsSettled(world.t);
    const events = (await world.t.sql.query(`select source, agent_id from plugin_costs.cost_events where agent_id = $1`, [agent.id])).rows;
    expect(events).toEqual([{ source: 'gateway', agent_id: agent.id }]);
  });

  it('a hard stop: the call that crosses the agent\'s budget pauses the agent and ends its run; every call that reached the provider is metered, none after the stop', async () => {
    const claude = await codingTool('claude');
    // Each call: 20k uncached + 300k cached + 2k out = 6 + 9 + 3 = 18 cents; the budget is 20. The tool would go on forever.
    const eighteen = { inputTokens: 20_000, cacheReadInputTokens: 300_000, outputTokens: 2_000 };
    script = (request) => bash(`echo step ${toolResults(request).length}`, { usage: eighteen });
    const agent = await createAgent(world.t.api, company.id, { adapterType: 'alpha_local', adapterConfig: { command: claude, model: 'claude-gw', timeoutSec: 240, graceSec: 5 } });
    const policy = await world.t.api.post(`/api/companies/${company.id}/budgets/policies`, { scopeType: 'agent', scopeId: agent.id, amount: 20, hardStopEnabled: true });
    expect(policy.status, policy.text).toBeLessThan(300);
    await eventsSettled(world.t);
    const asked = anthropic.requests.length;
    const run = await ended((await wakeOk(world.t.api, agent.id, { reason: 'work until stopped' })).run.id);
    expect(run.status, JSON.stringify(run)).not.toBe('succeeded');
    await waitFor(async () => (await world.t.api.get(`/api/agents/${agent.id}`)).body.status === 'paused', 'the agent paused by its hard stop');
    const incidents = (await world.t.sql.query(`select status, threshold_type from plugin_costs.budget_incidents where scope_id = $1`, [agent.id])).rows;
    expect(incidents).toContainEqual({ status: 'open', threshold_type: 'hard' });
    // The first call fits (18 of 20 cents). The one that crosses is cut at once when the first was already counted
    // (its remaining allowance is 2 cents), else answered and counted after; either way the stop ends the tool.
    const reached = anthropic.requests.slice(asked).filter((request) => request.path === '/v1/messages');
    const events = await costEventsOf(run.id);
    expect(reached.length).toBeGreaterThanOrEqual(2);
    expect(reached.length).toBeLessThanOrEqual(3);
    expect(events).toHaveLength(reached.length);
    expect(events.every((event) => event.source === 'gateway')).toBe(true);
    expect(events[0]).toMatchObject({ input_tokens: '20000', cached_input_tokens: '300000', output_tokens: '2000', cost_cents: '18' });
    expect(events.reduce((sum, event) => sum + Number(event.cost_cents), 0)).toBeGreaterThan(20);
    // The paused agent's next call is refused before the provider: a wake is refused, so is a call of a run of it.
    const woken = await world.t.api.post(`/api/agents/${agent.id}/wakeup`, { reason: 'again' });
    expect(woken.status).toBe(409);
    // Its environment test says why no model call can be made, and makes none.
    const tested = await world.t.api.post(`/api/agents/${agent.id}/adapter-test`, {});
    expect(tested.status, tested.text).toBe(200);
    expect(tested.body.checks).toContainEqual(expect.objectContaining({ name: 'model_call', ok: false, message: expect.stringContaining('agent_not_runnable') }));
    expect(anthropic.requests.slice(asked).filter((request) => request.path === '/v1/messages')).toHaveLength(reached.length);
  });

  it('an agent of a paused company is refused before any provider call', async () => {
    const claude = await codingTool('claude');
    const paused = await createCompany(world.t.api, { name: 'Paused Gateway Co' });
    const served = await provider(paused.id, { name: 'Anthropic', kind: 'anthropic', baseUrl: anthropic.url, apiKey: ANTHROPIC_KEY, models: [CLAUDE_PRICE], isDefault: true });
    const live = await liveRun(world, paused.id);
    const agent = await createAgent(world.t.api, paused.id, { adapterType: 'alpha_local', adapterConfig: { command: claude, model: 'claude-gw' } });
    expect((await world.t.api.patch(`/api/companies/${paused.id}`, { status: 'paused' })).status).toBe(200);
    await eventsSettled(world.t);
    const asked = anthropic.requests.length;
    const woken = await world.t.api.post(`/api/agents/${agent.id}/wakeup`, { reason: 'try anyway' });
    expect([woken.status, woken.body.code]).toEqual([409, 'company_not_active']);
    // A tool of a run that was live when the company paused, calling as Claude Code would.
    const call = await fetch(`${world.t.url}/api/llm/${served.id}/v1/messages`, {
      method: 'POST', headers: { 'x-api-key': live.token, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-gw', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect([401, 403]).toContain(call.status);
    expect((await call.json() as any).type).toBe('error');
    expect(anthropic.requests.length).toBe(asked);
  });

  it('a modelProvider the company does not have fails the run with what to fix, and never falls back to the tool\'s own credentials', async () => {
    const claude = await codingTool('claude');
    const agent = await createAgent(world.t.api, company.id, { adapterType: 'alpha_local', adapterConfig: { command: claude, model: 'claude-gw', modelProvider: 'Nowhere', env: { ANTHROPIC_API_KEY: await ownKey(company.id) } } });
    await eventsSettled(world.t);
    const asked = anthropic.requests.length;
    const woken = await world.t.api.post(`/api/agents/${agent.id}/wakeup`, { reason: 'misconfigured' });
    expect(woken.status, woken.text).toBe(202);
    const run = await ended(woken.body.run.id);
    expect(run.status).toBe('failed');
    expect(JSON.stringify(run)).toContain('model_provider_not_found');
    expect(anthropic.requests.length).toBe(asked);
  });

  it('without the model-gateway plugin the tool keeps its own credentials, and its own usage report is what is charged', async () => {
    const claude = await codingTool('claude');
    script = () => ({ text: 'On my own key.', usage: { inputTokens: 1_000, outputTokens: 100 } });
    const own = await world.t.api.post(`/api/companies/${company.id}/secrets`, { name: `DIRECT_${Math.random().toString(36).slice(2, 8)}`, value: ANTHROPIC_KEY });
    const agent = await createAgent(world.t.api, company.id, {
      adapterType: 'alpha_local',
      adapterConfig: { command: claude, model: 'claude-gw', timeoutSec: 240, graceSec: 5, env: { ANTHROPIC_BASE_URL: anthropic.url, ANTHROPIC_API_KEY: { type: 'secret_ref', secretId: own.body.id } } },
    });
    const disabled = await world.t.api.post('/api/plugins/model-gateway/disable', {});
    expect(disabled.status, disabled.text).toBe(200);
    try {
      const asked = anthropic.requests.length;
      const run = await ended((await wakeOk(world.t.api, agent.id, { reason: 'no gateway' })).run.id);
      expect(run.status, JSON.stringify(run)).toBe('succeeded');
      expect(anthropic.requests.slice(asked).map((request) => request.headers['x-api-key'])).toEqual([ANTHROPIC_KEY]);
      expect(run.resultJson.modelGateway).toBeUndefined();
      expect((await costEventsOf(run.id)).map((event) => [event.source, event.input_tokens, event.output_tokens])).toEqual([['adapter', '1000', '100']]);
    } finally {
      const enabled = await world.t.api.post('/api/plugins/model-gateway/enable', {});
      expect(enabled.status, enabled.text).toBe(200);
    }
  });
});
