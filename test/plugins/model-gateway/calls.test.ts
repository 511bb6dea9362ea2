import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentKey, createCompany } from '../../support/fixtures.ts';
import { startAnthropicModel, type ScriptedAnthropic } from '../../support/scripted-models/anthropic.ts';
import { startScriptedChat, type ScriptedChat } from '../../support/scripted-models/openai-chat.ts';
import { startScriptedResponsesServer, type ScriptedResponsesServer } from '../../support/scripted-models/openai-responses.ts';
import { startScriptedGemini, type ScriptedGemini } from '../../support/scripted-models/gemini.ts';
import { addProvider } from './helpers.ts';
import { callsSettled, costRows, liveRun, startGatewayWorld, type GatewayWorld } from './world.ts';

/**
 * Calls through the gateway end to end: a real kernel forwards an agent's call (its run token as
 * the API key) to a scripted provider with the company's key, streams the answer back, meters the
 * provider's own usage and the gateway charges it to costs as one cost event of source gateway.
 */
let world: GatewayWorld;
let anthropic: ScriptedAnthropic;
let responses: ScriptedResponsesServer;
let chat: ScriptedChat;
let gemini: ScriptedGemini;

beforeAll(async () => {
  world = await startGatewayWorld();
  anthropic = await startAnthropicModel(() => ({ text: 'hello from anthropic', usage: { inputTokens: 100_000, outputTokens: 20_000, cacheReadInputTokens: 50_000, cacheCreationInputTokens: 10_000 } }), { apiKey: 'sk-ant-company-key' });
  responses = await startScriptedResponsesServer(() => ({ text: 'hello from responses', usage: { inputTokens: 200_000, cachedInputTokens: 50_000, outputTokens: 30_000 } }));
  chat = await startScriptedChat(() => ({ text: 'hello from chat', usage: { promptTokens: 10_000, cachedTokens: 2_000, completionTokens: 1_000 } }));
  gemini = await startScriptedGemini(() => ({ text: ['hello ', 'from gemini'], usage: { promptTokenCount: 40_000, cachedContentTokenCount: 10_000, candidatesTokenCount: 5_000, thoughtsTokenCount: 1_000 } }));
});
afterAll(async () => {
  for (const server of [anthropic, responses, chat, gemini]) await server?.close();
  await world?.stop();
});

const origin = (url: string) => url.replace(/\/v1$/, '');
const header = (value: string | string[] | undefined) => (Array.isArray(value) ? value.join(',') : value);

describe('calls through the gateway, metered from the provider\'s own answer', () => {
  it('anthropic: streams the provider\'s events, sends the company\'s key, records one cost event with exact tokens and cents', async () => {
    const company = await createCompany(world.t.api);
    const provider = await addProvider(world.t.api, company.id, {
      name: 'Anthropic', baseUrl: anthropic.url, apiKey: 'sk-ant-company-key',
      models: [{ model: 'claude-*', inputCentsPerMTok: 300, cachedInputCentsPerMTok: 30, cacheWriteCentsPerMTok: 375, outputCentsPerMTok: 1500 }],
    });
    const run = await liveRun(world, company.id);
    const before = anthropic.requests.length;
    const res = await fetch(`${world.t.url}/api/llm/${provider.id}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': run.token, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-test-1', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    expect(text).toContain('event: message_start');
    expect(text).toContain('text_delta');
    expect(text).toContain('event: message_stop');
    const seen = anthropic.requests.slice(before);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.path).toBe('/v1/messages');
    expect(header(seen[0]!.headers['x-api-key'])).toBe('sk-ant-company-key');
    expect(seen[0]!.headers.authorization).toBeUndefined();
    expect(JSON.stringify(seen[0]!.headers)).not.toContain(run.token);
    await callsSettled(world.t);
    const events = await costRows(world.t, company.id);
    const deliveries = await world.t.sql.query("select d.state, d.last_error from keel_events.deliveries d where d.subscriber = 'model-gateway'");
    const logs = await world.t.api.get('/api/plugins/model-gateway/logs');
    expect(events, JSON.stringify({ deliveries: deliveries.rows, logs: logs.body })).toHaveLength(1);
    // 100k uncached input at 300 + 10k cache writes at 375 + 50k cached at 30 + 20k output at 1500 per MTok = 65.25 cents, charged 66.
    expect(events[0]).toMatchObject({
      source: 'gateway', agent_id: run.agent.id, heartbeat_run_id: run.runId, provider: 'Anthropic', biller: 'anthropic', model: 'claude-test-1',
      billing_type: 'metered_api', input_tokens: '110000', cached_input_tokens: '50000', output_tokens: '20000', cost_cents: '66',
    });
  });

  it('openai responses: the bearer run token is replaced by the company\'s key; uncached and cached input apart', async () => {
    const company = await createCompany(world.t.api);
    const provider = await addProvider(world.t.api, company.id, {
      name: 'OpenAI', kind: 'openai', baseUrl: origin(responses.baseUrl), apiKey: 'sk-openai-company-key',
      models: [{ model: 'gpt-test', inputCentsPerMTok: 250, cachedInputCentsPerMTok: 25, cacheWriteCentsPerMTok: 0, outputCentsPerMTok: 1000 }],
    });
    const run = await liveRun(world, company.id);
    const before = responses.requests.length;
    const res = await fetch(`${world.t.url}/api/llm/${provider.id}/v1/responses`, {
      method: 'POST', headers: { authorization: `Bearer ${run.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test', stream: true, input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] }] }),
    });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(text).toContain('response.completed');
    const seen = responses.requests.slice(before);
    expect(seen).toHaveLength(1);
    expect(header(seen[0]!.headers.authorization)).toBe('Bearer sk-openai-company-key');
    await callsSettled(world.t);
    const events = await costRows(world.t, company.id);
    // 150k uncached at 250 + 50k cached at 25 + 30k output at 1000 per MTok = 68.75 cents, charged 69.
    expect(events).toEqual([expect.objectContaining({
      source: 'gateway', provider: 'OpenAI', biller: 'openai', model: 'gpt-test', input_tokens: '150000', cached_input_tokens: '50000', output_tokens: '30000', cost_cents: '69',
    })]);
  });

  it('openai chat: a stream is asked for its usage (stream_options.include_usage) and metered', async () => {
    const company = await createCompany(world.t.api);
    const provider = await addProvider(world.t.api, company.id, {
      name: 'Chat', kind: 'openai', baseUrl: origin(chat.url), apiKey: 'sk-chat-company-key',
      models: [{ model: 'chat-*', inputCentsPerMTok: 100, cachedInputCentsPerMTok: 10, cacheWriteCentsPerMTok: 0, outputCentsPerMTok: 400 }],
    });
    const run = await liveRun(world, company.id);
    const before = chat.requests.length;
    const res = await fetch(`${world.t.url}/api/llm/${provider.id}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${run.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat-small', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(text).toContain('chat.completion.chunk');
    const seen = chat.requests.slice(before);
    expect(seen[0]!.body).toMatchObject({ model: 'chat-small', stream: true, stream_options: { include_usage: true } });
    expect(header(seen[0]!.headers.authorization)).toBe('Bearer sk-chat-company-key');
    await callsSettled(world.t);
    // 8k uncached at 100 + 2k cached at 10 + 1k output at 400 per MTok = 1.22 cents, charged 2.
    expect(await costRows(world.t, company.id)).toEqual([expect.objectContaining({
      source: 'gateway', provider: 'Chat', biller: 'openai', model: 'chat-small', input_tokens: '8000', cached_input_tokens: '2000', output_tokens: '1000', cost_cents: '2',
    })]);
  });

  it('gemini: streamGenerateContent with ?alt=sse and x-goog-api-key; thoughts count as output', async () => {
    const company = await createCompany(world.t.api);
    const provider = await addProvider(world.t.api, company.id, {
      name: 'Gemini', kind: 'gemini', baseUrl: gemini.url, apiKey: 'gemini-company-key',
      models: [{ model: 'gemini-test', inputCentsPerMTok: 125, cachedInputCentsPerMTok: 31.25, cacheWriteCentsPerMTok: 0, outputCentsPerMTok: 1000 }],
    });
    const run = await liveRun(world, company.id);
    const before = gemini.requests.length;
    const res = await fetch(`${world.t.url}/api/llm/${provider.id}/v1beta/models/gemini-test:streamGenerateContent?alt=sse`, {
      method: 'POST', headers: { 'x-goog-api-key': run.token, 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
    });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(text).toContain('gemini');
    const seen = gemini.requests.slice(before);
    expect(seen).toHaveLength(1);
    expect(seen[0]!).toMatchObject({ path: '/v1beta/models/gemini-test:streamGenerateContent', query: { alt: 'sse' } });
    expect(header(seen[0]!.headers['x-goog-api-key'])).toBe('gemini-company-key');
    await callsSettled(world.t);
    // 30k uncached at 125 + 10k cached at 31.25 + 6k output at 1000 per MTok = 10.0625 cents, charged 11.
    expect(await costRows(world.t, company.id)).toEqual([expect.objectContaining({
      source: 'gateway', provider: 'Gemini', biller: 'gemini', model: 'gemini-test', input_tokens: '30000', cached_input_tokens: '10000', output_tokens: '6000', cost_cents: '11',
    })]);
  });

  it('a retried proxy.finished delivery never counts twice (cost event and token counter)', async () => {
    const company = await createCompany(world.t.api);
    const provider = await addProvider(world.t.api, company.id, {
      baseUrl: anthropic.url, apiKey: 'sk-ant-company-key',
      models: [{ model: 'claude-*', inputCentsPerMTok: 300, cachedInputCentsPerMTok: 30, cacheWriteCentsPerMTok: 375, outputCentsPerMTok: 1500 }],
    });
    await world.t.api.put(`/api/companies/${company.id}/model-gateway/limits`, { callsPerMinute: null, tokensPerMinute: 100_000_000 });
    const run = await liveRun(world, company.id);
    const res = await fetch(`${world.t.url}/api/llm/${provider.id}/v1/messages`, {
      method: 'POST', headers: { 'x-api-key': run.token, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-test-1', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status, await res.text()).toBe(200);
    await callsSettled(world.t);
    const tokens = async () => (await world.t.sql.query('select coalesce(sum(tokens), 0)::int as n from plugin_model_gateway.minute_counters where company_id = $1', [company.id])).rows[0].n;
    expect(await tokens()).toBe(180_000);
    // The delivery is handed out again, as after a process that handled it died before its acknowledgement.
    const { rows } = await world.t.sql.query(
      `update keel_events.deliveries d set state = 'dead' from keel_events.outbox o
        where o.seq = d.event_seq and o.name = 'proxy.finished' and o.company_id = $1 and d.subscriber = 'model-gateway' returning d.event_id::text as id`, [company.id]);
    expect(rows).toHaveLength(1);
    const retried = await world.t.api.post(`/api/plugins/model-gateway/events/dead-letters/${rows[0].id}/retry`, {});
    expect(retried.status, retried.text).toBe(200);
    await callsSettled(world.t);
    const { rows: attempts } = await world.t.sql.query('select state, attempts from keel_events.deliveries where event_id = $1 and subscriber = $2', [rows[0].id, 'model-gateway']);
    expect(attempts).toEqual([{ state: 'delivered', attempts: 1 }]);
    expect(await costRows(world.t, company.id)).toHaveLength(1);
    expect(await tokens()).toBe(180_000);
  });

  it('attributes the cost event to the run\'s issue and project, and writes no activity entry per call', async () => {
    const company = await createCompany(world.t.api);
    const provider = await addProvider(world.t.api, company.id, { baseUrl: anthropic.url, apiKey: 'sk-ant-company-key', models: [{ model: '*', inputCentsPerMTok: 1, cachedInputCentsPerMTok: 1, cacheWriteCentsPerMTok: 1, outputCentsPerMTok: 1 }] });
    const project = await world.t.api.post(`/api/companies/${company.id}/projects`, { name: 'Gateway project' });
    expect(project.status, project.text).toBe(201);
    const issue = await world.t.api.post(`/api/companies/${company.id}/issues`, { title: 'Work through the gateway', projectId: project.body.id });
    expect(issue.status, issue.text).toBe(201);
    const run = await liveRun(world, company.id, {}, { payload: { issueId: issue.body.id } });
    const activityBefore = (await world.t.sql.query("select count(*)::int as n from activity_log where company_id = $1 and action like 'plugin.model-gateway.%'", [company.id])).rows[0].n;
    const res = await fetch(`${world.t.url}/api/llm/${provider.id}/v1/messages`, {
      method: 'POST', headers: { 'x-api-key': run.token, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-test-1', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status, await res.text()).toBe(200);
    await callsSettled(world.t);
    expect(await costRows(world.t, company.id)).toEqual([expect.objectContaining({ heartbeat_run_id: run.runId, issue_id: issue.body.id, project_id: project.body.id, source: 'gateway' })]);
    const activityAfter = (await world.t.sql.query("select count(*)::int as n from activity_log where company_id = $1 and action like 'plugin.model-gateway.%'", [company.id])).rows[0].n;
    expect(activityAfter).toBe(activityBefore);
  });

  it('cuts a stream that crosses the budget left (the agent\'s hard stop), meters what it delivered and pauses the agent', async () => {
    const company = await createCompany(world.t.api);
    // 100k input tokens at 1,000 cents per MTok: 100 cents, over the 40 the agent has left.
    const provider = await addProvider(world.t.api, company.id, { baseUrl: anthropic.url, apiKey: 'sk-ant-company-key', models: [{ model: '*', inputCentsPerMTok: 1000, cachedInputCentsPerMTok: 0, cacheWriteCentsPerMTok: 0, outputCentsPerMTok: 0 }] });
    const run = await liveRun(world, company.id);
    const policy = await world.t.api.post(`/api/companies/${company.id}/budgets/policies`, { scopeType: 'agent', scopeId: run.agent.id, amount: 40, hardStopEnabled: true });
    const agentKey = await createAgentKey(world.t.api, run.agent.id);
    expect(policy.status, policy.text).toBeLessThan(300);
    const res = await fetch(`${world.t.url}/api/llm/${provider.id}/v1/messages`, {
      method: 'POST', headers: { 'x-api-key': run.token, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-test-1', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(text).toContain('event: error');
    expect(text).toContain('permission_error');
    expect(text).not.toContain('event: message_stop');
    // The cut answer ends only once the call is charged: the agent's next call, sent the moment it
    // ended, meets the hard stop (403) and reaches no provider. (It is sent with the agent's key: the
    // stop also cancels the agent's runs, after which the run token is refused as ended, 401.)
    const reachedBefore = anthropic.requests.length;
    const next = await fetch(`${world.t.url}/api/llm/${provider.id}/v1/messages`, {
      method: 'POST', headers: { 'x-api-key': agentKey, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-test-1', max_tokens: 100, messages: [{ role: 'user', content: 'again' }] }),
    });
    expect([next.status, ((await next.json()) as any).error?.type]).toEqual([403, 'permission_error']);
    expect(anthropic.requests.length).toBe(reachedBefore);
    await callsSettled(world.t);
    const { rows } = await world.t.sql.query("select status from proxied_calls where company_id = $1", [company.id]);
    expect(rows).toEqual([{ status: 'cut' }]);
    const events = await costRows(world.t, company.id);
    expect(events).toHaveLength(1);
    expect(Number(events[0].cost_cents)).toBeGreaterThan(40);
    expect((await world.t.api.get(`/api/agents/${run.agent.id}`)).body.status).toBe('paused');
  });

  it('anthropic count_tokens: forwarded with the company\'s key, not metered, priced or charged', async () => {
    const company = await createCompany(world.t.api);
    const provider = await addProvider(world.t.api, company.id, { baseUrl: anthropic.url, apiKey: 'sk-ant-company-key', models: [] });
    const run = await liveRun(world, company.id);
    const before = anthropic.requests.length;
    const res = await fetch(`${world.t.url}/api/llm/${provider.id}/v1/messages/count_tokens`, {
      method: 'POST', headers: { 'x-api-key': run.token, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-unpriced', messages: [{ role: 'user', content: 'count me' }] }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ input_tokens: expect.any(Number) });
    expect(anthropic.requests.slice(before).map((r) => [r.path, r.headers['x-api-key']])).toEqual([['/v1/messages/count_tokens', 'sk-ant-company-key']]);
    await callsSettled(world.t);
    expect(await costRows(world.t, company.id)).toEqual([]);
  });
});
