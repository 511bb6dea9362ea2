import type { Failure, ParsedLine, ToolUsage, TranscriptEntry } from './driver.ts';
import { cutOutput, keptLine } from './lines.ts';

/**
 * Reading `gemini --output-format stream-json` (Gemini CLI 0.61; the fixtures under
 * test/fixtures/coding-agents/gemini/ are its real output): one JSON event per line:
 *
 *   init {session_id, model}                  the session to resume next time (`--resume <id>`)
 *   message {role: 'user', content}           the prompt, echoed
 *   message {role: 'assistant', content, delta: true}
 *                                              one streamed chunk of the answer
 *   tool_use {tool_name, tool_id, parameters}
 *   tool_result {tool_id, status: 'success'|'error', output?, error?: {type, message}}
 *   error {severity: 'warning'|'error', message}
 *                                              loop detected, an empty or blocked answer
 *   result {status: 'success'|'error', error?: {type, message}, stats}
 *     stats: {total_tokens, input_tokens, output_tokens, cached, input, duration_ms, tool_calls,
 *             models: {<model>: {total_tokens, input_tokens, output_tokens, cached, input}}}
 *     The figures cover this invocation only (a resumed session starts from zero), also on an
 *     error result (the turns before the error). `input_tokens` is the prompt including the
 *     cached part, `input` the uncached part, `output_tokens` the answer WITHOUT the thinking
 *     tokens, which `total_tokens` does count: Gemini bills thinking as output.
 *
 * A refused resume, a missing credential and an untrusted folder print to stderr only (no event).
 * Each chunk of an answer becomes a transcript entry of its own, and the result event carries no
 * text: the core collects the answer since the last tool call as the result's text (answer.ts).
 * An `error` event of severity `error` (an empty, blocked or malformed answer) is followed by an
 * error result, so it names the run's failure.
 */


export interface UsageContext { billingType: ToolUsage['billingType'] }

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);
const num = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0);



/** One event's meaning, without what earlier lines said (the core parses each batch of lines with a fresh parser). */
export function parseGeminiLine(data: Json, context: UsageContext): ParsedLine {
  switch (data.type) {
    case 'init': {
      const sessionId = str(data.session_id);
      if (!sessionId) return keptLine(data);
      const model = str(data.model);
      return { sessionId, transcript: [{ kind: 'init', sessionId, ...(model ? { model } : {}) }] };
    }
    case 'message': {
      const content = str(data.content);
      if (content === null) return keptLine(data);
      if (data.role === 'user') return {}; // the prompt Keel itself sent
      if (data.role === 'assistant') return content ? { transcript: [{ kind: 'assistant', text: content }] } : {};
      return keptLine(data);
    }
    case 'tool_use': {
      const name = str(data.tool_name);
      if (!name) return keptLine(data);
      const id = str(data.tool_id) ?? undefined;
      return { transcript: [{ kind: 'tool_call', ...(id ? { id } : {}), name, input: data.parameters ?? {} }] };
    }
    case 'tool_result': {
      const id = str(data.tool_id) ?? undefined;
      const isError = data.status === 'error';
      const output = str(data.output) ?? (isObject(data.error) ? str(data.error.message) : null) ?? '';
      return { transcript: [{ kind: 'tool_result', ...(id ? { id } : {}), output: cutOutput(output), ...(isError ? { isError } : {}) }] };
    }
    case 'error': {
      const message = str(data.message);
      if (message === null) return keptLine(data);
      if (data.severity === 'warning') return { transcript: [{ kind: 'system', message }] };
      return { transcript: [{ kind: 'error', message }], failure: failureOf(message) ?? { errorCode: 'tool_crashed', message } };
    }
    case 'result':
      return parseResult(data, context);
    default:
      return keptLine(data);
  }
}

function parseResult(data: Json, context: UsageContext): ParsedLine {
  const stats = isObject(data.stats) ? data.stats : null;
  const isError = data.status !== 'success';
  const error = isObject(data.error) ? data.error : null;
  const message = error ? str(error.message) : null;
  const errorType = error ? str(error.type) : null;
  const durationMs = stats && typeof stats.duration_ms === 'number' && stats.duration_ms > 0 ? stats.duration_ms : undefined;
  const transcript: TranscriptEntry[] = [];
  if (message) transcript.push({ kind: 'error', message });
  transcript.push({ kind: 'result', isError, ...(message ? { text: message } : {}), ...(durationMs !== undefined ? { durationMs } : {}) });
  const usage = stats ? usageOf(stats, context) : null;
  const failure = message ? failureOf(message, errorType, str(data.timestamp)) : null;
  return {
    transcript,
    ...(usage ? { usage } : {}),
    result: { text: message, isError, ...(errorType ? { subtype: errorType } : {}), ...(durationMs !== undefined ? { durationMs } : {}) },
    ...(failure ? { failure } : {}),
  };
}

/**
 * The run's usage from the result's stats. With several models in one run (the `auto` model
 * routes each turn through a small classifier model first) the figures are summed and named
 * after the model that answered most; a run that used no tokens reports none.
 */
export function usageOf(stats: Json, context: UsageContext): ToolUsage | null {
  const models = isObject(stats.models) ? Object.entries(stats.models).filter(([, figures]) => isObject(figures)) as Array<[string, Json]> : [];
  const rows = models.length ? models : [['unknown', stats] as [string, Json]];
  let main = rows[0];
  const total = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 };
  for (const row of rows) {
    const [, figures] = row;
    const prompt = num(figures.input_tokens);
    const cached = Math.min(num(figures.cached), prompt);
    total.cachedInputTokens += cached;
    total.inputTokens += typeof figures.input === 'number' ? num(figures.input) : prompt - cached;
    // Thinking tokens are output the API bills but `output_tokens` leaves out; the total holds them.
    total.outputTokens += Math.max(num(figures.output_tokens), num(figures.total_tokens) - prompt);
    if (num(figures.total_tokens) > num(main[1].total_tokens)) main = row;
  }
  if (total.inputTokens + total.cachedInputTokens + total.outputTokens === 0) return null;
  return { provider: 'google', model: main[0], billingType: context.billingType, ...total };
}

const RATE_LIMITED = [/"code":\s*429\b/, /status:\s*429\b/, /RESOURCE_EXHAUSTED/, /Resource has been exhausted/i, /rate limit/i, /Please wait and try again later/, /exhausted your capacity/i, /MODEL_CAPACITY_EXHAUSTED/];
const QUOTA_EXHAUSTED = [/exhausted your daily quota/i, /INSUFFICIENT_G1_CREDITS_BALANCE/, /quota exceeded.*per ?day/i];
const AUTH = [
  /API key not valid/i, /API_KEY_INVALID/, /UNAUTHENTICATED/, /"code":\s*401\b/, /"code":\s*403\b/, /PERMISSION_DENIED/,
  /you must specify the GEMINI_API_KEY/i, /Please set an Auth method/i, /Invalid auth method selected/i,
  /GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION/, /Failed to login/i, /re-authenticate/i,
];
const MAX_TURNS = [/FatalTurnLimitedError/, /Reached max session turns/i, /Maximum session turns exceeded/i];
const SESSION_UNKNOWN = [/Error resuming session/];

/** A failure a message names, or null when it names none this driver knows. */
export function failureOf(message: string, errorType: string | null = null, at: string | null = null): Failure | null {
  const text = `${errorType ?? ''} ${message}`;
  const first = message.split('\n').find((line) => line.trim()) ?? message;
  if (MAX_TURNS.some((pattern) => pattern.test(text))) return { errorCode: 'tool_max_turns', message: first };
  if (SESSION_UNKNOWN.some((pattern) => pattern.test(text))) return { errorCode: 'tool_session_unknown', message: first };
  if (QUOTA_EXHAUSTED.some((pattern) => pattern.test(text))) return { errorCode: 'tool_quota_exhausted', message: first, retryAt: retryAt(message, at) };
  if (RATE_LIMITED.some((pattern) => pattern.test(text))) return { errorCode: 'tool_rate_limited', message: first, retryAt: retryAt(message, at) };
  if (AUTH.some((pattern) => pattern.test(text))) return { errorCode: 'tool_auth_required', message: first };
  return null;
}

/** "Suggested retry after 37s." / "Please retry in 1.5s", from the moment the tool said it (or now). */
function retryAt(message: string, at: string | null): string | null {
  const match = /(?:Suggested retry after|Please retry in)\s+([0-9.]+)(ms|s)\b/.exec(message);
  if (!match) return null;
  const delayMs = Number(match[1]) * (match[2] === 'ms' ? 1 : 1000);
  const from = at && !Number.isNaN(Date.parse(at)) ? Date.parse(at) : Date.now();
  return Number.isFinite(delayMs) ? new Date(from + delayMs).toISOString() : null;
}

/**
 * The failure of an ended execution. The exit code is the CLI's own (41 authentication, 42 bad
 * input such as a refused resume, 52 configuration, 53 turn limit, 55 untrusted folder) or, for
 * an API error, its HTTP status modulo 256 (144 for 400, 145 for 401, 173 for 429).
 */
export function classifyGemini(input: { exitCode: number | null; signal: string | null; logTail: string; sawResult: boolean }, install: string): Failure | null {
  const { exitCode, signal, logTail } = input;
  if (exitCode === 0 && !signal) return null;
  const lines = logTail.split('\n').map((line) => line.trim()).filter(Boolean);
  const reported = resultError(lines);
  const named = (reported ? failureOf(reported) : null) ?? lines.map((line) => failureOf(line)).find((failure) => failure !== null);
  if (exitCode === 41) return named ?? { errorCode: 'tool_auth_required', message: lastLine(lines) ?? 'Gemini CLI needs credentials (GEMINI_API_KEY, Vertex AI or a login)' };
  if (exitCode === 53) return { errorCode: 'tool_max_turns', message: 'Reached max session turns for this session' };
  if (named) return named;
  if (exitCode === 127 || lines.some((line) => /gemini: (command )?not found|ENOENT/.test(line))) {
    return { errorCode: 'adapter_unavailable', message: `Gemini CLI is not installed: ${install}` };
  }
  if (exitCode === 55) return { errorCode: 'tool_crashed', message: lastLine(lines) ?? 'Gemini CLI refused an untrusted folder' };
  const how = signal ? `was stopped by ${signal}` : `exited with code ${exitCode}`;
  const why = reported ?? lastLine(lines);
  return { errorCode: 'tool_crashed', message: `Gemini CLI ${how}${why ? `: ${why}` : ''}` };
}

/** The error message of the last result event in the log, the CLI's own account of why it stopped. */
function resultError(lines: string[]): string | null {
  for (let i = lines.length - 1; i >= 0; i -= 1) {
    if (!lines[i].startsWith('{"type":"result"')) continue;
    try {
      const event = JSON.parse(lines[i]) as Json;
      return isObject(event.error) ? str(event.error.message) : null;
    } catch { return null; }
  }
  return null;
}

/** The last line that says something, skipping stack frames. */
function lastLine(lines: string[]): string | null {
  for (let i = lines.length - 1; i >= 0; i -= 1) {
    if (!/^at\s/.test(lines[i]) && !/^[{}]$/.test(lines[i])) return lines[i].slice(0, 500);
  }
  return null;
}
