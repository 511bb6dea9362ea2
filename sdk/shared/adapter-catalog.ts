import { LOCAL_TOOLS, type LocalTool } from './local-tools.ts';

/**
 * What an agent hiring other agents needs to know about each built-in adapter type: what it
 * does, its configuration fields with their defaults, and an example. The llms texts are
 * rendered from this one table, so a field documented here is a field the adapter reads.
 *
 * Declared in the SDK, not the kernel: it is the contract between the kernel (which stores an
 * agent's adapterConfig and serves these texts, kernel/tenancy/llms-routes.ts, even with no
 * plugin installed), the plugins that run the types (the coding-agents drivers take their
 * tool's facts from LOCAL_TOOLS, local-tools.ts) and the console, which reads it as JSON.
 */

/** The adapter types Keel documents; externally registered types are accepted as well (kernel/tenancy/adapter-defaults.ts). */
export const BUILT_IN_ADAPTER_TYPES = [
  'process', 'http', 'alpha_local', 'beta_local', 'gamma_local', 'delta_local', 'pi_local',
  'eta_local', 'cursor', 'zeta_gateway', 'eta_gateway',
] as const;

export interface AdapterField {
  name: string;
  type: string;
  required: boolean;
  default?: string;
  /** The accepted values, when the field takes one of a few (the console offers them as a choice). */
  values?: readonly string[];
  notes: string;
}

export interface AdapterDescription {
  type: (typeof BUILT_IN_ADAPTER_TYPES)[number];
  summary: string;
  fields: AdapterField[];
  example: Record<string, unknown>;
  /** For an adapter that drives a command-line tool on this machine: the tool, its executable and how to install it. */
  tool?: { name: string; executable: string; install: string };
}

const ENV: AdapterField = {
  name: 'env', type: 'object', required: false,
  notes: 'environment variables: a string, or a secret reference {"type": "secret_ref", "secretId": "<uuid>", "version": "latest"}; never put a secret value here in plain text',
};
const TIMEOUT: AdapterField = { name: 'timeoutSec', type: 'integer', required: false, default: '0', notes: 'seconds before the run is stopped as timed_out; 0 means no limit' };
const GRACE: AdapterField = { name: 'graceSec', type: 'integer', required: false, default: '15', notes: 'seconds between SIGTERM and SIGKILL when a run is stopped' };
const CWD: AdapterField = { name: 'cwd', type: 'string', required: false, notes: 'absolute working directory of the run; a fresh directory per run when absent' };
const MODEL: AdapterField = { name: 'model', type: 'string', required: false, notes: 'model name passed to the tool' };
const INSTRUCTIONS: AdapterField = { name: 'instructionsFilePath', type: 'string', required: false, notes: 'path of the agent\'s instructions file (AGENTS.md); relative paths need cwd' };
const EXTRA_ARGS: AdapterField = { name: 'extraArgs', type: 'array of strings', required: false, notes: 'extra command-line arguments for the tool' };

/** A local tool's catalog row, from its facts (local-tools.ts) and the fields every local adapter shares. */
function localTool(spec: LocalTool & { type: AdapterDescription['type'] }): AdapterDescription {
  return {
    type: spec.type,
    summary: `Runs ${spec.tool} (\`${spec.executable}\`) on this machine for each run, unattended, in its non-interactive mode: the prompt on standard input, the run token only in the environment, the agent's instructions and skills where the tool reads them, its session resumed per task, its output read into a transcript, usage and a result. The tool must be installed where Keel runs (\`${spec.install}\`); POST /api/agents/{agentId}/adapter-test checks it and the model call before a run.`,
    fields: [
      { name: 'command', type: 'string', required: false, default: spec.executable, notes: `the tool's executable (absolute path, or a name found on PATH /usr/local/bin:/usr/bin:/bin)` },
      { ...CWD, notes: 'absolute working directory of the run; the run\'s own fresh directory when absent' },
      { ...MODEL, ...(spec.defaultModel ? { default: spec.defaultModel } : {}), notes: spec.defaultModel ? 'model name passed to the tool' : 'model name passed to the tool; the tool\'s own default when absent' },
      ...(spec.efforts ? [{ name: 'effort', type: 'string', required: false, values: spec.efforts, notes: `reasoning effort: one of ${spec.efforts.join(', ')}; the tool's own default when absent` }] : []),
      ...(spec.maxTurns ? [{ name: 'maxTurns', type: 'integer', required: false, notes: 'the most agent turns of one run (1 to 1000); the run fails with tool_max_turns past it' }] : []),
      INSTRUCTIONS,
      {
        name: 'modelProvider', type: 'string', required: false,
        notes: spec.gateway
          ? `a model provider of the company (its name) that serves the runs through Keel's model gateway, or "none" for the tool's own credentials; by default the company's default provider of ${spec.gateway}. A served run gets the tool's base URL pointed at the gateway and its run token as the API key; the provider keys of env are withheld`
          : 'not used: this tool does not route its model calls through Keel\'s model gateway (it keeps its own credentials); "none" or a name is accepted and ignored',
      },
      { ...EXTRA_ARGS, default: '[]', notes: 'extra flags for the tool, each from its allow-list (a value follows its flag, or --flag=value); never the prompt, a credential, or a flag that moves output or sessions' },
      { name: 'toolSandbox', type: 'boolean', required: false, default: 'false', notes: 'keep the tool\'s own sandbox as well (where it still lets the agent reach Keel); by default the tool runs unattended with its shell and file tools, and Keel\'s isolation (the agent user, its own home, an environment built from scratch) is the boundary' },
      { ...TIMEOUT, default: '3600', notes: 'seconds before the run is stopped as timed_out; 0 means no limit' },
      GRACE,
      { ...ENV, notes: `${ENV.notes}; may set the tool's own variables, such as its API key (as a secret reference) or a base URL` },
    ],
    tool: { name: spec.tool, executable: spec.executable, install: spec.install },
    example: { adapterType: spec.type, adapterConfig: { cwd: '/srv/work/repo', ...(spec.efforts ? { effort: spec.efforts.includes('medium') ? 'medium' : spec.efforts[0] } : {}), timeoutSec: 1800 } },
  };
}

export const ADAPTER_CATALOG: readonly AdapterDescription[] = [
  {
    type: 'process',
    summary: 'Starts a command for each run. The process gets SERVICE_API_URL, SERVICE_API_KEY (the run\'s short-lived token), SERVICE_LLM_URL (the base of the model gateway, /api/llm), SERVICE_COMPANY_ID, SERVICE_AGENT_ID, SERVICE_RUN_ID, SERVICE_TASK_ID, SERVICE_WAKE_REASON and SERVICE_WAKE_PAYLOAD_JSON, and reports usage with stdout lines {"type": "service.usage", ...} and its result with {"type": "service.result", ...}.',
    fields: [
      { name: 'command', type: 'string', required: true, notes: 'the program to run (absolute path, or a name found on PATH)' },
      { name: 'args', type: 'array of strings', required: false, default: '[]', notes: 'its arguments' },
      CWD, ENV, TIMEOUT, GRACE,
    ],
    example: { adapterType: 'process', adapterConfig: { command: 'node', args: ['agent.js'], cwd: '/srv/agents/triage', timeoutSec: 600 } },
  },
  {
    type: 'http',
    summary: 'Sends one HTTP request per run to a service that does the work. The body is payloadTemplate plus agentId, runId, companyId and wake; the run token travels in the Authorization header, never in the body. A 2xx answer ends the run succeeded, its JSON as the result and its `usage` as a cost event.',
    fields: [
      { name: 'url', type: 'string', required: true, notes: 'the endpoint (https; loopback only where the operator allows it)' },
      { name: 'method', type: 'string', required: false, default: 'POST', notes: 'HTTP method' },
      { name: 'headers', type: 'object', required: false, notes: 'extra non-secret headers' },
      { name: 'timeoutMs', type: 'integer', required: false, default: '30000', notes: 'deadline of the request' },
      { name: 'payloadTemplate', type: 'object', required: false, default: '{}', notes: 'fields merged into every request body' },
    ],
    example: { adapterType: 'http', adapterConfig: { url: 'https://agents.example.com/run', timeoutMs: 60000, payloadTemplate: { team: 'support' } } },
  },
  localTool(LOCAL_TOOLS.alpha_local),
  localTool(LOCAL_TOOLS.beta_local),
  localTool(LOCAL_TOOLS.gamma_local),
  localTool(LOCAL_TOOLS.delta_local),
  localTool(LOCAL_TOOLS.pi_local),
  {
    type: 'eta_local',
    summary: 'Reserved for a further local coding tool: no tool is driven by it yet, so a wake of such an agent answers 409 adapter_unavailable. Use one of the other local adapters, or `process` with a command of your own.',
    fields: [MODEL, CWD, INSTRUCTIONS, EXTRA_ARGS, ENV, TIMEOUT, GRACE],
    example: { adapterType: 'eta_local', adapterConfig: { cwd: '/srv/work/repo' } },
  },
  localTool(LOCAL_TOOLS.cursor),
  {
    type: 'zeta_gateway',
    summary: 'Connects the agent to a gateway device that runs it elsewhere. Skills cannot be pushed to it (sync mode unsupported).',
    fields: [
      { name: 'url', type: 'string', required: true, notes: 'address of the gateway' },
      { name: 'disableDeviceAuth', type: 'boolean', required: false, default: 'false', notes: 'when false, Keel generates the device key itself; the key is never shown' },
      TIMEOUT,
    ],
    example: { adapterType: 'zeta_gateway', adapterConfig: { url: 'wss://gateway.example.com' } },
  },
  {
    type: 'eta_gateway',
    summary: 'Runs the agent on a remote run server: creates a run there, follows its event stream (polling as a fallback) and stops it at the timeout.',
    fields: [
      { name: 'apiBaseUrl', type: 'string', required: true, notes: 'base URL of the run server; HTTPS for non-loopback hosts' },
      { name: 'apiKey', type: 'secret reference', required: true, notes: 'the run server\'s key, stored as a secret reference' },
      { name: 'dangerouslyAllowInsecureRemoteHttp', type: 'boolean', required: false, default: 'false', notes: 'allows plain HTTP to non-loopback hosts' },
      { name: 'sessionKeyStrategy', type: 'string', required: false, default: 'issue', notes: 'issue, agent, run or none' },
      { name: 'timeoutSec', type: 'integer', required: false, default: '600', notes: 'run timeout in seconds' },
      { name: 'eventReconnectMs', type: 'integer', required: false, default: '2000', notes: 'delay before reconnecting the event stream' },
      { name: 'serviceApiUrl', type: 'string', required: false, notes: 'the Keel address reachable from the run host' },
      { name: 'headers', type: 'object', required: false, notes: 'extra non-secret headers; authentication and session headers cannot be overridden' },
      { name: 'instructions', type: 'string', required: false, notes: 'stable instructions sent apart from the wake input' },
    ],
    example: { adapterType: 'eta_gateway', adapterConfig: { apiBaseUrl: 'https://runner.example.com/api', apiKey: { type: 'secret_ref', secretId: '<uuid>', version: 'latest' } } },
  },
];

export function adapterDescription(type: string): AdapterDescription | undefined {
  return ADAPTER_CATALOG.find((entry) => entry.type === type);
}

/** Icon names the console draws for agents; `icon` is free text, these are the ones it knows. */
export const AGENT_ICONS: readonly string[] = [
  'bot', 'brain', 'briefcase', 'bug', 'chart', 'clipboard', 'code', 'compass', 'crown', 'database', 'eye', 'feather',
  'flask', 'gavel', 'globe', 'hammer', 'headset', 'heart', 'key', 'lightbulb', 'lock', 'mail', 'megaphone', 'message',
  'palette', 'pen', 'rocket', 'search', 'server', 'shield', 'sparkles', 'star', 'target', 'terminal', 'wrench', 'zap',
];
