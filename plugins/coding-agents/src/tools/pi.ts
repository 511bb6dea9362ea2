import { catalogFacts, type Failure, type Launch, type LaunchInput, type LocalConfig, type ParsedLine, type ToolDriver, type TranscriptEntry, type ToolUsage } from './driver.ts';
import { isObject, lastAttempt, num, providerFailure, str } from './provider-failures.ts';
import { cutOutput } from './lines.ts';

/**
 * Pi (`pi`, npm `@mariozechner/pi-coding-agent`), the `pi_local` adapter.
 *
 * A run is `pi --mode json -p` with the prompt on stdin: the session header
 * (`{type: 'session', id, cwd}`) first, then the agent's events: `message_end` of each
 * assistant message (its text, thinking and tool calls, its `usage` with `input` uncached,
 * `cacheRead`, `cacheWrite`, `output` and `cost.total`, its `stopReason`), `tool_execution_end`
 * (a tool's result), `auto_retry_start`/`auto_retry_end` around Pi's own retries, and a great many
 * `message_update` deltas the transcript does not need (the `message_end` carries the whole).
 *
 * Pi's JSON mode exits 0 even when the model call failed: the failure is the assistant message's
 * `stopReason: 'error'` with its `errorMessage`. Pi retries what looks transient (rate limits,
 * server errors) up to three times, so such an error is final only at `auto_retry_end` with
 * `success: false`; any other error is final at once.
 *
 * Pi has no permission prompts and no sandbox: its tools run unattended as the agent's user.
 * Sessions are files in `PI_CODING_AGENT_SESSION_DIR` (the agent's home), resumed by id; an id Pi
 * does not find ends the run with `No session found matching '<id>'` and exit code 1. Its
 * configuration folder (`PI_CODING_AGENT_DIR`: `models.json` for custom providers, `auth.json`,
 * `settings.json`, a global `AGENTS.md`) is `.pi/agent` in the home unless `env` points it at a
 * folder the operator keeps (the agent user must be able to write there: Pi writes `auth.json`).
 *
 * Keel's model gateway does not serve Pi (no `gateway`): its providers and their base URLs live
 * only in that configuration folder's `models.json`, which the operator owns, so a run keeps Pi's
 * own credentials; `adapterConfig.modelProvider` is accepted and ignored.
 */

const AGENT_DIR = '.pi/agent';
const SESSION_UNKNOWN = 'No session found matching';
/** Pi refuses to resume a session whose working directory is gone (a configured cwd removed or changed). */
const SESSION_FOLDER_GONE = 'Stored session working directory does not exist';
const INSTRUCTIONS_FILE = '.keel/pi/instructions.md';

function baseArgs(config: LocalConfig): string[] {
  const args = ['--mode', 'json', '-p'];
  if (config.model) args.push('--model', config.model);
  if (config.effort) args.push('--thinking', config.effort);
  return args;
}

function launch(input: LaunchInput): Launch {
  // The instructions as a file of the working directory (beside the runtime's own .keel/ files),
  // appended to Pi's system prompt: it reads the path relative to its working directory, and
  // this holds whatever configuration folder `env` points Pi at.
  const instructions = input.instructions === null ? [] : ['--append-system-prompt', INSTRUCTIONS_FILE];
  const fresh = [...baseArgs(input.config), ...instructions, ...input.config.extraArgs];
  const args = input.sessionId ? [...baseArgs(input.config), ...instructions, '--session', input.sessionId, ...input.config.extraArgs] : fresh;
  return {
    args,
    stdin: input.prompt,
    env: TOOL_ENV,
    homeVariables: HOME_VARIABLES,
    // ~/.agents/skills is read whatever PI_CODING_AGENT_DIR says.
    homeFiles: input.skills.flatMap((skill) => skill.files.map((file) => ({ ...file, path: `.agents/skills/${skill.runtimeName}/${file.path}` }))),
    homeReplace: ['.agents/skills'],
    files: input.instructions === null ? [] : [{ path: INSTRUCTIONS_FILE, content: input.instructions }],
    retryFresh: input.sessionId ? { args: fresh, ifOutputIncludes: [SESSION_UNKNOWN, SESSION_FOLDER_GONE] } : null,
  };
}

/** No network at start-up (update and package checks), no install telemetry. */
const TOOL_ENV: Record<string, string> = { PI_OFFLINE: '1', PI_TELEMETRY: '0', PI_SKIP_VERSION_CHECK: '1' };

/** Sessions stay in the agent's home even when `env` points the configuration folder at a shared one. */
const HOME_VARIABLES: Record<string, string> = {
  PI_CODING_AGENT_DIR: AGENT_DIR,
  PI_CODING_AGENT_SESSION_DIR: `${AGENT_DIR}/sessions`,
};

/** Pi's own test of a transient error (core/agent-session.js `_isRetryableError`): such an error is retried, so it is not final yet. */
const RETRIED_BY_PI = /overloaded|provider.?returned.?error|rate.?limit|too many requests|429|500|502|503|504|service.?unavailable|server.?error|internal.?error|network.?error|connection.?error|connection.?refused|connection.?lost|websocket.?closed|websocket.?error|other side closed|fetch failed|upstream.?connect|reset before headers|socket hang up|ended without|http2 request did not get a response|timed? out|timeout|terminated|retry delay/i;

/** Events the transcript takes nothing from: lifecycle marks, streaming deltas, and messages a later event carries whole. */
const QUIET = new Set(['agent_start', 'agent_end', 'turn_start', 'turn_end', 'message_start', 'message_update', 'tool_execution_start', 'tool_execution_update', 'queue_update', 'compaction_start']);

function parser(): { line(data: Record<string, unknown>): ParsedLine } {
  return {
    line(data) {
      const type = str(data.type);
      if (type === 'session' && str(data.id)) {
        const sessionId = str(data.id)!;
        return { sessionId, transcript: [{ kind: 'init', sessionId }] };
      }
      if (type === 'message_end' && isObject(data.message)) return messageEnd(data.message) ?? {};
      if (type === 'tool_execution_end') return toolResult(data);
      if (type === 'auto_retry_start') {
        return { transcript: [{ kind: 'system', message: `Pi retries after an error (attempt ${num(data.attempt)} of ${num(data.maxAttempts)}): ${str(data.errorMessage) ?? ''}` }] };
      }
      if (type === 'auto_retry_end') return data.success === false ? finalError(str(data.finalError) ?? 'Pi gave up retrying') : {};
      if (type === 'compaction_end') return { transcript: [{ kind: 'system', message: `Pi compacted the session (${str(data.reason) ?? 'threshold'})` }] };
      if (type && QUIET.has(type)) return {};
      return { transcript: [{ kind: 'log', line: JSON.stringify(data) }] };
    },
  };
}

/** An assistant message: its content, its usage, and the end it reports. User and tool-result messages repeat what is already shown. */
function messageEnd(message: Record<string, unknown>): ParsedLine | null {
  if (message.role !== 'assistant') return null;
  const content = Array.isArray(message.content) ? message.content.filter(isObject) : [];
  const transcript: TranscriptEntry[] = [];
  for (const block of content) {
    if (block.type === 'text' && str(block.text)) transcript.push({ kind: 'assistant', text: str(block.text)! });
    else if (block.type === 'thinking' && str(block.thinking)) transcript.push({ kind: 'thinking', text: str(block.thinking)! });
    else if (block.type === 'toolCall') transcript.push({ kind: 'tool_call', id: str(block.id) ?? undefined, name: str(block.name) ?? 'tool', input: block.arguments ?? null });
  }
  const parsed: ParsedLine = { transcript };
  const usage = usageOf(message);
  if (usage) parsed.usage = usage;
  const stopReason = str(message.stopReason);
  if (stopReason === 'error' || stopReason === 'aborted') {
    const error = str(message.errorMessage) ?? `the model call ended: ${stopReason}`;
    if (stopReason === 'error' && RETRIED_BY_PI.test(error)) return { ...parsed, transcript: [...transcript, { kind: 'error', message: error }] };
    const final = finalError(error);
    return { ...parsed, ...final, transcript: [...transcript, ...(final.transcript ?? [])] };
  }
  if (stopReason === 'stop' || stopReason === 'length') {
    const text = content.filter((block) => block.type === 'text').map((block) => str(block.text) ?? '').join('\n\n') || null;
    parsed.result = { text, isError: false, subtype: stopReason };
    transcript.push({ kind: 'result', text: text ?? undefined });
  }
  return parsed;
}

function usageOf(message: Record<string, unknown>): ToolUsage | null {
  const usage = isObject(message.usage) ? message.usage : null;
  if (!usage) return null;
  const cost = isObject(usage.cost) ? num(usage.cost.total) : 0;
  const figures = { inputTokens: num(usage.input), cachedInputTokens: num(usage.cacheRead), cacheWriteTokens: num(usage.cacheWrite), outputTokens: num(usage.output) };
  // A failed call reports zeros: nothing was spent, so no cost event.
  if (figures.inputTokens + figures.cachedInputTokens + figures.cacheWriteTokens + figures.outputTokens === 0 && cost === 0) return null;
  return { provider: str(message.provider) ?? 'pi', model: str(message.model) ?? '', billingType: 'metered_api', ...figures, costUsd: cost };
}

function toolResult(data: Record<string, unknown>): ParsedLine {
  const result = isObject(data.result) ? data.result : {};
  const parts = Array.isArray(result.content) ? result.content.filter(isObject) : [];
  const output = parts.map((part) => (part.type === 'text' ? str(part.text) ?? '' : `[${str(part.type) ?? 'content'}]`)).join('');
  return { transcript: [{ kind: 'tool_result', id: str(data.toolCallId) ?? undefined, output: cutOutput(output), ...(data.isError === true ? { isError: true } : {}) }] };
}

function finalError(message: string): ParsedLine {
  const failure = providerFailure(message) ?? { errorCode: 'tool_crashed', message: `Pi's model call failed: ${message}` };
  return { transcript: [{ kind: 'error', message }], result: { text: message, isError: true }, failure };
}

/**
 * The failure of an ended run (or probe) from its exit and log. Pi exits 0 when its model call
 * failed, so the JSON lines of the tail are read as the parser reads them: a final error there
 * is the failure whatever the exit. Otherwise an exit 0 succeeded; a non-zero one is an unknown
 * session, a start-up error on stderr (an unknown model, a provider without a key), or a crash.
 */
function classify(input: { exitCode: number | null; signal: string | null; logTail: string; sawResult: boolean }): Failure | null {
  const tail = lastAttempt(input.logTail);
  const reported = reportedFailure(tail);
  if (input.exitCode === 0 && !input.signal) return reported;
  if (tail.includes(SESSION_UNKNOWN)) return { errorCode: 'tool_session_unknown', message: 'Pi does not know the session to resume (No session found).' };
  if (tail.includes(SESSION_FOLDER_GONE)) return { errorCode: 'tool_session_unknown', message: 'Pi cannot resume the session: the working directory it was created in is gone. Keep the working directory of the agent (adapterConfig.cwd, or none: a folder of its home) to keep its sessions.' };
  if (reported) return reported;
  const plain = tail.split('\n').map((line) => line.trim()).filter((line) => line && !line.startsWith('{'));
  const fromText = plain.map((line) => providerFailure(line)).filter((failure) => failure).at(-1);
  if (fromText) return fromText;
  const reason = input.signal ? `was stopped by ${input.signal}` : `exited with code ${input.exitCode}`;
  return { errorCode: 'tool_crashed', message: `Pi ${reason}${plain.at(-1) ? `: ${plain.at(-1)}` : '.'}` };
}

/** The last failure the tail's JSON lines report, read line by line as a run's output is. */
function reportedFailure(tail: string): Failure | null {
  const lines = parser();
  let failure: Failure | null = null;
  for (const line of tail.split('\n')) {
    if (!line.startsWith('{')) continue;
    let data: unknown;
    try { data = JSON.parse(line); } catch { continue; }
    if (isObject(data)) failure = lines.line(data).failure ?? failure;
  }
  return failure;
}

/** Name, executable, install command, default model, efforts and max turns: the SDK's adapter catalog row. */
const FACTS = catalogFacts('pi_local');

export const piDriver: ToolDriver = {
  ...FACTS,
  supportedVersions: 'tested with 0.73.1 (needs `--mode json`, `-p` and `--session <id>`); Node.js 20.6 or later as node on PATH',
  allowedExtraArgs: [
    { flag: '--provider', takesValue: true },
    { flag: '--tools', takesValue: true },
    { flag: '--no-tools', takesValue: false },
    { flag: '--no-builtin-tools', takesValue: false },
    { flag: '--no-extensions', takesValue: false },
    { flag: '--no-skills', takesValue: false },
    { flag: '--no-context-files', takesValue: false },
    { flag: '--no-prompt-templates', takesValue: false },
    { flag: '--skill', takesValue: true },
    { flag: '--append-system-prompt', takesValue: true },
  ],
  launch,
  parser,
  classify,
  versionArgs: ['--version'],
  // Pi prints its version on stderr: the text given may be either stream.
  parseVersion: (text) => /\b(\d+\.\d+\.\d+(?:-[\w.]+)?)\b/.exec(text)?.[1] ?? null,
  probe: (config) => ({
    args: [...baseArgs(config), '--no-session', '--no-tools', ...config.extraArgs],
    stdin: 'Reply with the single word OK.',
    env: TOOL_ENV,
    homeVariables: HOME_VARIABLES,
  }),
};
