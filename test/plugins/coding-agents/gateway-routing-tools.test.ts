import { cp, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codingTool } from '../../support/coding-tools.ts';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { installAndEnable } from '../../support/plugins.ts';
import { bash, conversationText, startAnthropicModel, toolResults, type ScriptedAnthropic } from '../../support/scripted-models/anthropic.ts';
import { answersToolCall, startScriptedResponsesServer, toolOutputs, type ScriptedResponsesServer } from '../../support/scripted-models/openai-responses.ts';
import { lastFunctionResponses, startScriptedGemini, type ScriptedGemini } from '../../support/scripted-models/gemini.ts';
import { runWhen, wakeOk } from '../runtime/helpers.ts';
import { startGatewayFront, type GatewayFront } from './gateway-front.ts';

/**
 * The real tools routed to a model provider of the company (coding-agents' gateway.ts), checked
 * where the calls end: a stand-in of the model-gateway plugin answers `route-for` with a fixed
 * provider per kind, and the address runs are told to call back (publicBaseUrl) is a front that
 * records each `/api/llm/<providerId>/...` call and passes it to the scripted model of that
 * provider. The tool must send the run token, in the header its provider's clients use, and
 * hold no provider key: the scripted model has it print its environment with its shell tool.
 */
const PROVIDERS = {
  anthropic: '0a000000-0000-4000-8000-00000000000a',
  openai: '0b000000-0000-4000-8000-00000000000b',
  gemini: '0c000000-0000-4000-8000-00000000000c',
  alt: '0d000000-0000-4000-8000-00000000000d',
};
const STAND_IN = fileURLToPath(new URL('./fixtures/route-for', import.meta.url));
const PROVIDER_KEY = 'sk-provider-key-the-tool-must-never-hold';

let t: TestKernel;
let company: any;
let front: GatewayFront;
let anthropic: ScriptedAnthropic;
let responses: ScriptedResponsesServer;
let gemini: ScriptedGemini;

beforeAll(async () => {
  front = await startGatewayFront();
  anthropic = await startAnthropicModel((request) => (conversationText(request).includes('single word: ready') ? { text: 'ready' } : toolResults(request).length === 0
    ? bash('env', { usage: { inputTokens: 50, outputTokens: 5 } })
    : { text: 'Printed the environment.', usage: { inputTokens: 60, outputTokens: 6, cacheReadInputTokens: 40 } }));
  responses = await startScriptedResponsesServer((request) => (answersToolCall(request)
    ? { text: 'Printed the environment.', usage: { inputTokens: 300, cachedInputTokens: 100, outputTokens: 7 } }
    : { shell: 'env', usage: { inputTokens: 200, outputTokens: 8 } }));
  gemini = await startScriptedGemini((request) => (lastFunctionResponses(request).length > 0
    ? { text: 'Printed the environment.', usage: { promptTokenCount: 120, candidatesTokenCount: 4 } }
    : { functionCall: { name: 'run_shell_command', args: { command: 'env' } }, usage: { promptTokenCount: 100, candidatesTokenCount: 9 } }));
  front.providers.set(PROVIDERS.anthropic, anthropic.url);
  front.providers.set(PROVIDERS.alt, anthropic.url);
  front.providers.set(PROVIDERS.openai, new URL(responses.baseUrl).origin);
  front.providers.set(PROVIDERS.gemini, gemini.url);
  // The first-party plugins but the model gateway, whose route-for the stand-in answers.
  const firstParty = await mkdtemp(join(tmpdir(), 'keel-first-party-'));
  await cp(FIRST_PARTY_PLUGINS, firstParty, { recursive: true, filter: (source) => !source.startsWith(join(FIRST_PARTY_PLUGINS, 'model-gateway')) });
  t = await startTestKernel({ auth: { publicBaseUrl: front.url } }, { firstPartyDir: firstParty });
  front.keel = t.url;
  await installAndEnable(t, STAND_IN);
  company = await createCompany(t.api, { name: 'Routed Tools Co' });
}, 120_000);
afterAll(async () => {
  await t?.stop();
  await Promise.all([front?.close(), anthropic?.close(), responses?.close(), gemini?.close()]);
});

async function providerKey(): Promise<Record<string, unknown>> {
  const secret = await t.api.post(`/api/companies/${company.id}/secrets`, { name: `PROVIDER_${Math.random().toString(36).slice(2, 8)}`, value: PROVIDER_KEY });
  expect(secret.status, secret.text).toBe(201);
  return { type: 'secret_ref', secretId: secret.body.id };
}

/** The claims of a run token (an agent JWT): whose run it is. */
const claims = (token: unknown) => JSON.parse(Buffer.from(String(token).split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
const callsTo = (providerId: string, since: number) => front.calls.slice(since).filter((call) => call.providerId === providerId);
const costEventsOf = async (runId: string) => (await t.sql.query('select * from plugin_costs.cost_events where heartbeat_run_id = $1', [runId])).rows;

async function ranOnce(agentId: string) {
  const run = await runWhen(t, (await wakeOk(t.api, agentId, { reason: 'print your environment' })).run.id, undefined, 180_000);
  const log = (await t.api.get(`/api/heartbeat-runs/${run.id}/log`)).body.content;
  expect(run.status, `${JSON.stringify(run)}\n${log}`).toBe('succeeded');
  return run;
}

/** What every routed run shows: the tool's usage kept beside the run and not charged, the provider named in its result. */
async function expectKeptNotCharged(run: any, providerId: string) {
  expect(run.resultJson.modelGateway).toEqual({ providerId });
  expect(run.usageJson.toolReported.reports).toBeGreaterThan(0);
  expect(run.usageJson).toMatchObject({ reports: 0, costCents: 0 });
  expect(await costEventsOf(run.id)).toEqual([]);
}

describe('the real tools through the model gateway\'s address', { timeout: 300_000 }, () => {
  it('Claude Code calls the anthropic provider with the run token as x-api-key and never holds the provider key', async () => {
    const claude = await codingTool('claude');
    const agent = await createAgent(t.api, company.id, {
      adapterType: 'alpha_local',
      adapterConfig: { command: claude, timeoutSec: 240, graceSec: 5, env: { ANTHROPIC_BASE_URL: anthropic.url, ANTHROPIC_API_KEY: await providerKey() } },
    });
    const since = front.calls.length;
    const asked = anthropic.messages().length;
    const run = await ranOnce(agent.id);
    const calls = callsTo(PROVIDERS.anthropic, since).filter((call) => call.path === '/v1/messages');
    expect(calls.length).toBeGreaterThanOrEqual(2);
    for (const call of calls) {
      expect(claims(call.headers['x-api-key'])).toMatchObject({ run_id: run.id });
      expect(call.headers.authorization).toBeUndefined();
    }
    // Nothing went to the configured base URL directly: every model call came through the front.
    expect(anthropic.requests.filter((request) => request.path === '/v1/messages').length - asked).toBe(calls.length);
    const printed = toolResults(anthropic.messages().at(-1)!).map((result) => result.text).join('\n');
    expect(printed).toContain(`ANTHROPIC_BASE_URL=${front.url}/api/llm/${PROVIDERS.anthropic}`);
    expect(printed).toContain(`SERVICE_LLM_URL=${front.url}/api/llm`);
    expect(printed).not.toContain(PROVIDER_KEY);
    await expectKeptNotCharged(run, PROVIDERS.anthropic);
    expect(run.usageJson.toolReported).toMatchObject({ inputTokens: 110, cachedInputTokens: 40, outputTokens: 11 });
  });

  it('Claude Code with modelProvider names another provider, or "none" for its own key', async () => {
    const claude = await codingTool('claude');
    const env = { ANTHROPIC_BASE_URL: anthropic.url, ANTHROPIC_API_KEY: await providerKey() };
    const alt = await createAgent(t.api, company.id, { adapterType: 'alpha_local', adapterConfig: { command: claude, timeoutSec: 240, graceSec: 5, env, modelProvider: 'Alt' } });
    let since = front.calls.length;
    const routed = await ranOnce(alt.id);
    expect(callsTo(PROVIDERS.alt, since).length).toBeGreaterThanOrEqual(2);
    expect(routed.resultJson.modelGateway).toEqual({ providerId: PROVIDERS.alt });

    const own = await createAgent(t.api, company.id, { adapterType: 'alpha_local', adapterConfig: { command: claude, timeoutSec: 240, graceSec: 5, env, modelProvider: 'none' } });
    since = front.calls.length;
    const asked = anthropic.requests.length;
    const direct = await ranOnce(own.id);
    expect(front.calls.slice(since).filter((call) => call.path.startsWith('/v1/'))).toEqual([]);
    const keys = anthropic.requests.slice(asked).filter((request) => request.path === '/v1/messages').map((request) => request.headers['x-api-key']);
    expect(new Set(keys)).toEqual(new Set([PROVIDER_KEY]));
    // Its own credentials: its usage is charged as before.
    expect(direct.resultJson.modelGateway).toBeUndefined();
    expect((await costEventsOf(direct.id)).length).toBe(1);
  });

  it('the environment test of a Claude Code agent goes through the provider too, with the token of a run of its own', async () => {
    const claude = await codingTool('claude');
    const agent = await createAgent(t.api, company.id, { adapterType: 'alpha_local', adapterConfig: { command: claude, env: { ANTHROPIC_API_KEY: await providerKey() } } });
    const since = front.calls.length;
    const res = await t.api.post(`/api/agents/${agent.id}/adapter-test`, {});
    expect(res.status, res.text).toBe(200);
    expect(res.body, JSON.stringify(res.body)).toMatchObject({ ok: true, checks: [{ name: 'version', ok: true }, { name: 'model_call', ok: true }] });
    const [call] = callsTo(PROVIDERS.anthropic, since).filter((entry) => entry.path === '/v1/messages');
    const probeRun = claims(call!.headers['x-api-key']).run_id;
    const runs = await t.sql.query(`select status, invocation_source from runs where id = $1 and agent_id = $2`, [probeRun, agent.id]);
    expect(runs.rows).toEqual([{ status: 'succeeded', invocation_source: 'adapter_test' }]);
  });

  it('Codex calls the openai provider\'s Responses API with the run token as its bearer key and never holds the provider key', async () => {
    const codex = await codingTool('codex');
    const agent = await createAgent(t.api, company.id, {
      adapterType: 'beta_local',
      adapterConfig: { command: codex, model: 'scripted-model', timeoutSec: 240, graceSec: 2, env: { OPENAI_BASE_URL: responses.baseUrl, OPENAI_API_KEY: await providerKey(), CODEX_API_KEY: await providerKey() } },
    });
    const since = front.calls.length;
    const run = await ranOnce(agent.id);
    const calls = callsTo(PROVIDERS.openai, since).filter((call) => call.path === '/v1/responses');
    expect(calls.length).toBeGreaterThanOrEqual(2);
    for (const call of calls) expect(claims(String(call.headers.authorization).replace(/^Bearer /, ''))).toMatchObject({ run_id: run.id });
    const printed = toolOutputs(responses.requests.at(-1)!.body).join('\n');
    expect(printed).toContain(`SERVICE_LLM_URL=${front.url}/api/llm`);
    expect(printed).not.toContain(PROVIDER_KEY);
    expect(printed).not.toMatch(/^CODEX_API_KEY=/m);
    await expectKeptNotCharged(run, PROVIDERS.openai);
  });

  it('OpenCode with an anthropic/… model calls the anthropic provider with the run token as x-api-key and never holds the provider key', async () => {
    const tool = await codingTool('opencode');
    const agent = await createAgent(t.api, company.id, {
      adapterType: 'delta_local',
      adapterConfig: { command: tool, model: 'anthropic/claude-gw', timeoutSec: 240, graceSec: 2, env: { ANTHROPIC_API_KEY: await providerKey(), OPENCODE_DISABLE_MODELS_FETCH: '1' } },
    });
    const since = front.calls.length;
    const run = await ranOnce(agent.id);
    const calls = callsTo(PROVIDERS.anthropic, since).filter((call) => call.path === '/v1/messages');
    expect(calls.length).toBeGreaterThanOrEqual(2);
    for (const call of calls) expect(claims(call.headers['x-api-key'])).toMatchObject({ run_id: run.id });
    const printed = toolResults(anthropic.messages().at(-1)!).map((result) => result.text).join('\n');
    expect(printed).toContain(`SERVICE_LLM_URL=${front.url}/api/llm`);
    expect(printed).not.toContain(PROVIDER_KEY);
    await expectKeptNotCharged(run, PROVIDERS.anthropic);
  });

  it('Gemini CLI calls the gemini provider with the run token as x-goog-api-key and never holds the provider key', async () => {
    const tool = await codingTool('gemini');
    const agent = await createAgent(t.api, company.id, {
      adapterType: 'gamma_local',
      adapterConfig: { command: tool, model: 'gemini-2.5-flash', timeoutSec: 240, graceSec: 2, env: { GOOGLE_GEMINI_BASE_URL: gemini.url, GEMINI_API_KEY: await providerKey() } },
    });
    const since = front.calls.length;
    const run = await ranOnce(agent.id);
    const calls = callsTo(PROVIDERS.gemini, since).filter((call) => call.path.startsWith('/v1beta/models/'));
    expect(calls.length).toBeGreaterThanOrEqual(2);
    for (const call of calls) {
      expect(claims(call.headers['x-goog-api-key'])).toMatchObject({ run_id: run.id });
    }
    const printed = JSON.stringify(lastFunctionResponses(gemini.generateCalls().at(-1)!));
    expect(printed).toContain(`GOOGLE_GEMINI_BASE_URL=${front.url}/api/llm/${PROVIDERS.gemini}`);
    expect(printed).not.toContain(PROVIDER_KEY);
    await expectKeptNotCharged(run, PROVIDERS.gemini);
  });
});
