import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callCents } from '../../sdk/shared/model-prices.ts';
import { startAnthropicModel } from '../support/scripted-models/anthropic.ts';
import { startScriptedChat } from '../support/scripted-models/openai-chat.ts';
import { startScriptedGemini } from '../support/scripted-models/gemini.ts';
import { startScriptedResponsesServer } from '../support/scripted-models/openai-responses.ts';
import {
  anthropicFrame, COMPANY_KEY, deferred, finishedEvent, proxyCall, RATES, readUntil, startProxySetup, startUpstream, type ProxySetup,
} from '../support/proxy-fx.ts';

/**
 * Proxy answers (kernel/gateway/): a plugin route answers respondProxy and the kernel forwards
 * the request to a provider with the company's key, streams the answer back as it arrives, meters
 * the provider's usage and reports it to the plugin in proxy.finished.
 */
let s: ProxySetup;
beforeAll(async () => { s = await startProxySetup(); });
afterAll(async () => { await s?.t.stop(); });

const fx = (extra: Record<string, unknown>) => ({ secretId: s.secretId, rates: RATES, limitCents: null, ...extra });

describe('forwarding', () => {
  it('sends the body byte for byte and the allowed headers with the vault key, never the caller\'s credentials, and never shows the key to the client', async () => {
    const upstream = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_upstream', 'set-cookie': 'a=b', 'x-api-key': COMPANY_KEY });
      res.end(JSON.stringify({ type: 'message', model: 'claude-test', usage: { input_tokens: 3, output_tokens: 2 }, content: [] }));
    });
    try {
      const text = JSON.stringify({ model: 'claude-test', max_tokens: 5, messages: [{ role: 'user', content: 'hi  \u00e9' }], fx: fx({ url: `${upstream.url}/v1/messages`, meter: 'anthropic', tag: 'forward' }) });
      const res = await fetch(`${s.t.url}/api/plugins/proxy-fx/forward/anthropic`, {
        method: 'POST', body: text,
        headers: {
          'content-type': 'application/json', 'x-api-key': s.agentKey, 'anthropic-version': '2023-06-01', 'anthropic-beta': 'tools-1',
          'x-stainless-lang': 'js', cookie: 'keel_session=nope', 'x-goog-api-key': 'caller-goog', 'accept-encoding': 'gzip', 'x-custom': 'dropped',
        },
      });
      const answer = await res.text();
      expect(res.status, answer).toBe(200);
      expect(res.headers.get('request-id')).toBe('req_upstream');
      expect(res.headers.get('set-cookie')).toBeNull();
      expect(answer).not.toContain(COMPANY_KEY);
      expect([...res.headers.values()].join(' ')).not.toContain(COMPANY_KEY);
      const seen = upstream.requests[0]!;
      expect(seen.path).toBe('/v1/messages');
      expect(seen.body.toString('utf8')).toBe(text);
      expect(seen.headers['x-api-key']).toBe(COMPANY_KEY);
      expect(seen.headers['anthropic-version']).toBe('2023-06-01');
      expect(seen.headers['anthropic-beta']).toBe('tools-1');
      expect(seen.headers['x-stainless-lang']).toBe('js');
      expect(seen.headers['accept-encoding']).toBe('identity');
      for (const refused of ['authorization', 'cookie', 'x-goog-api-key', 'x-custom']) expect(seen.headers[refused], refused).toBeUndefined();
      expect(JSON.stringify(seen.headers)).not.toContain(s.agentKey);
      const event = await finishedEvent(s, 'forward');
      expect(event).toMatchObject({ status: 'completed', httpStatus: 200, model: 'claude-test', companyId: s.company.id, usageEstimated: false });
      expect(event.report).toMatchObject({ agentId: s.agent.id, wire: 'anthropic', model: 'claude-test' });
    } finally {
      await upstream.close();
    }
  });

  it('hands the isolate only the declared body fields, and the caller it resolved from the credential header', async () => {
    const res = await proxyCall(s, { model: 'm', secret: 'never crosses', messages: [], fx: { answer: 'json' } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ keys: ['fx', 'model'], companyId: s.company.id, agentId: s.agent.id });
  });

  it('applies setBodyFields and the credential prefix in the header the plugin names', async () => {
    const upstream = await startUpstream((_req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end('{}'); });
    try {
      const res = await proxyCall(s, { model: 'gpt', stream: true, fx: fx({ url: `${upstream.url}/v1/chat/completions`, meter: 'openai-chat', header: 'authorization', prefix: 'Bearer ', setBodyFields: { stream_options: { include_usage: true } }, tag: 'set' }) });
      expect(res.status, await res.text()).toBe(200);
      const seen = upstream.requests[0]!;
      expect(seen.headers.authorization).toBe(`Bearer ${COMPANY_KEY}`);
      expect(seen.headers['x-api-key']).toBeUndefined();
      expect(JSON.parse(seen.body.toString('utf8'))).toMatchObject({ model: 'gpt', stream: true, stream_options: { include_usage: true } });
    } finally {
      await upstream.close();
    }
  });

  it('streams the answer as it arrives: the client reads the first event before the provider sends the last', async () => {
    const gate = deferred();
    const upstream = await startUpstream(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(anthropicFrame({ type: 'message_start', message: { model: 'claude-test', usage: { input_tokens: 7, output_tokens: 1 } } }));
      await gate.promise;
      res.write(anthropicFrame({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hello' } }));
      res.write(anthropicFrame({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 4 } }));
      res.end(anthropicFrame({ type: 'message_stop' }));
    });
    try {
      const res = await proxyCall(s, { model: 'claude-test', stream: true, fx: fx({ url: `${upstream.url}/v1/messages`, meter: 'anthropic', tag: 'incremental' }) });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      const reader = res.body!.getReader();
      const first = await readUntil(reader, (text) => text.includes('\n\n'));
      expect(first).toContain('message_start');
      expect(first).not.toContain('message_stop');
      gate.resolve();
      const rest = await readUntil(reader, () => false);
      expect(rest).toContain('message_stop');
      const event = await finishedEvent(s, 'incremental');
      expect(event).toMatchObject({ status: 'completed', usageEstimated: false, usage: { inputTokens: 7, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 4 } });
      expect(event.firstByteMs).toEqual(expect.any(Number));
    } finally {
      await upstream.close();
    }
  });
  it('meters events split across chunks at any byte, with CRLF line ends, and forwards every byte', async () => {
    const frames = [
      { type: 'message_start', message: { model: 'claude-split', usage: { input_tokens: 11, cache_read_input_tokens: 3, cache_creation_input_tokens: 2, output_tokens: 1 } } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'split \u00e9\u00e9 text' } },
      { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 9 } },
      { type: 'message_stop' },
    ];
    const wire = Buffer.from(frames.map((data) => `event: ${data.type}\r\ndata: ${JSON.stringify(data)}\r\n\r\n`).join(''));
    const upstream = await startUpstream(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let at = 0; at < wire.length; at += 7) {
        res.write(wire.subarray(at, at + 7));
        await new Promise((resolve) => setImmediate(resolve));
      }
      res.end();
    });
    try {
      const res = await proxyCall(s, { model: 'claude-split', stream: true, fx: fx({ url: `${upstream.url}/v1/messages`, meter: 'anthropic', tag: 'split' }) });
      expect(Buffer.from(await res.arrayBuffer()).equals(wire)).toBe(true);
      expect(await finishedEvent(s, 'split')).toMatchObject({ status: 'completed', usageEstimated: false, usage: { inputTokens: 11, cachedInputTokens: 3, cacheWriteTokens: 2, outputTokens: 9 } });
    } finally {
      await upstream.close();
    }
  });

  it('answers 502 upstream_unreachable when the provider refuses the connection, and records the call as upstream_error', async () => {
    const res = await proxyCall(s, { model: 'm', fx: fx({ url: 'http://127.0.0.1:1/v1/messages', meter: 'anthropic', tag: 'unreachable' }) });
    expect(res.status).toBe(502);
    expect((await res.json()).code).toBe('upstream_unreachable');
    expect(await finishedEvent(s, 'unreachable')).toMatchObject({ status: 'upstream_error', httpStatus: null, costCents: 0, firstByteMs: null });
  });
});

describe('meters: the provider\'s own usage, exactly', () => {
  const cents = (usage: Record<string, number>) => callCents(RATES, usage as never);

  it('anthropic, streamed and not', async () => {
    const usage = { inputTokens: 1200, outputTokens: 345, cacheReadInputTokens: 800, cacheCreationInputTokens: 50 };
    const model = await startAnthropicModel(() => ({ text: 'a streamed answer of some length', usage }), { apiKey: COMPANY_KEY });
    try {
      for (const stream of [true, false]) {
        const tag = `anthropic-${stream}`;
        const res = await proxyCall(s, { model: 'claude-x', max_tokens: 10, stream, messages: [{ role: 'user', content: 'hi' }], fx: fx({ url: `${model.url}/v1/messages`, meter: 'anthropic', tag }) });
        expect(res.status, await res.text()).toBe(200);
        const expected = { inputTokens: 1200, cachedInputTokens: 800, cacheWriteTokens: 50, outputTokens: 345 };
        expect(await finishedEvent(s, tag)).toMatchObject({ status: 'completed', model: 'claude-x', usageEstimated: false, usage: expected, costCents: cents(expected) });
      }
    } finally {
      await model.close();
    }
  });

  it('openai-responses, streamed (and a JSON answer)', async () => {
    const server = await startScriptedResponsesServer(() => ({ text: 'answer', usage: { inputTokens: 1000, cachedInputTokens: 600, outputTokens: 90 } }));
    const json = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'response', model: 'gpt-r', usage: { input_tokens: 50, input_tokens_details: { cached_tokens: 20 }, output_tokens: 9 } }));
    });
    try {
      const res = await proxyCall(s, { model: 'gpt-r', stream: true, input: 'hi', fx: fx({ url: `${server.baseUrl}/responses`, meter: 'openai-responses', tag: 'responses-stream' }) }, { wire: 'openai' });
      expect(res.status, await res.text()).toBe(200);
      const streamed = { inputTokens: 400, cachedInputTokens: 600, cacheWriteTokens: 0, outputTokens: 90 };
      expect(await finishedEvent(s, 'responses-stream')).toMatchObject({ status: 'completed', usageEstimated: false, usage: streamed, costCents: cents(streamed) });
      const plain = await proxyCall(s, { model: 'gpt-r', input: 'hi', fx: fx({ url: `${json.url}/v1/responses`, meter: 'openai-responses', tag: 'responses-json' }) }, { wire: 'openai' });
      expect(plain.status, await plain.text()).toBe(200);
      expect(await finishedEvent(s, 'responses-json')).toMatchObject({ status: 'completed', model: 'gpt-r', usageEstimated: false, usage: { inputTokens: 30, cachedInputTokens: 20, cacheWriteTokens: 0, outputTokens: 9 } });
    } finally {
      await server.close();
      await json.close();
    }
  });

  it('openai-chat, streamed with include_usage and not', async () => {
    const chat = await startScriptedChat(() => ({ text: 'chat answer', usage: { promptTokens: 500, cachedTokens: 100, completionTokens: 40 } }));
    try {
      for (const stream of [true, false]) {
        const tag = `chat-${stream}`;
        const res = await proxyCall(s, { model: 'gpt-c', stream, messages: [{ role: 'user', content: 'hi' }], fx: fx({ url: `${chat.url}/chat/completions`, meter: 'openai-chat', setBodyFields: stream ? { stream_options: { include_usage: true } } : undefined, tag }) }, { wire: 'openai' });
        expect(res.status, await res.text()).toBe(200);
        const expected = { inputTokens: 400, cachedInputTokens: 100, cacheWriteTokens: 0, outputTokens: 40 };
        expect(await finishedEvent(s, tag)).toMatchObject({ status: 'completed', model: 'gpt-c', usageEstimated: false, usage: expected, costCents: cents(expected) });
      }
    } finally {
      await chat.close();
    }
  });

  it('gemini, streamGenerateContent and generateContent', async () => {
    const gemini = await startScriptedGemini(() => ({ text: ['one ', 'two'], usage: { promptTokenCount: 300, cachedContentTokenCount: 120, candidatesTokenCount: 30, thoughtsTokenCount: 12 } }));
    try {
      for (const action of ['streamGenerateContent?alt=sse', 'generateContent']) {
        const tag = `gemini-${action}`;
        const res = await proxyCall(s, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }], fx: fx({ url: `${gemini.url}/v1beta/models/gemini-t:${action}`, meter: 'gemini', header: 'x-goog-api-key', tag }) }, { wire: 'gemini' });
        expect(res.status, await res.text()).toBe(200);
        const expected = { inputTokens: 180, cachedInputTokens: 120, cacheWriteTokens: 0, outputTokens: 42 };
        expect(await finishedEvent(s, tag)).toMatchObject({ status: 'completed', model: 'gemini-t', usageEstimated: false, usage: expected, costCents: cents(expected) });
      }
      expect(gemini.requests[0]!.headers['x-goog-api-key']).toBe(COMPANY_KEY);
    } finally {
      await gemini.close();
    }
  });

  it('an upstream error answer passes through with its status and counts no usage', async () => {
    const model = await startAnthropicModel(() => ({ error: { status: 429, type: 'rate_limit_error', message: 'slow down', headers: { 'retry-after': '7' } } }));
    try {
      const res = await proxyCall(s, { model: 'claude-x', max_tokens: 10, messages: [], fx: fx({ url: `${model.url}/v1/messages`, meter: 'anthropic', tag: 'upstream-429' }) });
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toBe('7');
      expect((await res.json()).error.type).toBe('rate_limit_error');
      expect(await finishedEvent(s, 'upstream-429')).toMatchObject({ status: 'upstream_error', httpStatus: 429, costCents: 0, usage: { inputTokens: 0, outputTokens: 0 } });
    } finally {
      await model.close();
    }
  });
});
