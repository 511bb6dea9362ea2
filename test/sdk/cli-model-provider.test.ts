import { createServer, type IncomingMessage, type Server } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../support/fixtures.ts';
import type { TestKernel } from '../support/harness.ts';
import { callsSettled, endRun, liveRun, startGatewayWorld, type GatewayWorld } from '../plugins/model-gateway/world.ts';
import { runCli } from './cli-support.ts';

/**
 * `keel model-provider` run as the real binary against a running kernel with the first-party
 * plugins (model-gateway among them): the key from stdin, a file or a secret reference (never a
 * flag), the price table from repeated --price, tables and --json, the API's refusals, delete's
 * confirmation, the provider test against a scripted provider in this process, and the limits.
 */
let world: GatewayWorld;
let t: TestKernel;
let home: string;
let companyId: string;
let provider: Server;
let providerUrl: string;
const seen: Array<{ path: string; key: string | undefined }> = [];
let answerStatus = 200;

const keel = (args: string[], options: { input?: string } = {}) =>
  runCli([...args, '--data-dir', join(home, 'keel'), '--api-base', t.url], { input: options.input, env: { HOME: home } });
const json = (result: { code: number | null; stdout: string; stderr: string }) => {
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout);
};
const providers = async () => (await t.api.get(`/api/companies/${companyId}/model-providers`)).body as any[];
const secretIdOf = (p: any): string | undefined => p.apiKeySecretId ?? p.apiKey?.secretId;

/** A scripted Anthropic: answers every call with a one-token message, recording the key it was sent. */
function scriptedProvider(): Promise<Server> {
  const server = createServer((req: IncomingMessage, res) => {
    req.resume();
    req.on('end', () => {
      seen.push({ path: req.url ?? '', key: req.headers['x-api-key'] as string | undefined });
      res.writeHead(answerStatus, { 'content-type': 'application/json' });
      res.end(answerStatus === 200
        ? JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-test', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 3, output_tokens: 1 } })
        : JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } }));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

beforeAll(async () => {
  provider = await scriptedProvider();
  providerUrl = `http://127.0.0.1:${(provider.address() as { port: number }).port}`;
  // Providers on 127.0.0.1 allowed (llm.privateNetworkHosts), and agents whose live run leaves its token.
  world = await startGatewayWorld();
  t = world.t;
  home = await mkdtemp(join(tmpdir(), 'keel-cli-mp-'));
  companyId = (await createCompany(t.api, { name: 'Gateway Works' })).id;
});
afterAll(async () => {
  await world?.stop();
  await new Promise((resolve) => provider?.close(resolve));
  if (home) await rm(home, { recursive: true, force: true });
});

describe('keel model-provider', { timeout: 180_000 }, () => {
  const key = 'sk-ant-from-stdin-7f3a';
  let main: any;

  it('creates a provider with the key from stdin and prices from --price, never printing the key', async () => {
    const created = await keel(['model-provider', 'create', '-C', companyId, '--name', 'claude', '--kind', 'anthropic', '--base-url', providerUrl,
      '--price', 'claude-sonnet-4*=300,30,375,1500', '--price', 'claude-haiku-4=80,8,100,400.5', '--default', '--api-key-stdin', '--json'], { input: `${key}\n` });
    main = json(created);
    expect(main).toMatchObject({
      name: 'claude', kind: 'anthropic', baseUrl: providerUrl, isDefault: true, companyId,
      models: [
        { model: 'claude-sonnet-4*', inputCentsPerMTok: 300, cachedInputCentsPerMTok: 30, cacheWriteCentsPerMTok: 375, outputCentsPerMTok: 1500 },
        { model: 'claude-haiku-4', inputCentsPerMTok: 80, cachedInputCentsPerMTok: 8, cacheWriteCentsPerMTok: 100, outputCentsPerMTok: 400.5 },
      ],
    });
    expect(secretIdOf(main)).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.stdout + created.stderr).not.toContain(key);
    // Stored in the vault as a secret of the company; the provider row holds only the reference.
    const secrets = (await t.api.get(`/api/companies/${companyId}/secrets`)).body as any[];
    expect(secrets.map((s) => s.id)).toContain(secretIdOf(main));
    expect(JSON.stringify((await t.api.get(`/api/model-providers/${main.id}`)).body)).not.toContain(key);
  });

  it('lists as a table and gets one provider with its price table', async () => {
    const table = await keel(['model-provider', 'list', '-C', companyId]);
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+NAME\s+KIND\s+BASE_URL\s+DEFAULT\s+PRICED_MODELS\s+KEY$/);
    expect(lines[1]).toMatch(new RegExp(`^${main.id}\\s+claude\\s+anthropic\\s+${providerUrl.replace(/\./g, '\\.')}\\s+yes\\s+2\\s+in the vault$`));
    const got = await keel(['model-provider', 'get', main.id]);
    expect(got.code, got.stderr).toBe(0);
    expect(got.stdout).toMatch(/^name: +claude$/m);
    expect(got.stdout).toMatch(/^key: +in the vault$/m);
    expect(got.stdout).toMatch(/^ {2}MODEL\s+INPUT\s+CACHED_INPUT\s+CACHE_WRITE\s+OUTPUT$/m);
    expect(got.stdout).toMatch(/^ {2}claude-haiku-4\s+80\s+8\s+100\s+400\.5$/m);
    expect(json(await keel(['model-provider', 'get', main.id, '--json']))).toEqual((await t.api.get(`/api/model-providers/${main.id}`)).body);
  });

  it('refuses a malformed --price, two key sources, and a key flag, before anything is sent', async () => {
    const before = (await providers()).length;
    const badPrice = await keel(['model-provider', 'create', '-C', companyId, '--name', 'x', '--kind', 'openai', '--base-url', providerUrl, '--price', 'gpt-5=1,2,3']);
    expect(badPrice.code).toBe(1);
    expect(badPrice.stderr).toContain('--price "gpt-5=1,2,3": expected model=input,cachedInput,cacheWrite,output');
    expect(badPrice.stderr).toContain('(usage)');
    const negative = await keel(['model-provider', 'create', '-C', companyId, '--name', 'x', '--kind', 'openai', '--base-url', providerUrl, '--price', 'gpt-5=1,2,3,-4']);
    expect(negative.code).toBe(1);
    const twoSources = await keel(['model-provider', 'create', '-C', companyId, '--name', 'x', '--kind', 'openai', '--base-url', providerUrl, '--api-key-stdin', '--api-key-secret', main.id], { input: 'k' });
    expect(twoSources.stderr).toBe('Error: Pass one of --api-key-secret, --api-key-stdin and --api-key-file (usage)\n');
    const flag = await keel(['model-provider', 'create', '-C', companyId, '--name', 'x', '--kind', 'openai', '--base-url', providerUrl, '--provider-key', 'sk-oops']);
    expect(flag.code).toBe(1);
    expect(flag.stderr).toContain("unknown option '--provider-key'");
    const empty = await keel(['model-provider', 'create', '-C', companyId, '--name', 'x', '--kind', 'openai', '--base-url', providerUrl, '--api-key-stdin']);
    expect(empty).toMatchObject({ code: 1, stderr: 'Error: The provider key is empty (value_required)\n' });
    expect((await providers()).length).toBe(before);
  });

  it("shows the API's refusal of a base URL and stores nothing", async () => {
    const secretsBefore = (await t.api.get(`/api/companies/${companyId}/secrets`)).body.length;
    const refused = await keel(['model-provider', 'create', '-C', companyId, '--name', 'plain-http', '--kind', 'openai', '--base-url', 'http://203.0.113.7', '--api-key-stdin', '--json'], { input: 'sk-never-stored' });
    expect(refused.code).toBe(1);
    const error = JSON.parse(refused.stderr);
    expect(error).toMatchObject({ status: 422, code: 'invalid_base_url', issues: [{ path: 'baseUrl', message: expect.stringMatching(/^baseUrl is refused: /) }] });
    expect((await providers()).map((p) => p.name)).toEqual(['claude']);
    expect((await t.api.get(`/api/companies/${companyId}/secrets`)).body.length).toBe(secretsBefore);
  });

  it('creates a second provider on a secret reference from a file-read secret, and moves the default with update', async () => {
    const file = join(home, 'openai.key');
    await writeFile(file, 'sk-openai-file\n');
    const secret = json(await keel(['secret', 'create', '-C', companyId, '--name', 'OPENAI_KEY', '--value-file', file, '--json']));
    const second = json(await keel(['model-provider', 'create', '-C', companyId, '--name', 'claude-backup', '--kind', 'anthropic', '--base-url', providerUrl,
      '--api-key-secret', secret.id, '--allow-unpriced-models', '--json']));
    expect(secretIdOf(second)).toBe(secret.id);
    expect(second).toMatchObject({ isDefault: false, allowUnpricedModels: true, models: [] });

    const updated = await keel(['model-provider', 'update', second.id, '--default', '--price', 'claude-opus-4*=1500,150,1875,7500']);
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.stdout).toMatch(/^Updated model provider claude-backup$/m);
    const all = await providers();
    // One default per kind: the new default replaced the old one.
    expect(all.find((p) => p.id === second.id)).toMatchObject({ isDefault: true, models: [{ model: 'claude-opus-4*', outputCentsPerMTok: 7500 }] });
    expect(all.find((p) => p.id === main.id)).toMatchObject({ isDefault: false });
    const nothing = await keel(['model-provider', 'update', second.id]);
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toContain('Nothing to update');
    json(await keel(['model-provider', 'update', main.id, '--default', 'true', '--json']));
  });

  it('tests a provider: the latency when it answers (the provider sees the stored key), exit 1 with the error when it refuses', async () => {
    seen.length = 0;
    answerStatus = 200;
    const ok = await keel(['model-provider', 'test', main.id]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^ok: answered in \d+ ms \(HTTP 200\)\n$/);
    expect(seen.at(-1)?.key).toBe(key);
    answerStatus = 401;
    const failed = await keel(['model-provider', 'test', main.id, '--json']);
    expect(failed.code).toBe(1);
    // The provider's own message, from its answer passed on by the gateway; the outcome the plugin recorded.
    expect(JSON.parse(failed.stdout)).toEqual({ ok: false, status: 401, error: 'invalid x-api-key', latencyMs: expect.any(Number), testedAt: expect.stringMatching(/^\d{4}-/) });
    const human = await keel(['model-provider', 'test', main.id]);
    expect(human).toMatchObject({ code: 1, stdout: 'failed: invalid x-api-key (HTTP 401)\n' });
    answerStatus = 200;
    // Keel's own refusal is an error of the command: a model name the gateway will not put in a path.
    const noModel = await keel(['model-provider', 'test', main.id, '--model', 'x'.repeat(201)]);
    expect(noModel.code).toBe(1);
    expect(noModel.stderr).toContain('(model_required, HTTP 422)');
  });

  it("shows an agent's gateway call as spend of source gateway in cost breakdown --by source and source-model", async () => {
    const run = await liveRun(world, companyId, { name: 'Caller' });
    const call = await fetch(`${t.url}/api/llm/${main.id}/v1/messages`, {
      method: 'POST', headers: { 'x-api-key': run.token, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-haiku-4', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(call.status, await call.clone().text()).toBe(200);
    expect((await call.json()).usage).toEqual({ input_tokens: 3, output_tokens: 1 });
    await callsSettled(t);
    await endRun(world, run.runId);
    const bySource = json(await keel(['cost', 'breakdown', '--by', 'source', '-C', companyId, '--json']));
    expect(bySource).toEqual([expect.objectContaining({ source: 'gateway', spendCents: 1, inputTokens: 3, outputTokens: 1, eventCount: 1 })]);
    const table = await keel(['cost', 'breakdown', '--by', 'source-model', '-C', companyId]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^SOURCE\s+PROVIDER\s+MODEL\s+SPEND\s+INPUT_TOKENS\s+OUTPUT_TOKENS\s+EVENT_COUNT\n/);
    expect(table.stdout).toMatch(/\ngateway\s+claude\s+claude-\S+\s+\$0\.01\s+3\s+1\s+1\n/);
  });

  it('gets and sets the limits, a limit not given keeping its value', async () => {
    expect(json(await keel(['model-provider', 'limits', 'get', '-C', companyId, '--json']))).toEqual({ callsPerMinute: null, tokensPerMinute: null });
    expect(json(await keel(['model-provider', 'limits', 'set', '-C', companyId, '--calls-per-minute', '60', '--tokens-per-minute', '100000', '--json'])))
      .toEqual({ callsPerMinute: 60, tokensPerMinute: 100000 });
    const calls = await keel(['model-provider', 'limits', 'set', '-C', companyId, '--calls-per-minute', 'none']);
    expect(calls.code, calls.stderr).toBe(0);
    expect(calls.stdout).toBe('Limits set\ncalls per minute:  no limit\ntokens per minute: 100000\n');
    const bad = await keel(['model-provider', 'limits', 'set', '-C', companyId, '--tokens-per-minute', 'lots']);
    expect(bad).toMatchObject({ code: 1, stderr: 'Error: --tokens-per-minute takes a whole number or none, got "lots" (usage)\n' });
    expect((await t.api.get(`/api/companies/${companyId}/model-gateway/limits`)).body).toEqual({ callsPerMinute: null, tokensPerMinute: 100000 });
  });

  it('deletes only with --yes', async () => {
    const refused = await keel(['model-provider', 'delete', main.id]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('(confirmation_required)');
    expect((await providers()).some((p) => p.id === main.id)).toBe(true);
    const deleted = await keel(['model-provider', 'delete', main.id, '--yes']);
    expect(deleted).toMatchObject({ code: 0, stdout: `Deleted model provider ${main.id}\n` });
    expect((await providers()).some((p) => p.id === main.id)).toBe(false);
  });
});
