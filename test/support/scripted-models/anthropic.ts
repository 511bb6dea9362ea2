/**
 * A scripted Anthropic Messages API for tests: a real HTTP server on 127.0.0.1 that a real
 * coding tool (Claude Code) is pointed at with `ANTHROPIC_BASE_URL`. It records every request it
 * receives (so a test asserts the model saw the earlier turns) and answers `POST /v1/messages`
 * from a script: a function from the request (and the requests before it) to the next reply.
 * Streaming answers are server-sent events exactly as the API sends them; usage figures come
 * from the script, so a test can assert exact token counts downstream.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import {
  sseFrame, streamEvents,
  type ErrorBody, type ErrorType, type Message, type MessagesRequest, type ResponseBlock, type StopReason, type Usage,
} from './anthropic-wire.ts';
import { readBody, sendJson as sendJsonAnswer } from './http.ts';

export type { MessagesRequest } from './anthropic-wire.ts';

/** Token figures of one answer; the cache figures default to 0. */
export interface ScriptedUsage { inputTokens: number; outputTokens: number; cacheReadInputTokens?: number; cacheCreationInputTokens?: number }

/** One reply of the script. */
export type AnthropicReply =
  /** An assistant message: text (and optional thinking and one tool call). */
  | {
    text?: string; thinking?: string; toolUse?: { name: string; input: Record<string, unknown>; id?: string };
    usage?: ScriptedUsage; stopReason?: StopReason;
    /** Response headers, e.g. the `anthropic-ratelimit-unified-*` figures a subscription account gets. */
    headers?: Record<string, string>;
  }
  /** An HTTP error as the API answers it (429 rate_limit_error, 529 overloaded_error, 401 ...). */
  | { error: { status: number; type: ErrorType; message: string; headers?: Record<string, string> } }
  /** Starts the stream and never finishes it: the client is stuck mid-turn until it goes away. */
  | { hang: true };

/** A reply that makes Claude Code run a shell command through its `Bash` tool. */
export function bash(command: string, options: { text?: string; usage?: ScriptedUsage; description?: string } = {}): AnthropicReply {
  return { text: options.text, usage: options.usage, toolUse: { name: 'Bash', input: { command, description: options.description ?? 'Run a command' } } };
}

export interface RecordedRequest {
  method: string;
  /** The path without the query (`/v1/messages`; Claude Code adds `?beta=true`). */
  path: string;
  headers: IncomingMessage['headers'];
  /** The parsed JSON body, or null for a request without one. */
  body: MessagesRequest | null;
}

/** The script: the reply to a `POST /v1/messages`, given the requests received before it. */
export type AnthropicScript = (request: MessagesRequest, history: readonly RecordedRequest[]) => AnthropicReply | Promise<AnthropicReply>;

export interface ScriptedAnthropic {
  /** The base URL for `ANTHROPIC_BASE_URL`. */
  url: string;
  /** Every request, in arrival order (messages, count_tokens and anything else). */
  requests: RecordedRequest[];
  /** The `POST /v1/messages` requests only. */
  messages(): MessagesRequest[];
  close(): Promise<void>;
}

export interface ScriptedAnthropicOptions {
  /** When set, a request without this key (x-api-key or a bearer token) gets 401 authentication_error. */
  apiKey?: string;
  /** Usage of a reply that names none. */
  defaultUsage?: ScriptedUsage;
}

export async function startAnthropicModel(script: AnthropicScript, options: ScriptedAnthropicOptions = {}): Promise<ScriptedAnthropic> {
  const requests: RecordedRequest[] = [];
  const open = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    open.add(res);
    res.on('close', () => open.delete(res));
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendError(res, 500, 'api_error', `scripted model failed: ${error instanceof Error ? error.message : String(error)}`);
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const path = (req.url ?? '/').split('?')[0];
    const body = raw ? JSON.parse(raw) as MessagesRequest : null;
    const history = requests.slice();
    requests.push({ method: req.method ?? 'GET', path, headers: req.headers, body });
    if (options.apiKey && !authorized(req, options.apiKey)) return sendError(res, 401, 'authentication_error', 'invalid x-api-key');
    if (req.method === 'POST' && path === '/v1/messages/count_tokens' && body) {
      return sendJson(res, 200, { input_tokens: Math.ceil(JSON.stringify(body.messages ?? []).length / 4) });
    }
    if (req.method === 'POST' && path === '/v1/messages' && body) return answer(res, body, await script(body, history));
    sendError(res, 404, 'not_found_error', `Not found: ${req.method} ${path}`);
  }

  function answer(res: ServerResponse, request: MessagesRequest, reply: AnthropicReply): void {
    if ('error' in reply) return sendError(res, reply.error.status, reply.error.type, reply.error.message, reply.error.headers);
    if ('hang' in reply) {
      res.writeHead(200, streamHeaders());
      const [start] = streamEvents(message(request, { text: '' }, options.defaultUsage));
      res.write(sseFrame(start));
      return;
    }
    const full = message(request, reply, options.defaultUsage);
    if (!request.stream) return sendJson(res, 200, full, reply.headers);
    res.writeHead(200, { ...streamHeaders(), ...reply.headers });
    for (const event of streamEvents(full)) res.write(sseFrame(event));
    res.end();
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    messages: () => requests.filter((r) => r.path === '/v1/messages' && r.body).map((r) => r.body as MessagesRequest),
    close: async () => {
      for (const res of open) res.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function message(request: MessagesRequest, reply: Exclude<AnthropicReply, { error: unknown } | { hang: true }>, fallback?: ScriptedUsage): Message {
  const content: ResponseBlock[] = [];
  if (reply.thinking) content.push({ type: 'thinking', thinking: reply.thinking, signature: randomBytes(24).toString('base64') });
  if (reply.text) content.push({ type: 'text', text: reply.text });
  if (reply.toolUse) content.push({ type: 'tool_use', id: reply.toolUse.id ?? `toolu_${randomBytes(12).toString('hex')}`, name: reply.toolUse.name, input: reply.toolUse.input });
  const usage = reply.usage ?? fallback ?? { inputTokens: 100, outputTokens: 10 };
  return {
    id: `msg_${randomBytes(12).toString('hex')}`,
    type: 'message',
    role: 'assistant',
    model: request.model,
    content,
    stop_reason: reply.stopReason ?? (reply.toolUse ? 'tool_use' : 'end_turn'),
    stop_sequence: null,
    usage: wireUsage(usage),
  };
}

function wireUsage(usage: ScriptedUsage): Usage {
  return {
    input_tokens: usage.inputTokens,
    cache_creation_input_tokens: usage.cacheCreationInputTokens ?? 0,
    cache_read_input_tokens: usage.cacheReadInputTokens ?? 0,
    output_tokens: usage.outputTokens,
    service_tier: 'standard',
  };
}

function authorized(req: IncomingMessage, key: string): boolean {
  return req.headers['x-api-key'] === key || req.headers.authorization === `Bearer ${key}`;
}

function streamHeaders(): Record<string, string> {
  return { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'request-id': requestId() };
}

function requestId(): string { return `req_${randomBytes(12).toString('hex')}`; }

/** The API's JSON answers carry a request id. */
function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  sendJsonAnswer(res, status, body, { 'request-id': requestId(), ...headers });
}

function sendError(res: ServerResponse, status: number, type: ErrorType, text: string, headers: Record<string, string> = {}): void {
  const body: ErrorBody = { type: 'error', error: { type, message: text }, request_id: requestId() };
  sendJson(res, status, body, headers);
}

/** Every text of a request's conversation (text, tool inputs, tool results), for scripts and assertions. */
export function conversationText(request: MessagesRequest): string {
  const parts: string[] = [];
  for (const turn of request.messages) {
    if (typeof turn.content === 'string') { parts.push(turn.content); continue; }
    for (const block of turn.content) {
      if (block.type === 'text') parts.push(String(block.text));
      else if (block.type === 'tool_use') parts.push(JSON.stringify(block.input));
      else if (block.type === 'tool_result') parts.push(resultText(block.content));
    }
  }
  return parts.join('\n');
}

/** The tool results of a request's conversation, oldest first. */
export function toolResults(request: MessagesRequest): Array<{ toolUseId: string; text: string; isError: boolean }> {
  const out: Array<{ toolUseId: string; text: string; isError: boolean }> = [];
  for (const turn of request.messages) {
    if (typeof turn.content === 'string') continue;
    for (const block of turn.content) {
      if (block.type === 'tool_result') out.push({ toolUseId: String(block.tool_use_id), text: resultText(block.content), isError: block.is_error === true });
    }
  }
  return out;
}

function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part: { text?: unknown }) => (typeof part.text === 'string' ? part.text : '')).join('');
  return '';
}
