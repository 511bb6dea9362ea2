/**
 * Claude Code's `--output-format stream-json --verbose` lines, read into transcript entries,
 * usage, the session and the result (checked against the real output of 2.1.332 captured in
 * test/fixtures/coding-agents/claude-code/). One parser per execution: a refused resume retried
 * fresh arrives in the same execution, as a failed `result` followed by a new `system/init`.
 *
 * The events: `system` (`init`; `api_retry` while the model API fails; `permission_denied`;
 * `thinking_tokens` progress), `assistant` (one event per content block; a failed model call is a
 * synthetic message with `error` and `is_api_error_message`), `user` (tool results),
 * `rate_limit_event` (subscription accounts only) and one `result` at the end.
 */
import type { Failure, ParsedLine, ToolUsage, TranscriptEntry } from './driver.ts';

const RESULT_TEXT_LIMIT = 8 * 1024;

type Json = Record<string, unknown>;

export interface ClaudeStreamState {
  model: string | null;
  apiKeySource: string | null;
  /** A `rate_limit_event` was seen: unified limits exist only for a Claude subscription. */
  subscription: boolean;
  /** The latest rate-limit figures: `resetsAt` gives a retry time. */
  rateLimit: Json | null;
  /** The error of the latest synthetic assistant message (the model API refused). */
  apiError: { kind: string; status: number | null; text: string; rateLimit: Json | null } | null;
  sawInit: boolean;
}

export function claudeStreamParser(): { line(data: Json): ParsedLine } {
  const state: ClaudeStreamState = { model: null, apiKeySource: null, subscription: false, rateLimit: null, apiError: null, sawInit: false };
  return {
    line(data) {
      switch (data.type) {
        case 'system': return systemLine(state, data);
        case 'assistant': return assistantLine(state, data);
        case 'user': return userLine(data);
        case 'rate_limit_event': return rateLimitLine(state, data);
        case 'result': return resultLine(state, data);
        default: return keep(data);
      }
    },
  };
}

function systemLine(state: ClaudeStreamState, data: Json): ParsedLine {
  switch (data.subtype) {
    case 'init': {
      // A new init is a new start (a fresh retry after a refused resume): forget the old one's errors.
      state.sawInit = true;
      state.apiError = null;
      state.model = str(data.model);
      state.apiKeySource = str(data.apiKeySource);
      const sessionId = str(data.session_id);
      const entry: TranscriptEntry = { kind: 'init' };
      if (sessionId) entry.sessionId = sessionId;
      if (state.model) entry.model = state.model;
      if (str(data.claude_code_version)) entry.version = str(data.claude_code_version)!;
      if (Array.isArray(data.tools)) entry.tools = data.tools.filter((tool): tool is string => typeof tool === 'string');
      return sessionId ? { transcript: [entry], sessionId } : { transcript: [entry] };
    }
    case 'api_retry': {
      const delay = num(data.retry_delay_ms);
      const message = `Model API error ${data.error_status ?? ''} (${data.error ?? 'unknown'}); retry ${data.attempt ?? '?'} of ${data.max_retries ?? '?'}${delay === null ? '' : ` in ${Math.round(delay / 100) / 10} s`}`;
      return { transcript: [{ kind: 'system', message: message.replace('  ', ' ') }] };
    }
    case 'permission_denied':
      return { transcript: [{ kind: 'system', message: `Permission denied for ${data.tool_name ?? 'a tool'}: ${data.message ?? ''}`.trim() }] };
    case 'thinking_tokens':
    case 'task_started':
    case 'task_progress':
    case 'task_updated':
    case 'task_notification':
    case 'task_summary':
      return {}; // progress of a thinking block or a running command: the block and the tool result carry the content
    case 'compact_boundary':
      return { transcript: [{ kind: 'system', message: 'Claude Code compacted the conversation' }] };
    default:
      return keep(data);
  }
}

function assistantLine(state: ClaudeStreamState, data: Json): ParsedLine {
  const message = obj(data.message);
  const blocks = Array.isArray(message?.content) ? message.content as Json[] : [];
  if (data.is_api_error_message === true || typeof data.error === 'string') {
    const text = blocks.map((block) => str(block.text) ?? '').join('').trim() || String(data.error ?? 'model API error');
    const params = obj(data.api_error_params);
    state.apiError = { kind: String(data.error ?? 'unknown'), status: num(data.api_error_status), text, rateLimit: obj(params?.rate_limit_info) };
    return { transcript: [{ kind: 'error', message: text }] };
  }
  const transcript: TranscriptEntry[] = [];
  for (const block of blocks) {
    if (block.type === 'text' && str(block.text)) transcript.push({ kind: 'assistant', text: block.text as string });
    else if (block.type === 'thinking' && str(block.thinking)) transcript.push({ kind: 'thinking', text: block.thinking as string });
    else if (block.type === 'tool_use') transcript.push({ kind: 'tool_call', ...(str(block.id) ? { id: block.id as string } : {}), name: str(block.name) ?? 'unknown', input: block.input ?? {} });
    else if (block.type !== 'redacted_thinking' && block.type !== 'text' && block.type !== 'thinking') transcript.push({ kind: 'log', line: JSON.stringify(block) });
  }
  return { transcript };
}

function userLine(data: Json): ParsedLine {
  const content = obj(data.message)?.content;
  if (!Array.isArray(content)) return {};
  const transcript: TranscriptEntry[] = [];
  for (const block of content as Json[]) {
    if (block.type !== 'tool_result') continue; // the prompt itself and Claude Code's reminders
    const entry: TranscriptEntry = { kind: 'tool_result', output: cut(resultText(block.content)) };
    if (str(block.tool_use_id)) entry.id = block.tool_use_id as string;
    if (block.is_error === true) entry.isError = true;
    transcript.push(entry);
  }
  return { transcript };
}

function rateLimitLine(state: ClaudeStreamState, data: Json): ParsedLine {
  state.subscription = true;
  const info = obj(data.rate_limit_info);
  state.rateLimit = info;
  if (!info || info.status === 'allowed') return {};
  const resets = resetTime(info);
  return { transcript: [{ kind: 'system', message: `Claude subscription limit ${info.status}${info.rateLimitType ? ` (${info.rateLimitType})` : ''}${resets ? `, resets at ${resets}` : ''}` }] };
}

function resultLine(state: ClaudeStreamState, data: Json): ParsedLine {
  const isError = data.is_error === true;
  const text = str(data.result);
  const errors = Array.isArray(data.errors) ? data.errors.filter((e): e is string => typeof e === 'string') : [];
  const transcript: TranscriptEntry[] = errors.map((message) => ({ kind: 'error', message }));
  const entry: TranscriptEntry = { kind: 'result', isError };
  if (text !== null) entry.text = text;
  if (num(data.num_turns) !== null) entry.turns = num(data.num_turns)!;
  if (num(data.duration_ms) !== null) entry.durationMs = num(data.duration_ms)!;
  transcript.push(entry);
  const parsed: ParsedLine = { transcript, result: { text, isError, ...(str(data.subtype) ? { subtype: data.subtype as string } : {}) } };
  const usage = usageOf(state, data);
  if (usage) parsed.usage = usage;
  // A result without an init is a start that never began (an unknown session): its id is not a session to keep.
  if (state.sawInit && str(data.session_id)) parsed.sessionId = data.session_id as string;
  if (isError) parsed.failure = failureOf(state, data, text, errors);
  return parsed;
}

/**
 * Keel's usage from the result's totals: Anthropic's `input_tokens` excludes the cache, so the
 * uncached input is `input_tokens` plus the cache writes (`cache_creation_input_tokens`, input
 * read fresh and then cached), and the cached input is the cache reads.
 */
function usageOf(state: ClaudeStreamState, data: Json): ToolUsage | null {
  const usage = obj(data.usage);
  if (!usage) return null;
  const input = num(usage.input_tokens) ?? 0;
  const cacheWrite = num(usage.cache_creation_input_tokens) ?? 0;
  const cacheRead = num(usage.cache_read_input_tokens) ?? 0;
  const output = num(usage.output_tokens) ?? 0;
  const cost = num(data.total_cost_usd);
  if (input + cacheWrite + cacheRead + output === 0 && !cost) return null;
  const out: ToolUsage = {
    provider: 'anthropic',
    model: modelOf(state, data),
    billingType: billingType(state),
    inputTokens: input + cacheWrite,
    cachedInputTokens: cacheRead,
    cacheWriteTokens: cacheWrite,
    outputTokens: output,
  };
  if (cost !== null) out.costUsd = cost;
  return out;
}

/** The session's model, or the model that cost most when the result names others (side calls). */
function modelOf(state: ClaudeStreamState, data: Json): string {
  const perModel = obj(data.modelUsage);
  const names = perModel ? Object.keys(perModel) : [];
  if (state.model && (names.length === 0 || names.includes(state.model))) return state.model;
  const costliest = names.sort((a, b) => (num(obj(perModel![b])?.costUSD) ?? 0) - (num(obj(perModel![a])?.costUSD) ?? 0))[0];
  return costliest ?? state.model ?? 'unknown';
}

/** An API key is metered; unified rate limits mean a Claude subscription; anything else (a bearer token, a cloud provider) is not known. */
function billingType(state: ClaudeStreamState): ToolUsage['billingType'] {
  if (state.apiKeySource === 'ANTHROPIC_API_KEY' || state.apiKeySource === 'apiKeyHelper') return 'metered_api';
  if (state.subscription) return 'subscription_included';
  return 'unknown';
}

function failureOf(state: ClaudeStreamState, data: Json, text: string | null, errors: string[]): Failure {
  const said = [...errors, text ?? ''].join(' ').trim();
  if (data.subtype === 'error_max_turns') return { errorCode: 'tool_max_turns', message: `Claude Code stopped at its turn limit: ${said}` };
  if (data.subtype === 'error_max_budget_usd') return { errorCode: 'tool_quota_exhausted', message: `Claude Code reached its --max-budget-usd: ${said}` };
  if (errors.some((e) => e.includes(UNKNOWN_SESSION))) return { errorCode: 'tool_session_unknown', message: said };
  const api = state.apiError;
  if (api?.kind === 'authentication_failed' || data.api_error_status === 401) {
    return { errorCode: 'tool_auth_required', message: `Claude Code is not signed in: ${api?.text ?? said}. Set ANTHROPIC_API_KEY (a secret reference) or CLAUDE_CODE_OAUTH_TOKEN (from \`claude setup-token\`) in the agent's env.` };
  }
  if (api?.kind === 'billing_error') return { errorCode: 'tool_quota_exhausted', message: `Claude Code's account has no credit left: ${api.text}` };
  if (api?.kind === 'rate_limit' || data.api_error_status === 429) {
    // A subscription's 5-hour or weekly limit is a rate limit too: it says when it resets.
    const info = api?.rateLimit ?? state.rateLimit;
    return { errorCode: 'tool_rate_limited', message: api?.text ?? said, retryAt: info ? resetTime(info) : null };
  }
  if (api?.status === 529) return { errorCode: 'tool_rate_limited', message: api.text, retryAt: null };
  return { errorCode: 'tool_crashed', message: said ? `Claude Code failed: ${said}` : 'Claude Code failed without saying why' };
}

export const UNKNOWN_SESSION = 'No conversation found with session ID';

/** `resetsAt` is in seconds since the epoch. */
export function resetTime(info: Json): string | null {
  const at = num(info.resetsAt);
  return at === null ? null : new Date(at * 1000).toISOString();
}

function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (typeof part?.text === 'string' ? part.text : '')).join('');
  return '';
}

/** The text cut to 8 KiB of UTF-8 on a character boundary (no Buffer: plugin code runs in an isolate). */
function cut(text: string): string {
  let bytes = 0;
  let end = 0;
  for (const char of text) {
    const code = char.codePointAt(0)!;
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
    if (bytes > RESULT_TEXT_LIMIT) return `${text.slice(0, end)}…`;
    end += char.length;
  }
  return text;
}

function keep(data: Json): ParsedLine { return { transcript: [{ kind: 'log', line: JSON.stringify(data) }] }; }
function obj(value: unknown): Json | null { return value && typeof value === 'object' && !Array.isArray(value) ? value as Json : null; }
function str(value: unknown): string | null { return typeof value === 'string' && value !== '' ? value : null; }
function num(value: unknown): number | null { return typeof value === 'number' && Number.isFinite(value) ? value : null; }
