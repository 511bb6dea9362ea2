import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../../support/fixtures.ts';
import { startAnthropicModel, type ScriptedAnthropic } from '../../support/scripted-models/anthropic.ts';
import { startScriptedGemini, type ScriptedGemini } from '../../support/scripted-models/gemini.ts';
import { addProvider } from './helpers.ts';
import { liveRun, startGatewayWorld, type GatewayWorld, type LiveRun } from './world.ts';

/**
 * Attacks on the gateway through the real server: what reaches the providers is counted, and
 * every attack must reach nothing (or, for header forgery, reach it with the company's key only).
 */
let world: GatewayWorld;
let anthropic: ScriptedAnthropic;
let gemini: ScriptedGemini;
let mine: { company: any; provider: any; run: LiveRun; gemini: any };
let theirs: { company: any; provider: any; run: LiveRun };

const PRICE = [{ model: '*', inputCentsPerMTok: 1, cachedInputCentsPerMTok: 1, cacheWriteCentsPerMTok: 1, outputCentsPerMTok: 1 }];

beforeAll(async () => {
  world = await startGatewayWorld();
  anthropic = await startAnthropicModel(() => ({ text: 'ok', usage: { inputTokens: 3, outputTokens: 1 } }));
  gemini = await startScriptedGemini(() => ({ text: 'ok' }));
  const a = await createCompany(world.t.api);
  const b = await createCompany(world.t.api);
  mine = {
    company: a,
    provider: await addProvider(world.t.api, a.id, { baseUrl: anthropic.url, apiKey: 'sk-company-a', models: PRICE }),
    gemini: await addProvider(world.t.api, a.id, { kind: 'gemini', baseUrl: gemini.url, apiKey: 'gemini-company-a', models: PRICE }),
    run: await liveRun(world, a.id, { runtimeConfig: { allowedModels: ['claude-allowed', 'gemini-allowed'] } }),
  };
  theirs = {
    company: b,
    provider: await addProvider(world.t.api, b.id, { baseUrl: anthropic.url, apiKey: 'sk-company-b', models: PRICE }),
    run: await liveRun(world, b.id),
  };
});
afterAll(async () => {
  await anthropic?.close();
  await gemini?.close();
  await world?.stop();
});

/** A request whose path is sent exactly as written (fetch would normalise `..`). */
function rawPost(path: string, headers: Record<string, string>, body: string): Promise<{ status: number; text: string }> {
  const url = new URL(world.t.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, method: 'POST', path, headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const messages = (model = 'claude-allowed') => JSON.stringify({ model, max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
const asAgent = (run: LiveRun) => ({ 'x-api-key': run.token, 'anthropic-version': '2023-06-01' });
const reached = () => anthropic.requests.length + gemini.requests.length;

describe('attacks on the model gateway', () => {
  it('control: the agent\'s own call reaches its provider', async () => {
    const before = reached();
    const res = await rawPost(`/api/llm/${mine.provider.id}/v1/messages`, asAgent(mine.run), messages());
    expect(res.status, res.text).toBe(200);
    expect(reached()).toBe(before + 1);
  });

  it('a run token of another company cannot use this company\'s provider (404, as an unknown provider)', async () => {
    const before = reached();
    const res = await rawPost(`/api/llm/${mine.provider.id}/v1/messages`, asAgent(theirs.run), messages());
    expect(res.status).toBe(404);
    expect(JSON.parse(res.text)).toEqual({ type: 'error', error: { type: 'not_found_error', message: expect.any(String) } });
    // And this company's token cannot name the other company's provider.
    const other = await rawPost(`/api/llm/${theirs.provider.id}/v1/messages`, asAgent(mine.run), messages());
    expect(other.status).toBe(404);
    expect(reached()).toBe(before);
  });

  it('forged provider paths (`..`, encoded separators, absolute URLs, another provider id) reach nothing', async () => {
    const before = reached();
    const forged = [
      `/api/llm/${mine.provider.id}/../${theirs.provider.id}/v1/messages`,
      `/api/llm/${mine.provider.id}/v1/../../${theirs.provider.id}/v1/messages`,
      `/api/llm/${mine.provider.id}%2F..%2F${theirs.provider.id}/v1/messages`,
      `/api/llm/..%2F${theirs.provider.id}/v1/messages`,
      `/api/llm/${mine.provider.id}/v1/messages/../../../v1/complete`,
      '/api/llm/https://evil.example/v1/messages',
      `/api/llm/${encodeURIComponent('https://evil.example')}/v1/messages`,
      `/api/llm/${encodeURIComponent('http://127.0.0.1:1/')}/v1/messages`,
      `/api/llm/${mine.provider.id}/v2/messages`,
      `/api/llm/${mine.provider.id}/v1/messages/../count_tokens`,
      `/api/llm/${mine.gemini.id}/v1beta/models/..%2F..%2Fadmin:generateContent`,
      `/api/llm/${mine.gemini.id}/v1beta/models/gemini-allowed%3AgenerateContent%3Fx=:generateContent`,
      `/api/llm/${mine.gemini.id}/v1beta/models/gemini-allowed:countTokens`,
      `/api/llm/${theirs.provider.id}/v1/messages`,
    ];
    for (const path of forged) {
      const res = await rawPost(path, { ...asAgent(mine.run), 'x-goog-api-key': mine.run.token }, messages());
      expect(res.status, `${path}: ${res.text}`).toBe(404);
    }
    expect(reached()).toBe(before);
  });

  it('a body naming a model outside allowedModels is refused; a duplicated model key is judged as the provider reads it', async () => {
    const before = reached();
    const refused = await rawPost(`/api/llm/${mine.provider.id}/v1/messages`, asAgent(mine.run), messages('claude-expensive'));
    expect(refused.status).toBe(403);
    // JSON parsers keep the last of duplicated keys (JSON.parse, Python's json, Go's encoding/json): so does the check.
    const duplicated = `{"model":"claude-allowed","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"model":"claude-expensive"}`;
    expect((await rawPost(`/api/llm/${mine.provider.id}/v1/messages`, asAgent(mine.run), duplicated)).status).toBe(403);
    const geminiRefused = await rawPost(`/api/llm/${mine.gemini.id}/v1beta/models/gemini-pro:generateContent`, { 'x-goog-api-key': mine.run.token }, '{"contents":[]}');
    expect(geminiRefused.status).toBe(403);
    expect(reached()).toBe(before);
    const lastWins = `{"model":"claude-expensive","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"model":"claude-allowed"}`;
    expect((await rawPost(`/api/llm/${mine.provider.id}/v1/messages`, asAgent(mine.run), lastWins)).status).toBe(200);
    expect(anthropic.requests.at(-1)!.body!.model).toBe('claude-allowed');
  });

  it('a request that tries to set the provider\'s auth headers: the provider sees the company\'s key only', async () => {
    const before = anthropic.requests.length;
    const res = await rawPost(`/api/llm/${mine.provider.id}/v1/messages`, {
      authorization: `Bearer ${mine.run.token}`, 'x-api-key': 'sk-attacker-key', 'x-goog-api-key': 'attacker-google-key', cookie: 'session=attacker',
      'anthropic-version': '2023-06-01', 'x-service-run-id': mine.run.runId,
    }, messages());
    // The bearer token is the caller's credential; the forged x-api-key never reaches the provider.
    expect(res.status, res.text).toBe(200);
    const seen = anthropic.requests.slice(before);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.headers['x-api-key']).toBe('sk-company-a');
    for (const name of ['authorization', 'x-goog-api-key', 'cookie', 'x-service-run-id']) expect(seen[0]!.headers[name], name).toBeUndefined();
    expect(JSON.stringify(seen[0]!.headers)).not.toContain(mine.run.token);
    // Gemini: a key in the query never travels either (only alt=sse is passed on).
    const geminiBefore = gemini.requests.length;
    const viaQuery = await rawPost(`/api/llm/${mine.gemini.id}/v1beta/models/gemini-allowed:streamGenerateContent?alt=sse&key=attacker-google-key`,
      { 'x-goog-api-key': mine.run.token, 'x-api-key': 'sk-attacker-key' }, '{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}');
    expect(viaQuery.status, viaQuery.text).toBe(200);
    const geminiSeen = gemini.requests.slice(geminiBefore);
    expect(geminiSeen[0]!.query).toEqual({ alt: 'sse' });
    expect(geminiSeen[0]!.headers['x-goog-api-key']).toBe('gemini-company-a');
    expect(geminiSeen[0]!.headers['x-api-key']).toBeUndefined();
  });

  it('naming another company\'s run in X-Service-Run-Id is refused and reaches nothing', async () => {
    const before = reached();
    const res = await rawPost(`/api/llm/${mine.provider.id}/v1/messages`, { ...asAgent(mine.run), 'x-service-run-id': theirs.run.runId }, messages());
    expect([401, 403]).toContain(res.status);
    expect(reached()).toBe(before);
  });

  it('the company\'s key never reaches the agent: not in the answer\'s headers or body', async () => {
    const res = await fetch(`${world.t.url}/api/llm/${mine.provider.id}/v1/messages`, { method: 'POST', headers: { ...asAgent(mine.run), 'content-type': 'application/json' }, body: messages() });
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(text).not.toContain('sk-company-a');
    expect(JSON.stringify([...res.headers])).not.toContain('sk-company-a');
  });
});
