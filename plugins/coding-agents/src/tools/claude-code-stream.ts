/**
 * Claude Code's `--output-format stream-json --verbose` lines, read into transcript entries,
 * usage, the session and the result (checked against the real output of 2.1.332 captured in
 * test/fixtures/coding-agents/claude-code/).
 *
 * The events: `system` (`init`; `api_retry` while the model API fails; `permission_denied`;
 * progress of thinking and of running commands), `assistant` (one event per content block; a
 * failed model call is a synthetic message with `error` and `is_api_error_message`), `user` (tool
 * results), `rate_limit_event` (subscription accounts only) and one `result` at the end.
 *
 * The core hands a fresh parser to each batch of lines, so every line is read on its own: a
 * failure is named by the line that carries its facts (the synthetic assistant message for a
 * refused model call, with its reset time; the result for turn and budget limits). The billing
 * kind is the one exception: the result does not say how Claude Code signed in, so it comes from
 * the agent's configuration (the credential variable its env sets: ANTHROPIC_API_KEY is metered,
 * CLAUDE_CODE_OAUTH_TOKEN a subscription), else from the batch's `init` (an API key) or a
 * `rate_limit_event` (a subscription).
 */
import type { Failure, LocalConfig, ParsedLine, ToolUsage, TranscriptEntry } from './driver.ts';
import { cutOutput, keptLine } from './lines.ts';

type Json = Record<string, unknown>;

/** What earlier lines of the same batch said: hints only, never needed to read a line. */
interface BatchHints { model: string | null; apiKeySource: string | null; subscription: boolean }

export function claudeStreamParser(config?: LocalConfig): { line(data: Json): ParsedLine } {
  const configured = config ? Object.keys(config.env) : [];
  const hints: BatchHints = {
    model: null, apiKeySource: configured.includes('ANTHROPIC_API_KEY') ? 'ANTHROPIC_API_KEY' : null,
    subscription: !configured.includes('ANTHROPIC_API_KEY') && configured.includes('CLAUDE_CODE_OAUTH_TOKEN'),
  };
  return {
    line(data) {
      switch (data.type) {
        case 'system': return systemLine(hints, data);
        case 'assistant': return assistantLine(data);
        case 'user': return userLine(data);
        case 'rate_limit_event': return rateLimitLine(hints, data);
        case 'result': return resultLine(hints, data);
        default: return keptLine(data);
      }
    },
  };
}

function systemLine(hints: BatchHints, data: Json): ParsedLine {
  switch (data.subtype) {
    case 'init': {
      hints.model = str(data.model);
      hints.apiKeySource = str(data.apiKeySource);
      const sessionId = str(data.session_id);
      const entry: TranscriptEntry = { kind: 'init' };
      if (sessionId) entry.sessionId = sessionId;
      if (hints.model) entry.model = hints.model;
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
      return keptLine(data);
  }
}

/** A model call Claude Code gave up on (after its own retries) ends the turn: the line names the failure. */
function assistantLine(data: Json): ParsedLine {
  const message = obj(data.message);
  const blocks = Array.isArray(message?.content) ? message.content as Json[] : [];
  if (data.is_api_error_message === true || typeof data.error === 'string') {
    const text = blocks.map((block) => str(block.text) ?? '').join('').trim() || String(data.error ?? 'model API error');
    return { transcript: [{ kind: 'error', message: text }], failure: apiFailure(data, text) };
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

function apiFailure(data: Json, text: string): Failure {
  const kind = String(data.error ?? '');
  const status = num(data.api_error_status);
  if (kind === 'authentication_failed' || status === 401) {
    return { errorCode: 'tool_auth_required', message: `Claude Code is not signed in: ${text}. Set ANTHROPIC_API_KEY (a secret reference) or CLAUDE_CODE_OAUTH_TOKEN (from \`claude setup-token\`) in the agent's env.` };
  }
  if (kind === 'billing_error') return { errorCode: 'tool_quota_exhausted', message: `Claude Code's account has no credit left: ${text}` };
  if (kind === 'rate_limit' || status === 429) {
    // A subscription's 5-hour or weekly limit is a rate limit too: it says when it resets.
    const info = obj(obj(data.api_error_params)?.rate_limit_info);
    return { errorCode: 'tool_rate_limited', message: text, retryAt: info ? resetTime(info) : null };
  }
  if (status === 529) return { errorCode: 'tool_rate_limited', message: text, retryAt: null };
  return { errorCode: 'tool_crashed', message: `Claude Code stopped on a model API error: ${text}` };
}

function userLine(data: Json): ParsedLine {
  const content = obj(data.message)?.content;
  if (!Array.isArray(content)) return {};
  const transcript: TranscriptEntry[] = [];
  for (const block of content as Json[]) {
    if (block.type !== 'tool_result') continue; // the prompt itself and Claude Code's reminders
    const entry: TranscriptEntry = { kind: 'tool_result', output: cutOutput(resultText(block.content)) };
    if (str(block.tool_use_id)) entry.id = block.tool_use_id as string;
    if (block.is_error === true) entry.isError = true;
    transcript.push(entry);
  }
  return { transcript };
}

function rateLimitLine(hints: BatchHints, data: Json): ParsedLine {
  hints.subscription = true;
  const info = obj(data.rate_limit_info);
  if (!info || info.status === 'allowed') return {};
  const resets = resetTime(info);
  return { transcript: [{ kind: 'system', message: `Claude subscription limit ${info.status}${info.rateLimitType ? ` (${info.rateLimitType})` : ''}${resets ? `, resets at ${resets}` : ''}` }] };
}

function resultLine(hints: BatchHints, data: Json): ParsedLine {
  const isError = data.is_error === true;
  const text = str(data.result);
  const turns = num(data.num_turns);
  const durationMs = num(data.duration_ms);
  const errors = Array.isArray(data.errors) ? data.errors.filter((e): e is string => typeof e === 'string') : [];
  const transcript: TranscriptEntry[] = errors.map((message) => ({ kind: 'error', message }));
  const entry: TranscriptEntry = { kind: 'result', isError };
  if (text !== null) entry.text = text;
  if (turns !== null) entry.turns = turns;
  if (durationMs !== null) entry.durationMs = durationMs;
  transcript.push(entry);
  const parsed: ParsedLine = {
    transcript,
    result: { text, isError, ...(str(data.subtype) ? { subtype: data.subtype as string } : {}), ...(turns !== null ? { turns } : {}), ...(durationMs !== null ? { durationMs } : {}) },
  };
  const usage = usageOf(hints, data);
  if (usage) parsed.usage = usage;
  // A start that never began (an unknown session) names an id that is no session to keep.
  if (str(data.session_id) && !(data.subtype === 'error_during_execution' && !turns)) parsed.sessionId = data.session_id as string;
  const failure = resultFailure(data, text, errors);
  if (failure) parsed.failure = failure;
  return parsed;
}

/**
 * The limits the result itself reports. A refused model call was named by its assistant line;
 * an unknown session is left to the kernel's fresh retry (a failure named here would outlive a
 * retry that succeeds) and then to classify.
 */
function resultFailure(data: Json, text: string | null, errors: string[]): Failure | null {
  if (data.is_error !== true) return null;
  const said = [...errors, text ?? ''].join(' ').trim();
  if (data.subtype === 'error_max_turns') return { errorCode: 'tool_max_turns', message: `Claude Code stopped at its turn limit: ${said}` };
  if (data.subtype === 'error_max_budget_usd') return { errorCode: 'tool_quota_exhausted', message: `Claude Code reached its --max-budget-usd: ${said}` };
  if (data.subtype === 'error_during_execution' && !errors.some((e) => e.includes(UNKNOWN_SESSION))) {
    return { errorCode: 'tool_crashed', message: said ? `Claude Code failed: ${said}` : 'Claude Code failed without saying why' };
  }
  return null;
}

/**
 * The result's totals (the per-message usage of `assistant` events is the stream's start
 * figure). Anthropic's `input_tokens` excludes the cache: it is the uncached input, the cache
 * writes come apart (the core counts them as uncached input), the cache reads are the cached part.
 */
function usageOf(hints: BatchHints, data: Json): ToolUsage | null {
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
    model: modelOf(hints, data),
    billingType: billingType(hints),
    inputTokens: input,
    cachedInputTokens: cacheRead,
    cacheWriteTokens: cacheWrite,
    outputTokens: output,
  };
  if (cost !== null) out.costUsd = cost;
  return out;
}

/** The session's model when the batch named it, else the model that cost most (side calls use a smaller one). */
function modelOf(hints: BatchHints, data: Json): string {
  const perModel = obj(data.modelUsage);
  const names = perModel ? Object.keys(perModel) : [];
  if (hints.model && (names.length === 0 || names.includes(hints.model))) return hints.model;
  const costliest = names.sort((a, b) => (num(obj(perModel![b])?.costUSD) ?? 0) - (num(obj(perModel![a])?.costUSD) ?? 0))[0];
  return costliest ?? hints.model ?? 'unknown';
}

/** An API key is metered; unified rate limits mean a Claude subscription; otherwise (a bearer token, a cloud provider, an init in an earlier batch) not known. */
function billingType(hints: BatchHints): ToolUsage['billingType'] {
  if (hints.apiKeySource === 'ANTHROPIC_API_KEY' || hints.apiKeySource === 'apiKeyHelper') return 'metered_api';
  if (hints.subscription) return 'subscription_included';
  return 'unknown';
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

function obj(value: unknown): Json | null { return value && typeof value === 'object' && !Array.isArray(value) ? value as Json : null; }
function str(value: unknown): string | null { return typeof value === 'string' && value !== '' ? value : null; }
function num(value: unknown): number | null { return typeof value === 'number' && Number.isFinite(value) ? value : null; }
