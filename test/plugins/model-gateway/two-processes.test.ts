import { afterAll, beforeAll, expect, it } from 'vitest';
import { createCompany } from '../../support/fixtures.ts';
import { createApi, FIRST_PARTY_PLUGINS, startPeerKernel, type PeerKernel } from '../../support/harness.ts';
import { startScriptedChat, type ScriptedChat } from '../../support/scripted-models/openai-chat.ts';
import { addProvider, LOCAL_PROVIDERS } from './helpers.ts';
import { liveRun, startGatewayWorld, type GatewayWorld } from './world.ts';

/**
 * The calls-per-minute limit of a company holds across two Keel processes on one database: the
 * counter is a row both processes count on with one conditional upsert each.
 */
let world: GatewayWorld;
let peer: PeerKernel;
let chat: ScriptedChat;

beforeAll(async () => {
  world = await startGatewayWorld();
  peer = await startPeerKernel(world.t, LOCAL_PROVIDERS, { firstPartyDir: FIRST_PARTY_PLUGINS });
  chat = await startScriptedChat(() => ({ text: 'ok', usage: { promptTokens: 3, completionTokens: 1 } }));
});
afterAll(async () => {
  await chat?.close();
  await peer?.stop();
  await world?.stop();
});

it('calls per minute are counted together by two processes: never more than the limit in a minute, every refusal a 429', async () => {
  const company = await createCompany(world.t.api);
  const provider = await addProvider(world.t.api, company.id, { kind: 'openai', baseUrl: chat.url.replace(/\/v1$/, ''), models: [{ model: '*', inputCentsPerMTok: 1, cachedInputCentsPerMTok: 1, cacheWriteCentsPerMTok: 1, outputCentsPerMTok: 1 }] });
  expect((await world.t.api.put(`/api/companies/${company.id}/model-gateway/limits`, { callsPerMinute: 5, tokensPerMinute: null })).status).toBe(200);
  const run = await liveRun(world, company.id);
  const kernels = [world.t.url, peer.url];
  const before = chat.requests.length;
  const answers = await Promise.all(Array.from({ length: 16 }, async (_, index) => {
    const res = await fetch(`${kernels[index % 2]}/api/llm/${provider.id}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${run.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: `call ${index}` }] }),
    });
    return { status: res.status, text: await res.text(), kernel: index % 2 };
  }));
  const passed = answers.filter((answer) => answer.status === 200);
  const limited = answers.filter((answer) => answer.status === 429);
  expect(passed.length + limited.length, JSON.stringify(answers.filter((a) => a.status !== 200 && a.status !== 429))).toBe(16);
  // Both processes answered calls, and refused some.
  expect(new Set(answers.map((answer) => answer.kernel))).toEqual(new Set([0, 1]));
  expect(chat.requests.length - before).toBe(passed.length);
  const { rows } = await world.t.sql.query('select minute, calls from plugin_model_gateway.minute_counters where company_id = $1', [company.id]);
  for (const row of rows) expect(row.calls).toBeLessThanOrEqual(5);
  expect(rows.reduce((sum, row) => sum + row.calls, 0)).toBe(passed.length);
  // All in one minute, or split by a minute boundary: at most the limit per minute.
  expect(passed.length).toBeLessThanOrEqual(5 * rows.length);
  expect(passed.length).toBeGreaterThanOrEqual(5);
  expect(JSON.parse(limited[0]!.text).error).toMatchObject({ type: 'rate_limit_error', code: 'calls_per_minute_exceeded' });
  // The peer serves the same plugin data: its API reads what the first process stored.
  expect((await createApi(peer.url).get(`/api/companies/${company.id}/model-gateway/limits`)).body).toEqual({ callsPerMinute: 5, tokensPerMinute: null });
});
