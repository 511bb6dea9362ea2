import { catalogFacts, type GatewaySupport, type Launch, type LaunchInput, type LocalConfig, type ToolDriver } from './driver.ts';
import { classifyGemini, parseGeminiLine, type UsageContext } from './gemini-events.ts';

/**
 * `gamma_local`: Google's Gemini CLI (`gemini`, npm `@google/gemini-cli`), run headless as
 * `gemini -p "" --output-format stream-json` with the prompt on stdin (the CLI appends `-p`'s
 * text, here none, to its standard input), resumed with `--resume <session_id>`. What each flag
 * and file does was read from Gemini CLI 0.61.0 run against a scripted model
 * (test/fixtures/coding-agents/gemini/).
 *
 * - Unattended: `--approval-mode yolo` approves every tool call; GEMINI_CLI_TRUST_WORKSPACE
 *   trusts the run's folder (else the CLI exits 55 in a folder nobody trusted interactively).
 *   Keel's agent user, PID namespace and scratch environment are the boundary. `toolSandbox`
 *   turns on the CLI's own tool sandboxing as well (bubblewrap on Linux, which must be installed)
 *   with network access, so the agent still reaches Keel's API.
 * - The home: the CLI keeps everything in `$HOME/.gemini` (settings, sessions per project
 *   folder, the installation id). Keel owns `.gemini/settings.json` there and writes it on each
 *   run: usage statistics, telemetry and update checks off, the authentication type (see below),
 *   the turn limit. User-level instructions: `.gemini/GEMINI.md`. Skills:
 *   `.gemini/skills/<name>/SKILL.md`, the CLI's user skills folder.
 * - Credentials come from adapterConfig.env: GEMINI_API_KEY (or GOOGLE_API_KEY with Vertex AI).
 *   The settings name the authentication type, because the CLI takes GOOGLE_GEMINI_BASE_URL
 *   alone as a "gateway" type that its headless mode then refuses ("Invalid auth method
 *   selected."): with the type set, the base URL still applies to the Gemini API key's calls.
 * - Sessions are kept per project folder (the working directory), so a resume works only in
 *   the folder of the run that started the session; elsewhere the CLI refuses it (exit 42,
 *   "Error resuming session: ...") and the run starts fresh.
 */

const RESUME_REFUSED = ['Error resuming session'];
/** Name, executable, install command, default model, efforts and max turns: the SDK's adapter catalog row. */
const FACTS = catalogFacts('gamma_local');
/** `auto` is the CLI's own default: it routes each turn to a Pro or Flash model. */
const DEFAULT_MODEL = FACTS.defaultModel;
/**
 * The model to run: the configured one, else the CLI's default. `gamma-default` is the spec's
 * placeholder that the kernel fills in on create (kernel/tenancy/adapter-defaults.ts); no
 * provider knows it, so it means the tool's default too.
 */
export const modelOf = (local: LocalConfig): string => (local.model && local.model !== 'gamma-default' ? local.model : DEFAULT_MODEL);

/** The variables the CLI reads to pick its authentication; the first present names the type. */
function authType(env: Record<string, unknown>): string {
  if (isSet(env.GOOGLE_GENAI_USE_VERTEXAI)) return 'vertex-ai';
  if (isSet(env.GOOGLE_GENAI_USE_GCA)) return 'oauth-personal';
  return 'gemini-api-key';
}
const isSet = (value: unknown) => value !== undefined && value !== null && value !== '' && value !== 'false';

/** `.gemini/settings.json`: what an unattended run needs, whatever an earlier run or person left there. */
export function geminiSettings(local: LocalConfig): Record<string, unknown> {
  return {
    security: {
      // Through the gateway the CLI signs in with an API key (the run token), whatever the env named.
      auth: { selectedType: local.gateway ? 'gemini-api-key' : authType(local.env) },
      folderTrust: { enabled: false },
      ...(local.toolSandbox ? { toolSandboxing: true } : {}),
    },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    general: { enableAutoUpdate: false, enableAutoUpdateNotification: false, enableNotifications: false },
    ...(local.toolSandbox ? { tools: { sandboxNetworkAccess: true } } : {}),
    ...(local.maxTurns ? { model: { maxSessionTurns: local.maxTurns } } : {}),
  };
}

/** The flags every run and probe carries. The prompt is `-p ""`: its text comes on stdin. */
function commonArgs(local: LocalConfig): string[] {
  return ['--output-format', 'stream-json', '--approval-mode', 'yolo', '-m', modelOf(local)];
}

const env = {
  GEMINI_CLI_TRUST_WORKSPACE: 'true',
  // One process: else the CLI relaunches itself as a child with a larger heap, and the parent ignores SIGTERM.
  GEMINI_CLI_NO_RELAUNCH: 'true',
};

function launch(input: LaunchInput): Launch {
  const { config: local, sessionId } = input;
  const options = [...commonArgs(local), ...local.extraArgs];
  const fresh = [...options, '-p', ''];
  const skillFiles = input.skills.flatMap((skill) => skill.files.map((file) => ({ ...file, path: `.gemini/skills/${skill.runtimeName}/${file.path}` })));
  return {
    args: sessionId ? [...options, '--resume', sessionId, '-p', ''] : fresh,
    stdin: input.prompt,
    env: { ...env },
    homeVariables: {},
    homeFiles: [
      { path: '.gemini/settings.json', content: `${JSON.stringify(geminiSettings(local), null, 2)}\n` },
      ...(input.instructions !== null ? [{ path: '.gemini/GEMINI.md', content: input.instructions }] : []),
      ...skillFiles,
    ],
    // Skills no longer desired go, and so do instructions no longer set.
    homeReplace: ['.gemini/skills', '.gemini/GEMINI.md'],
    files: [],
    retryFresh: sessionId ? { args: fresh, ifOutputIncludes: RESUME_REFUSED } : null,
  };
}

/**
 * Through Keel's model gateway (a provider of kind gemini): GOOGLE_GEMINI_BASE_URL is the
 * gateway's base for the provider (the CLI appends `/v1beta/models/...`) and GEMINI_API_KEY
 * the run token, sent as `x-goog-api-key`; the settings name the API-key sign-in. The
 * configured keys, Vertex AI and a Google login are withheld.
 */
const gateway: GatewaySupport = {
  kind: () => 'gemini',
  routing: (target) => ({
    env: { GOOGLE_GEMINI_BASE_URL: target.baseUrl },
    tokenVariables: ['GEMINI_API_KEY'],
    withholdVariables: ['GEMINI_API_KEY', 'GOOGLE_API_KEY', 'GOOGLE_GEMINI_BASE_URL', 'GOOGLE_GENAI_USE_VERTEXAI', 'GOOGLE_GENAI_USE_GCA', 'GOOGLE_CLOUD_PROJECT', 'GOOGLE_APPLICATION_CREDENTIALS'],
  }),
};

function usageContext(local: LocalConfig | undefined): UsageContext {
  const keyed = ['GEMINI_API_KEY', 'GOOGLE_API_KEY'].some((name) => isSet(local?.env[name])) || isSet(local?.env.GOOGLE_GENAI_USE_VERTEXAI);
  // An API key or Vertex AI is billed per token; a Google login of the home may be a free or paid plan Keel cannot tell.
  return { billingType: local === undefined || keyed ? 'metered_api' : 'unknown' };
}

export const geminiDriver: ToolDriver & { parser(config?: LocalConfig): ReturnType<ToolDriver['parser']> } = {
  ...FACTS,
  supportedVersions: '0.51 to 0.61 (tested with 0.61.0; 0.51.0 run by hand with the same flags and events): `-p` with `--output-format stream-json` (events init, message, tool_use, tool_result, error, result with stats), `--approval-mode yolo`, `--resume <session id>`',
  // Flags that neither move output or sessions, nor carry a prompt or credential, nor change the approval mode.
  allowedExtraArgs: [
    { flag: '--include-directories', takesValue: true },
    { flag: '--extensions', takesValue: true }, { flag: '-e', takesValue: true },
    { flag: '--allowed-mcp-server-names', takesValue: true },
    { flag: '--policy', takesValue: true },
    { flag: '--debug', takesValue: false }, { flag: '-d', takesValue: false },
  ],
  launch,
  /** The billing type comes from the agent's configuration when given (the events do not say how the CLI authenticated). */
  parser(local?: LocalConfig) {
    const context = usageContext(local);
    return { line: (data) => parseGeminiLine(data, context) };
  },
  classify: (input) => classifyGemini(input, FACTS.install),
  gateway,
  versionArgs: ['--version'],
  parseVersion: (stdout) => /\b(\d+\.\d+\.\d+[\w.+-]*)/.exec(stdout)?.[1] ?? null,
  probe(local) {
    // The settings a run writes (the login type among them): without them a base URL alone reads as a login the headless CLI refuses.
    return {
      args: [...commonArgs(local), '-p', ''], stdin: 'Reply with the single word OK.', env: { ...env }, homeVariables: {},
      homeFiles: [{ path: '.gemini/settings.json', content: `${JSON.stringify(geminiSettings(local), null, 2)}\n` }],
    };
  },
};
