import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody } from './http.ts';

/**
 * A scripted model behind OpenAI's Responses API (`POST /v1/responses`, streamed as server-sent
 * events the way the real API streams them), for driving a real Codex CLI in tests: the tool is
 * pointed here by a model provider of its own configuration (`base_url`, `wire_api = "responses"`).
 * It records every request, so a test can assert what the model saw (the earlier turns of a
 * resumed thread), and answers each from a script. The usage of each answer is scripted too, so a
 * test can assert exact token counts.
 *
 * The wire types are written here rather than taken from the `openai` package: the server needs
 * only the few shapes below, and Codex, not this file, is what checks them.
 */

/** One item of a request's `input` (a message, a function call the model made, its output, reasoning...). */
export type ResponsesInputItem = { type: string; role?: string; content?: Array<{ type: string; text?: string }>; [key: string]: unknown };

/** The body of `POST /v1/responses` as Codex sends it. */
export interface ResponsesRequest {
  model: string;
  input: ResponsesInputItem[];
  tools?: Array<{ type: string; name?: string; [key: string]: unknown }>;
  stream?: boolean;
  reasoning?: { effort?: string; summary?: string } | null;
  [key: string]: unknown;
}

export interface RecordedRequest { method: string; path: string; headers: Record<string, string | string[] | undefined>; body: ResponsesRequest }

/** Token figures of one answer, as the API reports them: `inputTokens` includes the cached part. */
export interface ScriptedUsage { inputTokens: number; cachedInputTokens?: number; outputTokens: number; reasoningTokens?: number }

export type ScriptedReply =
  /** A final text answer. */
  | { text: string; reasoning?: string; usage?: ScriptedUsage }
  /** A call of Codex's shell tool (`exec_command` with `{cmd}` in Codex 0.171). */
  | { shell: string; reasoning?: string; usage?: ScriptedUsage }
  /** A call of any function tool by name. */
  | { toolCall: { name: string; arguments: Record<string, unknown> }; reasoning?: string; usage?: ScriptedUsage }
  /** An HTTP error instead of a stream (401, 429 with its body and headers, 500...). */
  | { httpError: { status: number; body: unknown; headers?: Record<string, string> } }
  /** Starts streaming `text` and never finishes: the turn stays in flight until the client goes away. */
  | { hang: { text?: string } };

export type Script = (request: ResponsesRequest, index: number) => ScriptedReply | Promise<ScriptedReply>;

export interface ScriptedResponsesServer {
  /** The base URL a client appends `/responses` to: `http://127.0.0.1:<port>/v1`. */
  baseUrl: string;
  /** Every `POST /v1/responses` received, in order. */
  requests: RecordedRequest[];
  /** Every request of any other path (Codex calls none of them with a custom provider; kept to see it if a version starts to). */
  otherRequests: Array<{ method: string; path: string }>;
  close(): Promise<void>;
}

const DEFAULT_USAGE: ScriptedUsage = { inputTokens: 100, cachedInputTokens: 0, outputTokens: 10 };

export async function startScriptedResponsesServer(script: Script): Promise<ScriptedResponsesServer> {
  const requests: RecordedRequest[] = [];
  const otherRequests: Array<{ method: string; path: string }> = [];
  const hanging = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `scripted model: ${(error as Error).message}`, type: 'server_error' } }));
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'POST' || path !== '/v1/responses') {
      // Codex's built-in OpenAI provider first tries a WebSocket upgrade here; a refusal makes it fall back to HTTP.
      otherRequests.push({ method: req.method ?? '', path });
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `no such route ${req.method} ${path}`, type: 'invalid_request_error' } }));
      return;
    }
    const body = JSON.parse(raw) as ResponsesRequest;
    requests.push({ method: req.method, path, headers: req.headers, body });
    const reply = await script(body, requests.length - 1);
    if ('httpError' in reply) {
      res.writeHead(reply.httpError.status, { 'content-type': 'application/json', ...reply.httpError.headers });
      res.end(typeof reply.httpError.body === 'string' ? reply.httpError.body : JSON.stringify(reply.httpError.body));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    streamReply(res, body.model, requests.length, reply, hanging);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    otherRequests,
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Writes one answer as the Responses API streams it: created, each output item added/delta/done, completed with usage. */
function streamReply(res: ServerResponse, model: string, n: number, reply: Exclude<ScriptedReply, { httpError: unknown }>, hanging: Set<ServerResponse>): void {
  let sequence = 0;
  const send = (type: string, fields: Record<string, unknown>) => {
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...fields })}\n\n`);
  };
  const response = { id: `resp_${n}`, object: 'response', created_at: Math.floor(Date.now() / 1000), status: 'in_progress', model, output: [] as unknown[] };
  send('response.created', { response });
  send('response.in_progress', { response });
  const output: unknown[] = [];
  if ('hang' in reply) {
    const item = { id: `msg_${n}`, type: 'message', role: 'assistant', status: 'in_progress', content: [] };
    send('response.output_item.added', { output_index: 0, item });
    send('response.content_part.added', { output_index: 0, item_id: item.id, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
    send('response.output_text.delta', { output_index: 0, item_id: item.id, content_index: 0, delta: reply.hang.text ?? '', logprobs: [] });
    hanging.add(res);
    res.on('close', () => hanging.delete(res));
    return;
  }
  if (reply.reasoning) output.push(streamReasoning(send, output.length, n, reply.reasoning));
  if ('text' in reply) output.push(streamMessage(send, output.length, n, reply.text));
  else {
    const call = 'shell' in reply ? { name: 'exec_command', arguments: { cmd: reply.shell } } : reply.toolCall;
    output.push(streamFunctionCall(send, output.length, n, call.name, JSON.stringify(call.arguments)));
  }
  const usage = reply.usage ?? DEFAULT_USAGE;
  send('response.completed', {
    response: {
      ...response,
      status: 'completed',
      output,
      usage: {
        input_tokens: usage.inputTokens,
        input_tokens_details: { cached_tokens: usage.cachedInputTokens ?? 0 },
        output_tokens: usage.outputTokens,
        output_tokens_details: { reasoning_tokens: usage.reasoningTokens ?? 0 },
        total_tokens: usage.inputTokens + usage.outputTokens,
      },
    },
  });
  res.end();
}

type Send = (type: string, fields: Record<string, unknown>) => void;

function streamMessage(send: Send, index: number, n: number, text: string): unknown {
  const item = { id: `msg_${n}`, type: 'message', role: 'assistant', status: 'in_progress', content: [] as unknown[] };
  const part = { type: 'output_text', text, annotations: [] };
  send('response.output_item.added', { output_index: index, item });
  send('response.content_part.added', { output_index: index, item_id: item.id, content_index: 0, part: { ...part, text: '' } });
  // Two deltas, as a real stream splits text: the client must join them.
  const half = Math.ceil(text.length / 2);
  for (const delta of [text.slice(0, half), text.slice(half)]) {
    send('response.output_text.delta', { output_index: index, item_id: item.id, content_index: 0, delta, logprobs: [] });
  }
  send('response.output_text.done', { output_index: index, item_id: item.id, content_index: 0, text, logprobs: [] });
  send('response.content_part.done', { output_index: index, item_id: item.id, content_index: 0, part });
  const done = { ...item, status: 'completed', content: [part] };
  send('response.output_item.done', { output_index: index, item: done });
  return done;
}

function streamFunctionCall(send: Send, index: number, n: number, name: string, args: string): unknown {
  const item = { id: `fc_${n}`, type: 'function_call', status: 'in_progress', call_id: `call_${n}`, name, arguments: '' };
  send('response.output_item.added', { output_index: index, item });
  const half = Math.ceil(args.length / 2);
  for (const delta of [args.slice(0, half), args.slice(half)]) {
    send('response.function_call_arguments.delta', { output_index: index, item_id: item.id, delta });
  }
  send('response.function_call_arguments.done', { output_index: index, item_id: item.id, name, arguments: args });
  const done = { ...item, status: 'completed', arguments: args };
  send('response.output_item.done', { output_index: index, item: done });
  return done;
}

function streamReasoning(send: Send, index: number, n: number, text: string): unknown {
  const item = { id: `rs_${n}`, type: 'reasoning', summary: [] as unknown[] };
  const part = { type: 'summary_text', text };
  send('response.output_item.added', { output_index: index, item });
  send('response.reasoning_summary_part.added', { output_index: index, item_id: item.id, summary_index: 0, part: { ...part, text: '' } });
  send('response.reasoning_summary_text.delta', { output_index: index, item_id: item.id, summary_index: 0, delta: text });
  send('response.reasoning_summary_text.done', { output_index: index, item_id: item.id, summary_index: 0, text });
  send('response.reasoning_summary_part.done', { output_index: index, item_id: item.id, summary_index: 0, part });
  const done = { ...item, summary: [part] };
  send('response.output_item.done', { output_index: index, item: done });
  return done;
}

/** The text of the last user message of a request (the prompt of the turn it belongs to). */
export function lastUserText(request: ResponsesRequest): string {
  const users = request.input.filter((item) => item.type === 'message' && item.role === 'user');
  return textOf(users[users.length - 1]);
}

/** The text of every message of a request, joined: to assert what the model saw. */
export function allText(request: ResponsesRequest): string {
  return request.input.map((item) => (item.type === 'function_call_output' ? String(item.output ?? '') : textOf(item))).join('\n');
}

/** The outputs of the function calls answered in a request, in order (the shell's output for Codex). */
export function toolOutputs(request: ResponsesRequest): string[] {
  return request.input.filter((item) => item.type === 'function_call_output').map((item) => String(item.output ?? ''));
}

/** Whether the request's last input item is the output of a tool call (the model is asked to go on after it). */
export function answersToolCall(request: ResponsesRequest): boolean {
  return request.input[request.input.length - 1]?.type === 'function_call_output';
}

function textOf(item: ResponsesInputItem | undefined): string {
  return (item?.content ?? []).map((part) => part.text ?? '').join('');
}
