import { catalogFacts, type Failure, type GatewaySupport, type Launch, type LaunchInput, type LocalConfig, type ParsedLine, type ProviderKind, type ToolDriver, type TranscriptEntry } from './driver.ts';
import { isObject, lastAttempt, num, providerFailure, str } from './provider-failures.ts';
import { cutOutput } from './lines.ts';

/**
 * OpenCode (`opencode`, npm `opencode-ai`), the `delta_local` adapter.
 *
 * A run is `opencode run --format json` with the prompt on stdin: one JSON event per line,
 * `step_start`, `text` (a finished text part), `reasoning` (with `--thinking`), `tool_use` (a
 * finished tool call with its input and output), `step_finish` (the step's `tokens` and `cost`)
 * and `error`, each with the `sessionID`. There is no closing result event: the run ends after
 * the `step_finish` whose reason is not `tool-calls`. Tokens are per step: `tokens.input` is the
 * uncached input, `tokens.cache.read`/`write` the cache, so each step is one cost event.
 *
 * Unattended: `--auto` approves every permission not explicitly denied (without it a
 * non-interactive run refuses what would ask, such as a command outside the working directory).
 * OpenCode has no sandbox of its own, so `toolSandbox: true` only leaves the permission rules of
 * the agent's configuration in force. The configuration (providers, models) comes from the
 * tool's own places: `OPENCODE_CONFIG_CONTENT` or `OPENCODE_CONFIG` in `env`, or the agent's home.
 * A retried provider call is printed only to the log (`--print-logs`): OpenCode retries rate
 * limits and server errors five times over about a minute before its `error` event, so a run
 * stopped meanwhile is classified from those log lines.
 */

const CONFIG_DIR = '.config/opencode';
const SESSION_NOT_FOUND = 'Session not found';
/**
 * OpenCode binds a session to the folder it was created in and fails its resume when that folder
 * is gone (a configured cwd removed or changed): a refusal too, retried fresh.
 */
const SESSION_FOLDER_GONE = 'NotFound: FileSystem.realPath';

function baseArgs(config: LocalConfig): string[] {
  // A title of our own: OpenCode otherwise asks the model for one in a call its events never
  // report, whose tokens would go unmetered.
  const args = ['run', '--format', 'json', '--title', 'Keel run', '--thinking', '--print-logs', '--log-level', 'ERROR'];
  if (!config.toolSandbox) args.push('--auto');
  if (config.model) args.push('--model', config.model);
  if (config.effort) args.push('--variant', config.effort);
  return args;
}

function launch(input: LaunchInput): Launch {
  const fresh = [...baseArgs(input.config), ...input.config.extraArgs];
  const args = input.sessionId ? [...baseArgs(input.config), '--session', input.sessionId, ...input.config.extraArgs] : fresh;
  return {
    args,
    stdin: input.prompt,
    env: TOOL_ENV,
    homeVariables: HOME_VARIABLES,
    // OpenCode reads the user-level AGENTS.md and discovers skills under its configuration folder.
    // An empty AGENTS.md when the agent has no instructions: the one from an earlier run must not linger.
    homeFiles: [
      { path: `${CONFIG_DIR}/AGENTS.md`, content: input.instructions ?? '' },
      ...input.skills.flatMap((skill) => skill.files.map((file) => ({ ...file, path: `${CONFIG_DIR}/skills/${skill.runtimeName}/${file.path}` }))),
    ],
    homeReplace: [`${CONFIG_DIR}/skills`],
    files: [],
    retryFresh: input.sessionId ? { args: fresh, ifOutputIncludes: [SESSION_NOT_FOUND, SESSION_FOLDER_GONE] } : null,
  };
}

/** No update checks, no sharing, no language servers fetched at run time. */
const TOOL_ENV: Record<string, string> = {
  OPENCODE_DISABLE_AUTOUPDATE: '1',
  OPENCODE_DISABLE_SHARE: '1',
  OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
};

/** OpenCode keeps its configuration, sessions (a SQLite database) and caches in the XDG folders. */
const HOME_VARIABLES: Record<string, string> = {
  XDG_CONFIG_HOME: '.config',
  XDG_DATA_HOME: '.local/share',
  XDG_STATE_HOME: '.local/state',
  XDG_CACHE_HOME: '.cache',
};

/**
 * The parser keeps nothing it needs across batches (the core reads each batch of a run's lines
 * with a parser of its own): every line names its session, and the final step's result names
 * its text when the text came in the same batch, else none (the core then takes the answer it
 * collected from the assistant entries since the last tool call).
 */
function parser(config?: LocalConfig): { line(data: Record<string, unknown>): ParsedLine } {
  /** Text parts per message within one batch. */
  const texts = new Map<string, string[]>();
  const model = modelOf(config);
  return {
    line(data) {
      const parsed = parseEvent(data, texts, model) ?? { transcript: [{ kind: 'log', line: JSON.stringify(data) }] };
      const sessionId = str(data.sessionID);
      return sessionId ? { ...parsed, sessionId } : parsed;
    },
  };
}

/** One event's meaning, or null when the event is not one OpenCode's run prints. */
/**
 * The provider and model a step's usage belongs to. OpenCode's events do not name them: the
 * agent's configured `provider/model` does; without one, OpenCode chose its own default.
 */
function modelOf(config?: LocalConfig): { provider: string; model: string } {
  const configured = config?.model ?? null;
  const slash = configured ? configured.indexOf('/') : -1;
  if (!configured || slash <= 0 || slash === configured.length - 1) return { provider: 'opencode', model: configured ?? 'unknown' };
  return { provider: configured.slice(0, slash), model: configured.slice(slash + 1) };
}

function parseEvent(data: Record<string, unknown>, texts: Map<string, string[]>, model: { provider: string; model: string }): ParsedLine | null {
  const part = isObject(data.part) ? data.part : null;
  switch (data.type) {
    case 'step_start':
      return part ? {} : null;
    case 'text': {
      const text = str(part?.text);
      if (text === null) return null;
      const messageId = str(part?.messageID) ?? '';
      texts.set(messageId, [...(texts.get(messageId) ?? []), text]);
      return { transcript: [{ kind: 'assistant', text }] };
    }
    case 'reasoning': {
      const text = str(part?.text);
      return text === null ? null : { transcript: [{ kind: 'thinking', text }] };
    }
    case 'tool_use':
      return part ? { transcript: toolEntries(part) } : null;
    case 'step_finish':
      return part ? stepFinish(part, texts, model) : null;
    case 'error':
      return isObject(data.error) ? errorEvent(data.error) : null;
    default:
      return null;
  }
}

function toolEntries(part: Record<string, unknown>): TranscriptEntry[] {
  const state = isObject(part.state) ? part.state : {};
  const id = str(part.callID) ?? undefined;
  const call: TranscriptEntry = { kind: 'tool_call', id, name: str(part.tool) ?? 'tool', input: state.input ?? null };
  if (state.status === 'error') return [call, { kind: 'tool_result', id, output: cutOutput(str(state.error) ?? 'the tool failed'), isError: true }];
  return [call, { kind: 'tool_result', id, output: cutOutput(str(state.output) ?? '') }];
}

function stepFinish(part: Record<string, unknown>, texts: Map<string, string[]>, model: { provider: string; model: string }): ParsedLine {
  const tokens = isObject(part.tokens) ? part.tokens : {};
  const cache = isObject(tokens.cache) ? tokens.cache : {};
  const parsed: ParsedLine = {
    usage: {
      ...model, billingType: 'metered_api',
      inputTokens: num(tokens.input),
      cachedInputTokens: num(cache.read),
      cacheWriteTokens: num(cache.write),
      // OpenCode counts reasoning apart from output; providers bill both as output.
      outputTokens: num(tokens.output) + num(tokens.reasoning),
      costUsd: num(part.cost),
    },
  };
  if (part.reason === 'tool-calls') return parsed;
  const text = (texts.get(str(part.messageID) ?? '') ?? []).join('\n\n') || null;
  return {
    ...parsed,
    result: { text, isError: false, subtype: str(part.reason) ?? undefined },
    transcript: [text ? { kind: 'result', text } : { kind: 'result' }],
  };
}

function errorEvent(error: Record<string, unknown>): ParsedLine {
  const data = isObject(error.data) ? error.data : {};
  const message = str(data.message) ?? str(error.name) ?? 'OpenCode reported an error';
  const status = typeof data.statusCode === 'number' ? data.statusCode : null;
  const failure = error.name === 'ProviderAuthError'
    ? { errorCode: 'tool_auth_required', message: `The model provider refused the credentials: ${message}` }
    : providerFailure(message, status, isObject(data.responseHeaders) ? data.responseHeaders : null);
  return {
    transcript: [{ kind: 'error', message }],
    result: { text: message, isError: true, subtype: str(error.name) ?? undefined },
    ...(failure ? { failure } : {}),
  };
}

/**
 * The failure of an ended run. OpenCode exits 1 with `Error: Session not found` for an unknown
 * session and 1 after an `error` event; a run stopped while OpenCode still retried a provider
 * call is read from its logged `stream error` lines.
 */
function classify(input: { exitCode: number | null; signal: string | null; logTail: string; sawResult: boolean }): Failure | null {
  if (input.exitCode === 0 && !input.signal) return null;
  const tail = lastAttempt(input.logTail);
  if (tail.includes(SESSION_NOT_FOUND)) return { errorCode: 'tool_session_unknown', message: 'OpenCode does not know the session to resume (Session not found).' };
  if (tail.includes(SESSION_FOLDER_GONE)) return { errorCode: 'tool_session_unknown', message: 'OpenCode cannot resume the session: the folder it was created in is gone. Keep the working directory of the agent (adapterConfig.cwd, or none: a folder of its home) to keep its sessions.' };
  const streamErrors = [...tail.matchAll(/message="stream error".*?error\.error="([^"]*)"/g)].map((match) => match[1] ?? '');
  const lastStreamError = streamErrors.at(-1);
  const fromLog = lastStreamError ? providerFailure(lastStreamError.replace(/^AI_[A-Za-z]+: /, '')) : null;
  if (fromLog) return fromLog;
  const errorLine = tail.split('\n').filter((line) => line.includes('"type":"error"')).at(-1);
  const reported = errorLine ? jsonObject(errorLine.slice(errorLine.indexOf('{'))) : null;
  if (reported && isObject(reported.error)) {
    const failure = errorEvent(reported.error).failure;
    if (failure) return failure;
  }
  const reason = input.signal ? `was stopped by ${input.signal}` : `exited with code ${input.exitCode}`;
  const lastLine = tail.trim().split('\n').filter((line) => !line.startsWith('{')).at(-1)?.replace(/\u001b\[[0-9;]*m/g, '').trim();
  return { errorCode: 'tool_crashed', message: `OpenCode ${reason}${lastLine ? `: ${lastLine}` : '.'}` };
}

function jsonObject(text: string): Record<string, unknown> | null {
  try { const value: unknown = JSON.parse(text); return isObject(value) ? value : null; } catch { return null; }
}

/** OpenCode's built-in providers the gateway can serve: the kind, the path under the gateway's base its SDK wants, the variable its key is read from. */
const GATEWAY_PROVIDERS: Record<string, { kind: ProviderKind; path: string; keyVariable: string; npm: string }> = {
  anthropic: { kind: 'anthropic', path: '/v1', keyVariable: 'ANTHROPIC_API_KEY', npm: '@ai-sdk/anthropic' },
  openai: { kind: 'openai', path: '/v1', keyVariable: 'OPENAI_API_KEY', npm: '@ai-sdk/openai' },
  google: { kind: 'gemini', path: '/v1beta', keyVariable: 'GOOGLE_GENERATIVE_AI_API_KEY', npm: '@ai-sdk/google' },
};
const providerOf = (config: LocalConfig): string | null => {
  const slash = config.model?.indexOf('/') ?? -1;
  return slash > 0 ? config.model!.slice(0, slash) : null;
};
const isSet = (value: unknown) => value !== undefined && value !== null && value !== '';

/**
 * Through Keel's model gateway: when the agent's model names one of OpenCode's built-in
 * providers (`anthropic/…`, `openai/…`, `google/…`) and its env brings no configuration of its
 * own (OPENCODE_CONFIG_CONTENT or OPENCODE_CONFIG, which then holds), OPENCODE_CONFIG_CONTENT
 * points that provider at the gateway's base for the provider, its key read from the provider's
 * variable, which holds the run token (the SDKs send it as `x-api-key`, `Authorization: Bearer`,
 * `x-goog-api-key`). The configured keys are withheld. A model without a provider prefix is
 * OpenCode's own choice and is not routed.
 */
const gateway: GatewaySupport = {
  kind(config) {
    if (isSet(config.env.OPENCODE_CONFIG_CONTENT) || isSet(config.env.OPENCODE_CONFIG)) return null;
    const provider = providerOf(config);
    return provider ? GATEWAY_PROVIDERS[provider]?.kind ?? null : null;
  },
  routing(target, config) {
    const provider = providerOf(config)!;
    const served = GATEWAY_PROVIDERS[provider]!;
    // The SDK package and the model named too: OpenCode then knows them without its model catalog (models.dev).
    const model = config.model!.slice(provider.length + 1);
    const settings = { npm: served.npm, options: { baseURL: `${target.baseUrl}${served.path}`, apiKey: `{env:${served.keyVariable}}` }, models: { [model]: {} } };
    return {
      env: { OPENCODE_CONFIG_CONTENT: JSON.stringify({ provider: { [provider]: settings } }) },
      tokenVariables: [served.keyVariable],
      withholdVariables: ['ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', 'OPENAI_API_KEY', 'OPENAI_BASE_URL', 'GOOGLE_GENERATIVE_AI_API_KEY', 'GEMINI_API_KEY'],
    };
  },
};

/** Name, executable, install command, default model, efforts and max turns: the SDK's adapter catalog row. */
const FACTS = catalogFacts('delta_local');

export const opencodeDriver: ToolDriver = {
  ...FACTS,
  supportedVersions: 'tested with 1.18.33 (needs `run --format json`, `--auto`, `--title` and `--variant`)',
  allowedExtraArgs: [
    { flag: '--agent', takesValue: true },
    { flag: '--pure', takesValue: false },
  ],
  launch,
  parser,
  classify,
  gateway,
  versionArgs: ['--version'],
  parseVersion: (stdout) => /\b(\d+\.\d+\.\d+(?:-[\w.]+)?)\b/.exec(stdout)?.[1] ?? null,
  probe: (config) => ({
    args: [...baseArgs(config), ...config.extraArgs],
    stdin: 'Reply with the single word OK.',
    env: TOOL_ENV,
    homeVariables: HOME_VARIABLES,
  }),
};
