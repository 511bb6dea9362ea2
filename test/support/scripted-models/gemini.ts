import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody, sendJson } from './http.ts';

/**
 * A scripted Gemini API (the Generative Language REST API, v1beta) on 127.0.0.1: what the Gemini
 * CLI calls when `GOOGLE_GEMINI_BASE_URL` points at it. It records every request, so a test can
 * assert what the model was shown (the earlier turns of a resumed session), and answers each
 * `generateContent` / `streamGenerateContent` from a script. `countTokens` answers a rough count;
 * any other path answers 404 and is recorded too, so a test sees what the tool asked for.
 */

/** One request the server received. */
export interface GeminiRequest {
  method: string;
  /** The path without the query, e.g. `/v1beta/models/gemini-2.5-pro:streamGenerateContent`. */
  path: string;
  query: Record<string, string>;
  /** The model named in the path, or null. */
  model: string | null;
  /** The method after the colon: `streamGenerateContent`, `generateContent`, `countTokens`, ... */
  action: string | null;
  headers: Record<string, string | string[] | undefined>;
  body: GenerateContentBody | null;
}

/** The parts of a `GenerateContentRequest` a script reads. */
export interface GenerateContentBody {
  contents?: Array<{ role?: string; parts?: Array<Record<string, unknown>> }>;
  systemInstruction?: { parts?: Array<{ text?: string }> };
  tools?: Array<{ functionDeclarations?: Array<{ name: string; parameters?: unknown; parametersJsonSchema?: unknown }> }>;
  generationConfig?: Record<string, unknown>;
  [key: string]: unknown;
}

/** The usage a reply reports (the API's `usageMetadata`); `totalTokenCount` is filled when absent. */
export interface GeminiUsage {
  promptTokenCount: number;
  cachedContentTokenCount?: number;
  candidatesTokenCount: number;
  thoughtsTokenCount?: number;
  totalTokenCount?: number;
}

/** What the script answers for one generate call. */
export type GeminiReply =
  /** Text; an array streams one chunk per element (a single response for `generateContent`). */
  | { text: string | string[]; usage?: GeminiUsage }
  | { functionCall: { name: string; args: Record<string, unknown> }; text?: string; usage?: GeminiUsage }
  /** An API error: the status and the `error` object Google's APIs answer with. */
  | { error: { status: number; message: string; statusText?: string; details?: unknown[] }; headers?: Record<string, string> };

export type GeminiScript = (request: GeminiRequest, generateCalls: GeminiRequest[]) => GeminiReply;

export interface ScriptedGemini {
  /** The base URL for `GOOGLE_GEMINI_BASE_URL`, e.g. `http://127.0.0.1:40123`. */
  url: string;
  /** Every request, in arrival order. */
  requests: GeminiRequest[];
  /** Only the generate calls (streaming or not), in arrival order. */
  generateCalls(): GeminiRequest[];
  close(): Promise<void>;
}

const defaultUsage: GeminiUsage = { promptTokenCount: 10, candidatesTokenCount: 5 };

/** Starts the server on a random port of 127.0.0.1. */
export async function startScriptedGemini(script: GeminiScript): Promise<ScriptedGemini> {
  const requests: GeminiRequest[] = [];
  const generateCalls = () => requests.filter((request) => request.action === 'generateContent' || request.action === 'streamGenerateContent');
  let responses = 0;
  const server = createServer((req, res) => {
    readBody(req).then((raw) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const match = /^\/[^/]+\/models\/([^/:]+):([A-Za-z]+)$/.exec(url.pathname);
      const request: GeminiRequest = {
        method: req.method ?? 'GET', path: url.pathname, query: Object.fromEntries(url.searchParams),
        model: match?.[1] ?? null, action: match?.[2] ?? null, headers: req.headers, body: parseJson(raw),
      };
      requests.push(request);
      if (request.action === 'countTokens') return sendJson(res, 200, { totalTokens: Math.ceil(raw.length / 4) });
      if (request.action !== 'generateContent' && request.action !== 'streamGenerateContent') {
        return sendJson(res, 404, googleError(404, `scripted Gemini: no route for ${req.method} ${url.pathname}`, 'NOT_FOUND'));
      }
      let reply: GeminiReply;
      try { reply = script(request, generateCalls()); } catch (error) {
        reply = { error: { status: 500, message: `scripted Gemini: the script threw: ${(error as Error).message}` } };
      }
      responses += 1;
      answer(res, request, reply, `scripted-${responses}`);
    }, () => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`, requests, generateCalls,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

function answer(res: ServerResponse, request: GeminiRequest, reply: GeminiReply, responseId: string): void {
  if ('error' in reply) {
    res.writeHead(reply.error.status, { 'content-type': 'application/json', ...reply.headers });
    res.end(JSON.stringify(googleError(reply.error.status, reply.error.message, reply.error.statusText, reply.error.details)));
    return;
  }
  const texts = reply.text === undefined ? [] : typeof reply.text === 'string' ? [reply.text] : reply.text;
  const usage = reply.usage ?? defaultUsage;
  const usageMetadata = {
    ...usage,
    totalTokenCount: usage.totalTokenCount ?? usage.promptTokenCount + usage.candidatesTokenCount + (usage.thoughtsTokenCount ?? 0),
  };
  const chunk = (parts: Array<Record<string, unknown>>, last: boolean) => ({
    candidates: [{ content: { role: 'model', parts }, ...(last ? { finishReason: 'STOP' } : {}), index: 0 }],
    // The API reports usage on the last chunk of a stream; the figures cover the whole response.
    ...(last ? { usageMetadata } : {}), modelVersion: request.model ?? 'unknown', responseId,
  });
  const call = 'functionCall' in reply ? [{ functionCall: reply.functionCall }] : [];
  if (request.action === 'generateContent') {
    return sendJson(res, 200, chunk([...(texts.length ? [{ text: texts.join('') }] : []), ...call], true));
  }
  const chunks = texts.map((text) => [{ text }] as Array<Record<string, unknown>>);
  if (call.length || chunks.length === 0) chunks.push(call);
  // Server-sent events as the API sends them with alt=sse: one `data:` line per chunk.
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.end(chunks.map((parts, i) => `data: ${JSON.stringify(chunk(parts, i === chunks.length - 1))}\r\n\r\n`).join(''));
}

function googleError(code: number, message: string, status = statusText(code), details?: unknown[]) {
  return { error: { code, message, status, ...(details ? { details } : {}) } };
}

function statusText(code: number): string {
  return ({ 400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND', 429: 'RESOURCE_EXHAUSTED', 500: 'INTERNAL', 503: 'UNAVAILABLE' } as Record<number, string>)[code] ?? 'UNKNOWN';
}

function parseJson(raw: string): GenerateContentBody | null {
  if (!raw) return null;
  try { return JSON.parse(raw) as GenerateContentBody; } catch { return null; }
}

/** The text of a request's last user turn (what the tool sent most recently), for scripts. */
export function lastUserText(request: GeminiRequest): string {
  const contents = request.body?.contents ?? [];
  for (let i = contents.length - 1; i >= 0; i -= 1) {
    if (contents[i].role !== 'user') continue;
    return (contents[i].parts ?? []).map((part) => (typeof part.text === 'string' ? part.text : '')).join('');
  }
  return '';
}

/** The function responses in a request's last user turn (the tool's answers to the model's calls). */
export function lastFunctionResponses(request: GeminiRequest): Array<{ name: string; response: Record<string, unknown> }> {
  const contents = request.body?.contents ?? [];
  const last = contents[contents.length - 1];
  if (!last || last.role !== 'user') return [];
  return (last.parts ?? []).flatMap((part) => {
    const call = part.functionResponse as { name?: string; response?: Record<string, unknown> } | undefined;
    return call && typeof call.name === 'string' ? [{ name: call.name, response: call.response ?? {} }] : [];
  });
}

/**
 * Whether a request is one of the CLI's own JSON calls rather than a turn of the conversation: with
 * the `auto` model the CLI first asks a small model to score the task (`complexity_score`), in
 * JSON mode. A script answers those with `routerReply`.
 */
export function isJsonCall(request: GeminiRequest): boolean {
  return request.body?.generationConfig?.responseMimeType === 'application/json';
}

/** The answer to the `auto` model's routing call: a simple task (score 10), which the CLI routes to its Flash model. */
export function routerReply(usage: GeminiUsage = { promptTokenCount: 50, candidatesTokenCount: 10 }): GeminiReply {
  return { text: JSON.stringify({ complexity_reasoning: 'scripted', complexity_score: 10 }), usage };
}
