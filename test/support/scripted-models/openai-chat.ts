import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody, sendJson } from './http.ts';

/**
 * A scripted OpenAI Chat Completions API on 127.0.0.1: what OpenCode (a custom provider on
 * `@ai-sdk/openai-compatible`) and Pi (a `models.json` provider with `api: "openai-completions"`)
 * call when their base URL points at it. It records every request, so a test can assert what the
 * model was shown (the earlier turns of a resumed session), and answers each
 * `POST …/chat/completions` from a script, streaming (SSE with `tool_calls` deltas and a final
 * usage chunk) or not, as the request asks. `GET …/models` lists the models the script names; any
 * other path answers 404 and is recorded too, so a test sees what the tool asked for.
 */

/** One message of a chat request, as the tools send them. */
export interface ChatMessage {
  role: string;
  content?: string | Array<{ type: string; text?: string }> | null;
  tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
  [key: string]: unknown;
}

/** The parts of a chat completion request a script reads. */
export interface ChatBody {
  model?: string;
  messages?: ChatMessage[];
  tools?: Array<{ type: string; function: { name: string; description?: string; parameters?: unknown } }>;
  stream?: boolean;
  [key: string]: unknown;
}

/** One request the server received. */
export interface ChatRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: ChatBody | null;
}

/** The usage a reply reports: `prompt_tokens` includes the cached part, as OpenAI reports it. */
export interface ChatUsage {
  promptTokens: number;
  cachedTokens?: number;
  completionTokens: number;
}

/** What the script answers for one completion. */
export type ChatReply =
  | { text: string; usage?: ChatUsage }
  | { toolCall: { name: string; arguments: Record<string, unknown> }; text?: string; usage?: ChatUsage }
  /** An API error: the status and OpenAI's `error` object. */
  | { error: { status: number; message: string; type?: string; code?: string }; headers?: Record<string, string> };

export type ChatScript = (request: ChatRequest, completions: ChatRequest[]) => ChatReply;

export interface ScriptedChat {
  /** The base URL the tools take (with `/v1`), e.g. `http://127.0.0.1:40123/v1`. */
  url: string;
  /** Every request, in arrival order. */
  requests: ChatRequest[];
  /** Only the chat completion calls, in arrival order. */
  completions(): ChatRequest[];
  close(): Promise<void>;
}

const defaultUsage: ChatUsage = { promptTokens: 10, completionTokens: 5 };

/** Starts the server on a random port of 127.0.0.1. */
export async function startScriptedChat(script: ChatScript, options: { models?: string[] } = {}): Promise<ScriptedChat> {
  const requests: ChatRequest[] = [];
  const completions = () => requests.filter((request) => request.path.endsWith('/chat/completions'));
  let replies = 0;
  const server = createServer((req, res) => {
    readBody(req).then((raw) => {
      const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
      const request: ChatRequest = { method: req.method ?? 'GET', path, headers: req.headers, body: parseJson(raw) };
      requests.push(request);
      if (req.method === 'GET' && path.endsWith('/models')) {
        return sendJson(res, 200, { object: 'list', data: (options.models ?? []).map((id) => ({ id, object: 'model', owned_by: 'scripted' })) });
      }
      if (req.method !== 'POST' || !path.endsWith('/chat/completions')) return sendJson(res, 404, { error: { message: `no route ${path}`, type: 'not_found' } });
      const reply = script(request, completions());
      replies += 1;
      const id = `chatcmpl-${replies}`;
      if ('error' in reply) {
        res.writeHead(reply.error.status, { 'content-type': 'application/json', ...(reply.headers ?? {}) });
        return res.end(JSON.stringify({ error: { message: reply.error.message, type: reply.error.type ?? 'error', code: reply.error.code ?? null } }));
      }
      const model = request.body?.model ?? 'scripted';
      if (request.body?.stream) return stream(res, id, model, reply, `call_${replies}`);
      return sendJson(res, 200, completion(id, model, reply, `call_${replies}`));
    }).catch((error: unknown) => sendJson(res, 500, { error: { message: String(error) } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    completions,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

/** The text of every message of a request, joined: what a test searches for an earlier turn. */
export function transcriptOf(request: ChatRequest): string {
  return (request.body?.messages ?? []).map((message) => {
    const content = typeof message.content === 'string' ? message.content
      : Array.isArray(message.content) ? message.content.map((part) => part.text ?? '').join('') : '';
    const calls = (message.tool_calls ?? []).map((call) => `${call.function.name}(${call.function.arguments})`).join('\n');
    return [content, calls].filter(Boolean).join('\n');
  }).join('\n');
}

function usageJson(usage: ChatUsage) {
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
    prompt_tokens_details: { cached_tokens: usage.cachedTokens ?? 0 },
  };
}

function completion(id: string, model: string, reply: Exclude<ChatReply, { error: unknown }>, callId: string) {
  const toolCalls = 'toolCall' in reply
    ? [{ id: callId, type: 'function', function: { name: reply.toolCall.name, arguments: JSON.stringify(reply.toolCall.arguments) } }]
    : undefined;
  return {
    id, object: 'chat.completion', created: Math.floor(Date.now() / 1000), model,
    choices: [{ index: 0, message: { role: 'assistant', content: reply.text ?? null, tool_calls: toolCalls }, finish_reason: toolCalls ? 'tool_calls' : 'stop' }],
    usage: usageJson(reply.usage ?? defaultUsage),
  };
}

/** Streams a reply as the API does: a role chunk, content deltas, tool-call deltas (name, then the arguments in two pieces), the finish chunk, then a usage chunk with no choices. */
function stream(res: ServerResponse, id: string, model: string, reply: Exclude<ChatReply, { error: unknown }>, callId: string): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const created = Math.floor(Date.now() / 1000);
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices, ...extra })}\n\n`);
  chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
  if (reply.text) {
    const half = Math.ceil(reply.text.length / 2);
    chunk([{ index: 0, delta: { content: reply.text.slice(0, half) }, finish_reason: null }]);
    if (reply.text.length > half) chunk([{ index: 0, delta: { content: reply.text.slice(half) }, finish_reason: null }]);
  }
  if ('toolCall' in reply) {
    const args = JSON.stringify(reply.toolCall.arguments);
    const half = Math.ceil(args.length / 2);
    chunk([{ index: 0, delta: { tool_calls: [{ index: 0, id: callId, type: 'function', function: { name: reply.toolCall.name, arguments: args.slice(0, half) } }] }, finish_reason: null }]);
    chunk([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: args.slice(half) } }] }, finish_reason: null }]);
  }
  chunk([{ index: 0, delta: {}, finish_reason: 'toolCall' in reply ? 'tool_calls' : 'stop' }]);
  chunk([], { usage: usageJson(reply.usage ?? defaultUsage) });
  res.end('data: [DONE]\n\n');
}

function parseJson(raw: string): ChatBody | null {
  if (!raw) return null;
  try { return JSON.parse(raw) as ChatBody; } catch { return null; }
}

