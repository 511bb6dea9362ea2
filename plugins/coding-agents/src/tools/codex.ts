import { classifyCodex, parseCodexLine, type UsageContext } from './codex-events.ts';
import { catalogFacts, type GatewaySupport, type GatewayTarget, type Launch, type LaunchInput, type LocalConfig, type ToolDriver } from './driver.ts';

/**
 * `beta_local`: OpenAI's Codex CLI (`codex`, npm `@openai/codex`), run as `codex exec --json`
 * with the prompt on stdin (`-`), resumed with `codex exec resume <thread_id>`. What each flag
 * does was read from Codex 0.171.0 run against a scripted model (test/fixtures/coding-agents/codex/).
 *
 * - Unattended: `--dangerously-bypass-approvals-and-sandbox` (no approval prompts, no sandbox:
 *   Keel's agent user, PID namespace and scratch environment are the boundary). `toolSandbox`
 *   keeps Codex's workspace-write sandbox instead (writes only in the working directory and
 *   /tmp), with network access so the agent still reaches Keel's API, and approvals off.
 * - The home: CODEX_HOME is `.codex` in the agent's home (config.toml, auth.json of a
 *   `codex login`, the threads). User-level instructions: `$CODEX_HOME/AGENTS.md`. Skills:
 *   `$HOME/.agents/skills/<name>/SKILL.md`, Codex's documented user skills folder (Codex keeps
 *   its own bundled skills in `$CODEX_HOME/skills/.system`, which Keel leaves alone).
 * - Credentials: Codex reads CODEX_API_KEY (not OPENAI_API_KEY) or the home's login, and
 *   ignores OPENAI_BASE_URL. So when adapterConfig.env sets OPENAI_BASE_URL or OPENAI_API_KEY,
 *   the run declares a model provider of its own (`-c model_providers.keel_openai...`, the
 *   Responses API over HTTP) at that base URL with that key; else Codex's own configuration holds.
 * - The shell inherits the whole environment (the run's SERVICE_* variables included:
 *   `shell_environment_policy`), and TZ is UTC so the reset time of a usage limit reads right.
 */

/** Name, executable, install command, default model, efforts and max turns: the SDK's adapter catalog row. */
const FACTS = catalogFacts('beta_local');
const PROVIDER = 'keel_openai';
const OPENAI_API = 'https://api.openai.com/v1';
/**
 * What `codex exec resume` prints (stderr, exit 1) when it refuses the thread: "Error: thread/resume:
 * thread/resume failed: no rollout found for thread id <id>" for a thread its home does not hold,
 * "... Cannot change this thread's model provider from `a` to `b` on resume" after the provider
 * changed. Either way the run starts a fresh thread.
 */
const RESUME_REFUSED = ['thread/resume failed', 'no rollout found for thread id'];

/** Codex 0.171's own default model (`codex debug models`: the catalog's first entry). */
const DEFAULT_MODEL = FACTS.defaultModel;
/**
 * The model to run: the configured one, else Codex 0.171's default. `beta-default` is the spec's
 * placeholder that the kernel fills in on create (kernel/tenancy/adapter-defaults.ts); no
 * provider knows it, so it means the tool's default too.
 */
const modelOf = (local: LocalConfig | undefined): string => (local?.model && local.model !== 'beta-default' ? local.model : DEFAULT_MODEL);

const toml = (value: string) => JSON.stringify(value);
const config = (key: string, value: string) => ['-c', `${key}=${value}`];

/** The flags every run and probe carries: JSON events, no git check, the access mode, model, effort, provider, shell environment. */
function commonArgs(local: LocalConfig): string[] {
  const access = local.toolSandbox
    ? [...config('sandbox_mode', toml('workspace-write')), ...config('approval_policy', toml('never')), ...config('sandbox_workspace_write.network_access', 'true')]
    : ['--dangerously-bypass-approvals-and-sandbox'];
  return [
    '--json', '--skip-git-repo-check', ...access,
    '-m', modelOf(local),
    ...(local.effort ? config('model_reasoning_effort', toml(local.effort)) : []),
    ...(local.gateway ? gatewayProviderArgs(local.gateway) : providerArgs(local.env)),
    ...config('shell_environment_policy.inherit', toml('all')), ...config('shell_environment_policy.ignore_default_excludes', 'true'),
  ];
}

/** A model provider for OPENAI_BASE_URL / OPENAI_API_KEY in the agent's env, which Codex itself would ignore. */
function providerArgs(env: Record<string, unknown>): string[] {
  const baseUrl = typeof env.OPENAI_BASE_URL === 'string' && /^https?:\/\//.test(env.OPENAI_BASE_URL) ? env.OPENAI_BASE_URL : null;
  const hasKey = env.OPENAI_API_KEY !== undefined && env.OPENAI_API_KEY !== null;
  if (!baseUrl && !hasKey) return [];
  const key = `model_providers.${PROVIDER}`;
  return [
    ...config('model_provider', toml(PROVIDER)),
    ...config(`${key}.name`, toml('OpenAI (adapterConfig.env)')),
    ...config(`${key}.base_url`, toml(baseUrl ?? OPENAI_API)),
    ...config(`${key}.wire_api`, toml('responses')),
    // With no OPENAI_API_KEY the provider takes Codex's own credential (CODEX_API_KEY or the home's login).
    ...(hasKey ? config(`${key}.env_key`, toml('OPENAI_API_KEY')) : config(`${key}.requires_openai_auth`, 'true')),
  ];
}

const GATEWAY_PROVIDER = 'keel_gateway';
/** The variable the gateway's provider reads its key from: the run token (tokenVariables). */
const GATEWAY_KEY = 'OPENAI_API_KEY';

/**
 * Through Keel's model gateway (a provider of kind openai): a model provider of the run's own
 * (`-c model_providers.keel_gateway...`) at the gateway's base for the provider plus `/v1`, the
 * Responses API, its key from OPENAI_API_KEY, which holds the run token (sent as
 * `Authorization: Bearer`). The configured keys and base URL are withheld.
 */
function gatewayProviderArgs(target: GatewayTarget): string[] {
  const key = `model_providers.${GATEWAY_PROVIDER}`;
  return [
    ...config('model_provider', toml(GATEWAY_PROVIDER)),
    ...config(`${key}.name`, toml('Keel model gateway')),
    ...config(`${key}.base_url`, toml(`${target.baseUrl}/v1`)),
    ...config(`${key}.wire_api`, toml('responses')),
    ...config(`${key}.env_key`, toml(GATEWAY_KEY)),
  ];
}

const gateway: GatewaySupport = {
  kind: () => 'openai',
  routing: () => ({ env: {}, tokenVariables: [GATEWAY_KEY], withholdVariables: ['OPENAI_API_KEY', 'CODEX_API_KEY', 'OPENAI_BASE_URL'] }),
};

function usageContext(local: LocalConfig | undefined): UsageContext {
  const env = local?.env ?? {};
  const apiKey = ['CODEX_API_KEY', 'OPENAI_API_KEY'].some((name) => env[name] !== undefined && env[name] !== null);
  // A key is billed per token; a ChatGPT login of the home is a subscription, which the run cannot tell apart from other set-ups.
  return { model: modelOf(local), billingType: apiKey ? 'metered_api' : 'unknown' };
}

/** A thread id as Codex prints them (a UUID); anything else, above all a word that reads as a flag, starts a fresh thread. */
const THREAD_ID = /^[0-9A-Za-z][0-9A-Za-z._-]{0,199}$/;

function launch(input: LaunchInput): Launch {
  const { config: local } = input;
  const sessionId = input.sessionId && THREAD_ID.test(input.sessionId) ? input.sessionId : null;
  const options = [...commonArgs(local), ...local.extraArgs];
  const fresh = ['exec', ...options, '-'];
  const skillFiles = input.skills.flatMap((skill) => skill.files.map((file) => ({ ...file, path: `.agents/skills/${skill.runtimeName}/${file.path}` })));
  return {
    args: sessionId ? ['exec', 'resume', ...options, sessionId, '-'] : fresh,
    stdin: input.prompt,
    env: { TZ: 'UTC' },
    homeVariables: { CODEX_HOME: '.codex' },
    homeFiles: [...(input.instructions !== null ? [{ path: '.codex/AGENTS.md', content: input.instructions }] : []), ...skillFiles],
    // Skills no longer desired go, and so do instructions no longer set.
    homeReplace: ['.agents/skills', '.codex/AGENTS.md'],
    files: [],
    retryFresh: sessionId ? { args: fresh, ifOutputIncludes: RESUME_REFUSED } : null,
  };
}

export const codexDriver: ToolDriver = {
  ...FACTS,
  supportedVersions: '0.171.x (tested with 0.171.0): `codex exec --json` events thread.started, item.*, turn.completed with usage, and `codex exec resume`',
  // Flags `codex exec` and `codex exec resume` both accept and that neither move output or sessions nor carry credentials.
  allowedExtraArgs: [
    { flag: '--enable', takesValue: true }, { flag: '--disable', takesValue: true },
    { flag: '--image', takesValue: true }, { flag: '-i', takesValue: true },
    { flag: '--strict-config', takesValue: false }, { flag: '--ignore-rules', takesValue: false },
  ],
  launch,
  /** The model of the usage comes from the agent's configuration (Codex's events do not name it). */
  parser(local?: LocalConfig) {
    const context = usageContext(local);
    return { line: (data) => parseCodexLine(data, context) };
  },
  classify: (input) => classifyCodex(input),
  gateway,
  versionArgs: ['--version'],
  parseVersion(stdout) {
    return /codex-cli\s+(\d+\.\d+\.\d+[\w.+-]*)/.exec(stdout)?.[1] ?? /\b(\d+\.\d+\.\d+[\w.+-]*)/.exec(stdout)?.[1] ?? null;
  },
  probe(local) {
    // --ephemeral: the test's one model call leaves no thread behind in the agent's home.
    return {
      args: ['exec', ...commonArgs(local), '--ephemeral', '-'],
      stdin: 'Reply with the single word OK.',
      env: { TZ: 'UTC' },
      homeVariables: { CODEX_HOME: '.codex' },
    };
  },
};
