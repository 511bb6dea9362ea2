import type { Failure, ParsedLine, ToolUsage, TranscriptEntry } from './driver.ts';
import { cutOutput, keptLine } from './lines.ts';

/**
 * Reading `codex exec --json` (Codex CLI 0.171; the fixtures under
 * test/fixtures/coding-agents/codex/ are its real output): one JSON event per line:
 *
 *   thread.started {thread_id}            the thread to resume next time
 *   turn.started
 *   item.started / item.updated / item.completed {item: {id, type, ...}}
 *     agent_message {text} · reasoning {text} · command_execution {command, aggregated_output,
 *     exit_code, status} · file_change {changes: [{path, kind}], status} · mcp_tool_call
 *     {server, tool, arguments, result, error, status} · web_search {query} · todo_list
 *     {items: [{text, completed}]} · error {message}: a warning, the run goes on (an unknown
 *     model's missing metadata, the fall-back from WebSockets to HTTPS)
 *   error {message}                        a notice ("Reconnecting... 2/5 (...)"), or the reason
 *                                          of the turn.failed that follows
 *   turn.completed {usage}                 totals over the whole THREAD so far: a resumed thread
 *                                          reports what earlier runs used too
 *   turn.failed {error: {message}}
 *
 * The parser keeps no state between lines (the core hands it lines in batches).
 */


export interface UsageContext { model: string; billingType: ToolUsage['billingType'] }

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);
const num = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0);

/** One event's meaning. */
export function parseCodexLine(data: Json, usage: UsageContext): ParsedLine {
  switch (data.type) {
    case 'thread.started': {
      const threadId = str(data.thread_id);
      return threadId ? { sessionId: threadId, transcript: [{ kind: 'init', sessionId: threadId, model: usage.model }] } : keptLine(data);
    }
    case 'turn.started':
      return {};
    case 'turn.completed':
      return isObject(data.usage) ? { usage: toolUsage(data.usage, usage) } : keptLine(data);
    case 'turn.failed': {
      const message = (isObject(data.error) ? str(data.error.message) : null) ?? 'the turn failed';
      return { transcript: [{ kind: 'error', message }], result: { text: message, isError: true }, failure: failureOf(message) };
    }
    case 'error': {
      const message = str(data.message);
      if (message === null) return keptLine(data);
      // A retry notice is the tool's own business; the error that ends the turn comes again in turn.failed.
      return { transcript: [{ kind: message.startsWith('Reconnecting...') ? 'system' : 'error', message }] };
    }
    case 'item.started':
    case 'item.updated':
    case 'item.completed':
      return isObject(data.item) ? parseItem(data.type, data.item) ?? keptLine(data) : keptLine(data);
    default:
      return keptLine(data);
  }
}

/** An item event's meaning, or null when its item type is not one this parser knows. */
function parseItem(event: string, item: Json): ParsedLine | null {
  const id = str(item.id) ?? undefined;
  const completed = event === 'item.completed';
  const started = event === 'item.started';
  const entries = (...list: TranscriptEntry[]): ParsedLine => ({ transcript: list });
  switch (item.type) {
    case 'agent_message': {
      const text = str(item.text);
      if (text === null) return null;
      // The last message of the run is its result; each one replaces the one before.
      return completed ? { transcript: [{ kind: 'assistant', text }], result: { text, isError: false } } : {};
    }
    case 'reasoning': {
      const text = str(item.text);
      if (text === null) return null;
      return completed ? entries({ kind: 'thinking', text }) : {};
    }
    case 'command_execution': {
      if (started) return entries({ kind: 'tool_call', id, name: 'shell', input: { command: str(item.command) ?? '' } });
      if (!completed) return {};
      const exitCode = typeof item.exit_code === 'number' ? item.exit_code : null;
      return entries({ kind: 'tool_result', id, output: cutOutput(str(item.aggregated_output) ?? ''), isError: item.status === 'failed' || (exitCode !== null && exitCode !== 0) });
    }
    case 'file_change': {
      if (!completed) return {};
      const changes = Array.isArray(item.changes) ? item.changes.filter(isObject) : [];
      const summary = changes.map((change) => `${str(change.kind) ?? 'update'} ${str(change.path) ?? '?'}`).join('\n');
      return entries({ kind: 'tool_call', id, name: 'apply_patch', input: { changes } }, { kind: 'tool_result', id, output: cutOutput(summary), isError: item.status === 'failed' });
    }
    case 'mcp_tool_call': {
      const name = `${str(item.server) ?? 'mcp'}.${str(item.tool) ?? 'tool'}`;
      if (started) return entries({ kind: 'tool_call', id, name, input: item.arguments ?? {} });
      if (!completed) return {};
      const error = isObject(item.error) ? str(item.error.message) : null;
      return entries({ kind: 'tool_result', id, output: cutOutput(error ?? JSON.stringify(item.result ?? null)), isError: error !== null || item.status === 'failed' });
    }
    case 'web_search':
      return completed ? entries({ kind: 'tool_call', id, name: 'web_search', input: { query: str(item.query) ?? '' } }) : {};
    case 'todo_list': {
      if (started) return {};
      const items = Array.isArray(item.items) ? item.items.filter(isObject) : [];
      return entries({ kind: 'system', message: `Plan:\n${items.map((todo) => `${todo.completed === true ? '[x]' : '[ ]'} ${str(todo.text) ?? ''}`).join('\n')}` });
    }
    case 'error': {
      // An error item is a warning: Codex goes on (the run fails only through turn.failed).
      const message = str(item.message);
      return message === null ? null : completed ? entries({ kind: 'system', message }) : {};
    }
    default:
      return null;
  }
}

/**
 * turn.completed's usage: OpenAI's input_tokens includes the cached part (and cache writes), so
 * the uncached input is what remains. Totals over the thread: the core meters the difference
 * to what earlier runs of the thread recorded.
 */
function toolUsage(raw: Json, context: UsageContext): ToolUsage {
  const cached = num(raw.cached_input_tokens);
  const cacheWrite = num(raw.cache_write_input_tokens);
  return {
    provider: 'openai', model: context.model, billingType: context.billingType,
    inputTokens: Math.max(0, num(raw.input_tokens) - cached - cacheWrite), cachedInputTokens: cached,
    ...(cacheWrite > 0 ? { cacheWriteTokens: cacheWrite } : {}),
    outputTokens: num(raw.output_tokens), cumulative: true,
  };
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

/**
 * The reset time of a usage limit as Codex words it ("try again at 8:13 AM", "try again at Dec
 * 3rd, 2026 12:13 PM"): in the process's time zone, which the driver sets to UTC. A time without
 * a date is its next occurrence.
 */
export function resetTime(message: string, now = new Date()): string | null {
  const at = /try again at (?:([A-Za-z]{3})[a-z]* (\d{1,2})(?:st|nd|rd|th)?, (\d{4}) )?(\d{1,2}):(\d{2})\s*([AP]M)/i.exec(message);
  if (at) {
    const hour = (Number(at[4]) % 12) + (at[6]!.toUpperCase() === 'PM' ? 12 : 0);
    if (at[1]) {
      const month = MONTHS.indexOf(at[1].toLowerCase());
      return month < 0 ? null : new Date(Date.UTC(Number(at[3]), month, Number(at[2]), hour, Number(at[5]))).toISOString();
    }
    const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate(), hour, Number(at[5]));
    return new Date(today >= now.getTime() ? today : today + 86_400_000).toISOString();
  }
  const after = /try again in (?:(\d+)h)?\s*(?:(\d+)m(?!s))?\s*(?:(\d+(?:\.\d+)?)s)?/i.exec(message);
  if (after && (after[1] || after[2] || after[3])) {
    const seconds = Number(after[1] ?? 0) * 3_600 + Number(after[2] ?? 0) * 60 + Number(after[3] ?? 0);
    return new Date(now.getTime() + Math.ceil(seconds) * 1_000).toISOString();
  }
  return null;
}

const CREDENTIAL_HINT = 'give the agent a credential: CODEX_API_KEY (or OPENAI_API_KEY) as a secret reference in adapterConfig.env, or `codex login` in the agent\'s home';

/** What a failure message of Codex means: a failure a user can act on, else the tool's crash with its message. */
export function failureOf(message: string): Failure {
  if (/no rollout found for thread id|thread\/resume failed/i.test(message)) {
    return { errorCode: 'tool_session_unknown', message: `Codex no longer has the thread to resume: ${message}` };
  }
  if (/401 Unauthorized|invalid_api_key|Missing environment variable|not logged in|login required|403 Forbidden/i.test(message)) {
    return { errorCode: 'tool_auth_required', message: `Codex is not authenticated with its model provider (${message}): ${CREDENTIAL_HINT}` };
  }
  if (/hit your usage limit|rate limit|429 Too Many Requests/i.test(message)) {
    return { errorCode: 'tool_rate_limited', message: `Codex was rate limited by its model provider: ${message}`, retryAt: resetTime(message) };
  }
  if (/quota exceeded|insufficient_quota|billing|upgrade to (Plus|Pro)/i.test(message)) {
    return { errorCode: 'tool_quota_exhausted', message: `Codex's model provider refuses for lack of quota or plan: ${message}` };
  }
  return { errorCode: 'tool_crashed', message: `Codex failed: ${message}` };
}

/**
 * The failure of an ended `codex exec` from its exit and log tail: the turn.failed it printed,
 * else the `Error:` line it wrote to stderr before any event (an unknown thread), else a crash.
 */
export function classifyCodex(input: { exitCode: number | null; signal: string | null; logTail: string; sawResult: boolean }): Failure | null {
  let turnFailed: string | null = null;
  let stderrError: string | null = null;
  for (const line of input.logTail.split('\n')) {
    const trimmed = line.trim();
    if (trimmed.startsWith('{')) {
      try {
        const event = JSON.parse(trimmed) as Json;
        if (event.type === 'turn.failed') turnFailed = (isObject(event.error) ? str(event.error.message) : null) ?? 'the turn failed';
      } catch { /* a plain line that starts with a brace */ }
    } else if (/^Error:/.test(trimmed)) stderrError = trimmed.slice('Error:'.length).trim();
  }
  if (input.exitCode === 0 && !input.signal && turnFailed === null) return null;
  if (turnFailed !== null) return failureOf(turnFailed);
  if (stderrError !== null) return failureOf(stderrError);
  if (input.signal) return { errorCode: 'tool_crashed', message: `Codex was ended by signal ${input.signal}` };
  return { errorCode: 'tool_crashed', message: `Codex exited with code ${input.exitCode} without reporting why; its log says more` };
}
