import type { Failure, ParsedLine, ToolUsage, TranscriptEntry } from './driver.ts';
import { cutOutput, keptLine } from './lines.ts';

/**
 * Reading `cursor-agent -p --output-format stream-json`, as Cursor documents it
 * (cursor.com/docs/cli/reference/output-format). NOT checked against the real tool: it is not on
 * npm and cannot be installed here. One JSON event per line:
 *
 *   system {subtype: 'init', session_id, model, cwd, apiKeySource, permissionMode}
 *   user {message: {content: [{type: 'text', text}]}}             the prompt, echoed
 *   assistant {message: {content: [{type: 'text', text}]}}        a complete message (without
 *                                                                  --stream-partial-output)
 *   tool_call {subtype: 'started'|'completed', call_id, tool_call: {<kind>ToolCall: {args,
 *             result?: {success: {...}} | {error...}}}}; or tool_call.function {name, arguments}
 *   result {subtype: 'success', is_error, result, session_id, request_id, duration_ms}
 *
 * Not in the documentation but reported by users of recent builds (2026.x): `thinking` events
 * ({subtype: 'delta', text}), and `usage` on the result ({inputTokens, outputTokens,
 * cacheReadTokens, cacheWriteTokens}, inputTokens WITHOUT the cache reads). A build that
 * reports no usage leaves the run's usage unknown. On failure the CLI exits non-zero with its
 * error on stderr (the documentation says so for `json`; stream-json is assumed alike).
 */

export interface CursorContext { model: string; billingType: ToolUsage['billingType'] }

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);
const num = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0);

/** One event's meaning, without what earlier lines said (the core parses each batch of lines with a fresh parser). */
export function parseCursorLine(data: Json, context: CursorContext): ParsedLine {
  switch (data.type) {
    case 'system': {
      const sessionId = str(data.session_id);
      if (data.subtype !== 'init' || !sessionId) return keptLine(data);
      const model = str(data.model);
      return { sessionId, transcript: [{ kind: 'init', sessionId, ...(model ? { model } : {}) }] };
    }
    case 'user':
      return {}; // the prompt Keel itself sent
    case 'assistant': {
      const text = messageText(data.message);
      return text === null ? keptLine(data) : text ? { transcript: [{ kind: 'assistant', text }] } : {};
    }
    case 'thinking': {
      const text = str(data.text);
      if (data.subtype === 'delta' && text) return { transcript: [{ kind: 'thinking', text }] };
      return data.subtype === 'completed' || data.subtype === 'delta' ? {} : keptLine(data);
    }
    case 'tool_call':
      return parseToolCall(data) ?? keptLine(data);
    case 'result':
      return parseResult(data, context);
    case 'error': {
      const message = str(data.message) ?? (isObject(data.error) ? str(data.error.message) : str(data.error));
      return message ? { transcript: [{ kind: 'error', message }], failure: failureOf(message) ?? undefined } : keptLine(data);
    }
    default:
      return keptLine(data);
  }
}

/** The text parts of a message joined, or null when it has no content list. */
function messageText(message: unknown): string | null {
  if (!isObject(message) || !Array.isArray(message.content)) return null;
  return message.content.map((part) => (isObject(part) && part.type === 'text' && typeof part.text === 'string' ? part.text : '')).join('');
}

/** `readToolCall` → `read`; `function` → its own name. */
function parseToolCall(data: Json): ParsedLine | null {
  const call = isObject(data.tool_call) ? data.tool_call : null;
  const kind = call ? Object.keys(call)[0] : undefined;
  if (!call || !kind || !isObject(call[kind])) return null;
  const body = call[kind] as Json;
  const id = str(data.call_id) ?? undefined;
  const ids = id ? { id } : {};
  if (data.subtype === 'started') {
    const name = kind === 'function' ? str(body.name) ?? 'function' : kind.replace(/ToolCall$/, '');
    const input = kind === 'function' ? parseArguments(body.arguments) : body.args ?? {};
    return { transcript: [{ kind: 'tool_call', ...ids, name, input }] };
  }
  if (data.subtype === 'completed') {
    const result = isObject(body.result) ? body.result : null;
    const success = result && 'success' in result ? result.success : undefined;
    const failed = result !== null && success === undefined;
    const output = outputText(success !== undefined ? success : result ?? body.result ?? '');
    return { transcript: [{ kind: 'tool_result', ...ids, output: cutOutput(output), ...(failed ? { isError: true } : {}) }] };
  }
  return null;
}

function parseArguments(value: unknown): unknown {
  if (typeof value !== 'string') return value ?? {};
  try { return JSON.parse(value) as unknown; } catch { return value; }
}

/** What a tool's result says, as text: a file's content, a command's output, else the result as JSON. */
function outputText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (!isObject(value)) return JSON.stringify(value ?? null);
  if (typeof value.content === 'string') return value.content;
  const streams = [str(value.stdout), str(value.stderr)].filter((text): text is string => Boolean(text));
  if (streams.length) return streams.join('\n');
  return JSON.stringify(value);
}

function parseResult(data: Json, context: CursorContext): ParsedLine {
  const isError = data.is_error === true || (typeof data.subtype === 'string' && data.subtype !== 'success');
  const text = str(data.result);
  const sessionId = str(data.session_id) ?? undefined;
  const durationMs = typeof data.duration_ms === 'number' && data.duration_ms > 0 ? data.duration_ms : undefined;
  const transcript: TranscriptEntry[] = [{ kind: 'result', ...(text ? { text } : {}), isError, ...(durationMs !== undefined ? { durationMs } : {}) }];
  const usage = isObject(data.usage) ? usageOf(data.usage, context) : null;
  const failure = isError && text ? failureOf(text) : null;
  return {
    transcript,
    ...(sessionId ? { sessionId } : {}),
    ...(usage ? { usage } : {}),
    result: { text, isError, ...(typeof data.subtype === 'string' ? { subtype: data.subtype } : {}), ...(durationMs !== undefined ? { durationMs } : {}) },
    ...(failure ? { failure } : {}),
  };
}

function usageOf(usage: Json, context: CursorContext): ToolUsage | null {
  const figures = {
    inputTokens: num(usage.inputTokens ?? usage.input_tokens),
    cachedInputTokens: num(usage.cacheReadTokens ?? usage.cache_read_tokens),
    cacheWriteTokens: num(usage.cacheWriteTokens ?? usage.cache_write_tokens),
    outputTokens: num(usage.outputTokens ?? usage.output_tokens),
  };
  if (Object.values(figures).every((value) => value === 0)) return null;
  return { provider: 'cursor', model: context.model, billingType: context.billingType, ...figures };
}

const AUTH = [/Authentication required/i, /Not logged in/i, /\[unauthenticated\]/i, /agent login/, /CURSOR_API_KEY/, /invalid api key/i, /\b401\b/];
const QUOTA = [/usage limit/i, /out of (fast )?requests/i, /quota/i, /spend limit/i];
const RATE = [/rate limit/i, /too many requests/i, /\b429\b/, /resource_exhausted/i];
/** What the CLI says of a chat it does not hold is undocumented; these are the wordings integrations report. */
export const CURSOR_SESSION_REFUSED = ['Unknown session', 'unknown session', 'Unknown chat', 'unknown chat', 'Session not found', 'session not found', 'Chat not found', 'chat not found', 'Could not resume', 'could not resume'];

export function failureOf(message: string): Failure | null {
  const first = message.split('\n').find((line) => line.trim())?.trim().slice(0, 500) ?? message;
  if (CURSOR_SESSION_REFUSED.some((text) => message.includes(text))) return { errorCode: 'tool_session_unknown', message: first };
  if (AUTH.some((pattern) => pattern.test(message))) return { errorCode: 'tool_auth_required', message: first };
  if (QUOTA.some((pattern) => pattern.test(message))) return { errorCode: 'tool_quota_exhausted', message: first, retryAt: null };
  if (RATE.some((pattern) => pattern.test(message))) return { errorCode: 'tool_rate_limited', message: first, retryAt: null };
  return null;
}

/** The failure of an ended execution; the CLI writes its errors to stderr, which ends the log. */
export function classifyCursor(input: { exitCode: number | null; signal: string | null; logTail: string; sawResult: boolean }, install: string): Failure | null {
  const { exitCode, signal, logTail } = input;
  if (exitCode === 0 && !signal) return null;
  const lines = logTail.split('\n').map((line) => line.trim()).filter(Boolean);
  const plain = lines.filter((line) => !line.startsWith('{'));
  const named = plain.map((line) => failureOf(line)).find((failure) => failure !== null);
  if (named) return named;
  if (exitCode === 127 || plain.some((line) => /cursor-agent: (command )?not found|ENOENT/.test(line))) {
    return { errorCode: 'adapter_unavailable', message: `Cursor's agent CLI is not installed: ${install}` };
  }
  const how = signal ? `was stopped by ${signal}` : `exited with code ${exitCode}`;
  const last = plain.at(-1)?.slice(0, 500);
  return { errorCode: 'tool_crashed', message: `cursor-agent ${how}${last ? `: ${last}` : ''}` };
}
