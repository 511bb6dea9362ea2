import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bash, conversationText, startAnthropicModel, toolResults, type AnthropicScript, type ScriptedAnthropic } from './anthropic.ts';

/**
 * The scripted Anthropic model's own wire format, checked with plain HTTP: the streamed events
 * joined back give the scripted message, the plain answer is that message, and the side routes
 * and errors answer as the API does. (Claude Code itself drives it in test/plugins/coding-agents/.)
 */
let model: ScriptedAnthropic;
let script: AnthropicScript;

beforeAll(async () => { model = await startAnthropicModel((request, history) => script(request, history), { apiKey: 'k' }); });
afterAll(async () => { await model.close(); });

const post = (path: string, body: unknown, key = 'k') =>
  fetch(`${model.url}${path}`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body) });

const request = (extra: Record<string, unknown> = {}) => ({
  model: 'claude-test', max_tokens: 100,
  messages: [{ role: 'user', content: 'Hello' }, { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'ls' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'a.txt' }] }] }],
  ...extra,
});

/** The events of an SSE body, and the message a client joins from them. */
async function streamed(res: Response): Promise<{ names: string[]; message: any }> {
  const names: string[] = [];
  let message: any = null;
  const partial: Record<number, string> = {};
  for (const frame of (await res.text()).split('\n\n').filter(Boolean)) {
    const [eventLine, dataLine] = frame.split('\n');
    const data = JSON.parse(dataLine.slice('data: '.length));
    expect(eventLine).toBe(`event: ${data.type}`);
    names.push(data.type);
    if (data.type === 'message_start') message = data.message;
    if (data.type === 'content_block_start') message.content[data.index] = data.content_block;
    if (data.type === 'content_block_delta') {
      const block = message.content[data.index];
      if (data.delta.type === 'text_delta') block.text += data.delta.text;
      if (data.delta.type === 'thinking_delta') block.thinking += data.delta.thinking;
      if (data.delta.type === 'signature_delta') block.signature = data.delta.signature;
      if (data.delta.type === 'input_json_delta') partial[data.index] = (partial[data.index] ?? '') + data.delta.partial_json;
    }
    if (data.type === 'content_block_stop' && partial[data.index] !== undefined) message.content[data.index].input = JSON.parse(partial[data.index]);
    if (data.type === 'message_delta') Object.assign(message, { stop_reason: data.delta.stop_reason, usage: data.usage });
  }
  return { names, message };
}

describe('the scripted Anthropic model', () => {
  it('streams a message with thinking, text and a tool call; the start carries the input figures, the delta the final ones', async () => {
    script = () => ({ ...bash('echo hi', { text: 'Running a command now.', usage: { inputTokens: 12, outputTokens: 34, cacheReadInputTokens: 5, cacheCreationInputTokens: 6 } }), thinking: 'First, think it over.' });
    const res = await post('/v1/messages?beta=true', request({ stream: true }));
    expect([res.status, res.headers.get('content-type')]).toEqual([200, 'text/event-stream; charset=utf-8']);
    const { names, message } = await streamed(res);
    expect(names[0]).toBe('message_start');
    expect(names.slice(-2)).toEqual(['message_delta', 'message_stop']);
    expect(message).toMatchObject({
      type: 'message', role: 'assistant', model: 'claude-test', stop_reason: 'tool_use',
      usage: { input_tokens: 12, output_tokens: 34, cache_read_input_tokens: 5, cache_creation_input_tokens: 6 },
      content: [
        { type: 'thinking', thinking: 'First, think it over.', signature: expect.any(String) },
        { type: 'text', text: 'Running a command now.' },
        { type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'Bash', input: { command: 'echo hi', description: 'Run a command' } },
      ],
    });
  });

  it('answers a request without stream as one JSON message, and records every request', async () => {
    const before = model.requests.length;
    script = (req, history) => ({ text: `Seen ${toolResults(req).map((r) => r.text).join()} after ${history.length} requests` });
    const res = await post('/v1/messages', request());
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ type: 'message', stop_reason: 'end_turn', content: [{ type: 'text', text: `Seen a.txt after ${before} requests` }], usage: { input_tokens: 100, output_tokens: 10 } });
    expect(model.requests.at(-1)).toMatchObject({ method: 'POST', path: '/v1/messages', body: { model: 'claude-test' } });
    expect(conversationText(model.messages().at(-1)!)).toBe('Hello\n{"command":"ls"}\na.txt');
  });

  it('counts tokens, answers scripted errors with their headers, refuses a wrong key and unknown paths as the API does', async () => {
    expect(await (await post('/v1/messages/count_tokens', request())).json()).toEqual({ input_tokens: expect.any(Number) });
    script = () => ({ error: { status: 429, type: 'rate_limit_error', message: 'Slow down', headers: { 'retry-after': '7' } } });
    const limited = await post('/v1/messages', request({ stream: true }));
    expect([limited.status, limited.headers.get('retry-after')]).toEqual([429, '7']);
    expect(await limited.json()).toMatchObject({ type: 'error', error: { type: 'rate_limit_error', message: 'Slow down' }, request_id: expect.stringMatching(/^req_/) });
    const wrongKey = await post('/v1/messages', request(), 'nope');
    expect([wrongKey.status, (await wrongKey.json()).error.type]).toEqual([401, 'authentication_error']);
    const unknown = await fetch(`${model.url}/v1/models`, { headers: { 'x-api-key': 'k' } });
    expect([unknown.status, (await unknown.json()).error.type]).toEqual([404, 'not_found_error']);
  });
});
