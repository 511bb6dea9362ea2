/**
 * `alpha_local`: Claude Code (`claude`, npm `@anthropic-ai/claude-code`), run as
 * `claude -p --output-format stream-json --verbose` with the prompt on stdin.
 *
 * What the tool does, found by running 2.1.332 against a scripted model (fixtures in
 * test/fixtures/coding-agents/claude-code/):
 * - Unattended: `--dangerously-skip-permissions` lets it use Bash and the file tools without a
 *   prompt. As root it refuses ("cannot be used with root/sudo privileges") unless `IS_SANDBOX=1`;
 *   Keel runs it as the unprivileged agent user, where it needs nothing. `toolSandbox: true` keeps
 *   Claude Code's own permission checks instead (`--permission-mode acceptEdits`: file edits in the
 *   working directory pass, shell commands only those it deems safe or `--allowedTools` allows).
 * - Its configuration, sessions and the user-level instructions live in `CLAUDE_CONFIG_DIR`:
 *   `CLAUDE.md` there is read as the user's instructions, `skills/<name>/SKILL.md` as skills.
 * - `--resume <session_id>` carries a session on (from any working directory); an unknown one
 *   exits 1 with "No conversation found with session ID: …" before any model call.
 * - `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1` leaves the model API as the only network call
 *   (no telemetry, error reports, update checks, MCP registry or connectivity probe).
 */
import { catalogFacts, type GatewaySupport, type Launch, type LaunchInput, type LocalConfig, type ToolDriver } from './driver.ts';
import { claudeStreamParser, resetTime, UNKNOWN_SESSION } from './claude-code-stream.ts';
import { LOGIN_STATUS_ARGS, loginAnswer } from './claude-code-login.ts';

const STREAM = ['-p', '--output-format', 'stream-json', '--verbose'];
const CONFIG_DIR = '.claude';
/** The tool's own variables: the model API is its only network traffic, and it never updates itself mid-run. */
const QUIET = { CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1' };

/**
 * Through Keel's model gateway (a provider of kind anthropic): ANTHROPIC_BASE_URL is the
 * gateway's base for the provider and ANTHROPIC_API_KEY the run token, which Claude Code sends
 * as `x-api-key`. Every other way it could sign in or reach a model is withheld from the
 * configured env: the provider key, a login token, Bedrock, Vertex AI or Foundry.
 */
const gateway: GatewaySupport = {
  kind: () => 'anthropic',
  routing: (target) => ({
    env: { ANTHROPIC_BASE_URL: target.baseUrl },
    tokenVariables: ['ANTHROPIC_API_KEY'],
    withholdVariables: [
      'ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'CLAUDE_CODE_OAUTH_TOKEN',
      'CLAUDE_CODE_USE_BEDROCK', 'CLAUDE_CODE_USE_VERTEX', 'CLAUDE_CODE_USE_FOUNDRY', 'ANTHROPIC_BEDROCK_BASE_URL', 'ANTHROPIC_VERTEX_BASE_URL',
    ],
  }),
};

/** Name, executable, install command, default model, efforts and max turns: the SDK's adapter catalog row. */
const FACTS = catalogFacts('alpha_local');

export const claudeCode: ToolDriver = {
  ...FACTS,
  supportedVersions: '2.x (tested with 2.1.332): stream-json events, --resume, --max-turns, --effort',
  allowedExtraArgs: [
    { flag: '--add-dir', takesValue: true },
    { flag: '--allowedTools', takesValue: true },
    { flag: '--allowed-tools', takesValue: true },
    { flag: '--disallowedTools', takesValue: true },
    { flag: '--disallowed-tools', takesValue: true },
    { flag: '--tools', takesValue: true },
    { flag: '--append-system-prompt', takesValue: true },
    { flag: '--fallback-model', takesValue: true },
    { flag: '--max-budget-usd', takesValue: true },
    { flag: '--agent', takesValue: true },
    { flag: '--agents', takesValue: true },
    { flag: '--betas', takesValue: true },
    { flag: '--disable-slash-commands', takesValue: false },
    { flag: '--exclude-dynamic-system-prompt-sections', takesValue: false },
    { flag: '--strict-mcp-config', takesValue: false },
  ],

  launch(input: LaunchInput): Launch {
    const fresh = argsFor(input.config, null);
    return {
      args: input.sessionId ? argsFor(input.config, input.sessionId) : fresh,
      stdin: input.prompt,
      env: { ...QUIET },
      homeVariables: { CLAUDE_CONFIG_DIR: CONFIG_DIR },
      homeFiles: [
        // Always written, empty without a bundle, so instructions the agent no longer has do not linger.
        { path: `${CONFIG_DIR}/CLAUDE.md`, content: input.instructions ?? '' },
        ...input.skills.flatMap((skill) => skill.files.map((file) => ({ ...file, path: `${CONFIG_DIR}/skills/${skill.runtimeName}/${file.path}` }))),
      ],
      homeReplace: [`${CONFIG_DIR}/skills`],
      files: [],
      retryFresh: input.sessionId ? { args: fresh, ifOutputIncludes: [UNKNOWN_SESSION] } : null,
    };
  },

  parser: claudeStreamParser,

  classify({ exitCode, signal, logTail, sawResult }) {
    if (exitCode === 0 && sawResult) return null;
    if (exitCode === 127 || /\b(ENOENT|EACCES)\b.*\bclaude\b|claude: (command )?not found/.test(logTail)) {
      return { errorCode: 'adapter_unavailable', message: `Claude Code is not installed where the agent's command points: install it with \`${claudeCode.install}\` (or set adapterConfig.command).` };
    }
    if (logTail.includes(UNKNOWN_SESSION)) return { errorCode: 'tool_session_unknown', message: lastLineWith(logTail, UNKNOWN_SESSION) };
    if (logTail.includes('cannot be used with root/sudo privileges')) {
      return { errorCode: 'tool_crashed', message: 'Claude Code refuses to skip its permission prompts as root: run Keel as root with the keel-agent user present (agents then run unprivileged), or declare Keel\'s isolation a sandbox with IS_SANDBOX=1 in the agent\'s env.' };
    }
    if (/Reached maximum number of turns|"subtype":"error_max_turns"/.test(logTail)) return { errorCode: 'tool_max_turns', message: lastLineWith(logTail, 'Reached maximum number of turns') };
    if (/"error":"authentication_failed"|Not logged in|Invalid API key|OAuth token has expired/.test(logTail)) {
      return { errorCode: 'tool_auth_required', message: 'Claude Code is not signed in: set ANTHROPIC_API_KEY (a secret reference) or CLAUDE_CODE_OAUTH_TOKEN (from `claude setup-token`) in the agent\'s env.' };
    }
    if (/"error":"billing_error"|[Cc]redit balance is too low/.test(logTail)) return { errorCode: 'tool_quota_exhausted', message: 'Claude Code\'s account has no credit left.' };
    if (/"error":"rate_limit"|"error_status":429/.test(logTail)) {
      const resets = /"resetsAt":(\d+)/.exec(logTail.slice(logTail.lastIndexOf('"resetsAt"')));
      return { errorCode: 'tool_rate_limited', message: 'Claude Code was rate limited by the model API.', retryAt: resets ? resetTime({ resetsAt: Number(resets[1]) }) : null };
    }
    // Claude Code catches SIGTERM, stops its commands and exits 143 itself.
    const stoppedBy = signal ?? (exitCode === 143 ? 'SIGTERM' : exitCode === 130 ? 'SIGINT' : null);
    if (stoppedBy) return { errorCode: 'tool_crashed', message: `Claude Code was stopped by ${stoppedBy}${sawResult ? '' : ' before it reported a result'}.` };
    if (exitCode === 0) return { errorCode: 'tool_output_malformed', message: 'Claude Code exited without its result event (is the command Claude Code with --output-format stream-json?).' };
    return { errorCode: 'tool_crashed', message: `Claude Code exited with code ${exitCode}: ${lastPlainLine(logTail) ?? 'no output'}` };
  },

  versionArgs: ['--version'],
  parseVersion(stdout) {
    return /^\s*(\d+\.\d+\.\d+)/.exec(stdout)?.[1] ?? null;
  },

  /** One turn without tools or a saved session: proves the credential and the model answer. */
  probe(config: LocalConfig) {
    const args = [...STREAM, '--max-turns', '1', '--tools', '', '--no-session-persistence'];
    if (config.model) args.push('--model', config.model);
    return { args, stdin: 'Answer with the single word: ready', env: { ...QUIET, CLAUDE_CODE_MAX_RETRIES: '1' }, homeVariables: { CLAUDE_CONFIG_DIR: CONFIG_DIR } };
  },

  login: { statusArgs: LOGIN_STATUS_ARGS, answer: loginAnswer },
  gateway,
};

function argsFor(config: LocalConfig, sessionId: string | null): string[] {
  const args = [...STREAM];
  args.push(...(config.toolSandbox ? ['--permission-mode', 'acceptEdits'] : ['--dangerously-skip-permissions']));
  if (sessionId) args.push('--resume', sessionId);
  if (config.model) args.push('--model', config.model);
  if (config.effort) args.push('--effort', config.effort);
  if (config.maxTurns !== null) args.push('--max-turns', String(config.maxTurns));
  args.push(...config.extraArgs);
  return args;
}

function lastLineWith(text: string, needle: string): string {
  const line = text.split('\n').reverse().find((l) => l.includes(needle)) ?? needle;
  // A JSON line carries the sentence inside a string: take the sentence itself.
  const at = line.indexOf(needle);
  return line.slice(at).split('"')[0].trim();
}

function lastPlainLine(text: string): string | null {
  const lines = text.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('{'));
  return lines.at(-1) ?? null;
}
