import { defineCapability, method } from './define.ts';
import { uuid } from './schemas.ts';
import type { ExecutionStatus } from '../events/execution-events.ts';

/**
 * Executions: isolates decide, executors act. A plugin granted `executions` asks the kernel to
 * run an agent (a process or one HTTP request) for an open run of its company; the kernel takes
 * what to run from the agent's adapter configuration a board actor wrote, never from the plugin,
 * supervises it outside the isolates, keeps its log, and tells the plugin by events.
 */
export const EXECUTION_TERMINAL_STATUSES: readonly ExecutionStatus[] = ['succeeded', 'failed', 'cancelled', 'timed_out', 'lost'];

export interface ProcessExecutionInput {
  kind: 'process';
  /** An open run of the run ledger (ctx.runs.open) of the calling company. The command, args, cwd, env (plain values and secret references, resolved by the vault), timeoutSec and graceSec come from that run's agent's adapterConfig (adapterType `process`), never from the plugin. */
  runId: string;
  /** Extra non-secret variables the plugin adds (SERVICE_WAKE_REASON, SERVICE_TASK_ID, SERVICE_WAKE_PAYLOAD_JSON, ...). The canonical run values (SERVICE_API_URL, SERVICE_API_KEY = the run token, SERVICE_COMPANY_ID, SERVICE_AGENT_ID, SERVICE_RUN_ID) always win over these and over configured ones. */
  env?: Record<string, string>;
  /** Files written into the run's working directory before the process starts (instructions bundle, skills); relative paths only; `content` is text, or base64 with `encoding: 'base64'` (binary assets). */
  files?: Array<{ path: string; content: string; encoding?: 'utf8' | 'base64' }>;
  /** A stream channel of the plugin (ctx.streams, the run's company) on which each batch of the log is published live (LiveLogEvent). */
  logChannel?: string;
  /** The environment lease the run works in (LeasedWorkspace): required exactly when the agent's adapterConfig names an environmentId. */
  workspace?: LeasedWorkspace;
  /**
   * A tool launch (ToolLaunch), for an agent of an adapter type the calling plugin contributes:
   * the board-approved `adapterConfig.command` started with these arguments. Refused for a
   * `process` agent, whose arguments are its configuration's.
   */
  args?: string[];
  /** Written to the process's standard input, which is then closed (a prompt: never in the arguments, which every user of the machine can read). At most 1 MiB. */
  stdin?: string;
  /** Run in the agent's persistent home instead of a fresh one (AgentHome); tool launches only. */
  home?: AgentHome;
  /**
   * Start the command once more, in the same execution and with these arguments, when it exits
   * non-zero and a line of its output (either stream) contains one of the substrings: a tool
   * that refuses to resume a session it no longer has starts a fresh one. The log says so with
   * a system line; the deadline covers both attempts. Tool launches only.
   */
  retryOnce?: { args: string[]; ifOutputIncludes: string[] };
  /**
   * Variables that receive the run token (the value of SERVICE_API_KEY), winning over the
   * agent's configured env and the plugin's `env`: a tool's API-key variable when Keel's model
   * gateway serves the run (the tool then authenticates to the gateway as the run). Tool launches only.
   */
  tokenVariables?: string[];
  /**
   * Names of the agent's configured env (adapterConfig.env, secrets granted as env, a leased
   * workspace's variables) NOT passed to the process, and not revealed from the vault: the
   * provider keys when the model gateway serves the run, so the process never holds them. Tool launches only.
   */
  withholdVariables?: string[];
}
/** What an agent calls back: this instance's API (SERVICE_API_URL) and its model gateway base (SERVICE_LLM_URL: `${apiUrl}/api/llm`). */
export interface CallbackUrls { apiUrl: string; llmUrl: string }
/**
 * The agent's persistent home, `<dataDir>/agent-homes/<agentId>` (0700, owned by the agent
 * user): HOME for its runs, so a tool's configuration and sessions survive between runs and two
 * agents never share them. `variables` point tool variables at folders in it
 * (`{ CLAUDE_CONFIG_DIR: '.claude' }`, created when missing); `replace` folders are emptied and
 * `files` written before the start, by the agent user itself (the home is the agent's: a link it
 * placed there cannot make the kernel write elsewhere). The agent's configured env wins over
 * `variables`.
 */
export interface AgentHome {
  variables?: Record<string, string>;
  /** The working directory when the agent's configuration names no cwd (and it has no environment lease): this folder of the home, the same on every run, so a tool that keeps its sessions per folder finds them again. The start's `files` are then written there by the agent user too. */
  workdir?: string;
  replace?: string[];
  files?: Array<{ path: string; content: string; encoding?: 'utf8' | 'base64' }>;
}
/**
 * `ctx.executions.probe`: the agent's configured command run once, outside any run (so without a
 * run token), with the agent's resolved environment and home, as the agent user, for an adapter
 * type the calling plugin contributes: a tool's version check or a minimal authenticated call
 * before anyone wakes the agent. Output is kept up to 64 KiB per stream, credentials masked.
 */
export interface ProbeInput {
  agentId: string;
  args: string[];
  stdin?: string;
  /** Default 60, at most 300. */
  timeoutSec?: number;
  /** Tool variables (the run-variable rule applies) and home folders, as for a tool launch. */
  env?: Record<string, string>;
  homeVariables?: Record<string, string>;
  /** Files written into the agent's home first, by the agent user, as for a tool launch (the tool's settings a run would have). */
  homeFiles?: Array<{ path: string; content: string; encoding?: 'utf8' | 'base64' }>;
  /**
   * As for a tool launch: these variables receive a run token. A probe has no run, so the
   * kernel opens one for it (invocation source `adapter_test`, closed when the probe ends): the
   * tool's call through the model gateway is then the agent's, metered and budgeted as a run's.
   */
  tokenVariables?: string[];
  /** As for a tool launch: configured variables not passed (nor revealed). */
  withholdVariables?: string[];
}
export interface ProbeResult { exitCode: number | null; signal: string | null; stdout: string; stderr: string; timedOut: boolean; spawnError: string | null }
/**
 * The directory of an environment lease as a process's working directory, with the
 * environment's variables. The kernel checks it itself before anything starts: `environmentId`
 * must be the agent's board-approved adapterConfig.environmentId; `cwd` must be an existing
 * directory named by `leaseId` (its last segment) inside a folder an operator mounted for the
 * run's company, links resolved (a link leading out is refused); every variable name must pass
 * the run-variable rule (no PATH, LD_*, NODE_OPTIONS, BASH_ENV, SERVICE_*, ...). Secret references
 * are resolved by the kernel's vault for the run's company (audited, never shown to the plugin).
 * The agent's own adapterConfig.env wins over these; the plugin's SERVICE_* extras and the
 * canonical run values over both. The directory is given to the agent user (mode 0700).
 */
export interface LeasedWorkspace {
  environmentId: string;
  leaseId: string;
  cwd: string;
  env?: Record<string, string | { type: 'secret_ref'; secretId: string; version?: 'latest' | number }>;
}
/**
 * What the executor publishes on an execution's `logChannel` for each batch of its log (every
 * 100 ms while lines arrive): the NDJSON records from byte `offset` to `nextOffset`, or, when
 * they do not fit a stream event, `truncated: true` (read them by offset: ctx.executions.log).
 */
export interface LiveLogEvent { event: 'log'; offset: number; nextOffset: number; content?: string; truncated?: true }
export interface HttpExecutionInput {
  kind: 'http';
  runId: string;
  /** Must be the run's agent's adapterConfig.url (or a path under it): a plugin cannot aim executions anywhere a board actor did not configure. SSRF rules as ctx.http.fetch; loopback only when an operator allows it. */
  url: string;
  /** Default POST. */
  method?: string;
  headers?: Record<string, string>;
  /** Sent as JSON. */
  body?: unknown;
  timeoutMs?: number;
  /** 'sse': the answer is read as Server-Sent Events, each event an output of the execution, until the stream ends or the deadline. */
  stream?: 'sse';
  /** The header that carries the run token (default `Authorization: Bearer <token>`); the token is never put in the body. */
  tokenHeader?: string;
  /** As for a process: where each batch of the log is published live. */
  logChannel?: string;
  /**
   * The field of the agent's adapterConfig that holds the URL every request must stay under
   * (default `url`). An http execution runs agents of adapterType `http`, or of an adapter type
   * a plugin contributes (anything but `process`), whose board-approved configuration names it.
   */
  baseUrlKey?: string;
  /**
   * Headers whose value is a secret of the agent's board-approved adapterConfig: the kernel
   * reads the field (a secret reference, resolved by the vault) and sets the header itself, so
   * the value never enters the isolate. `scheme` prefixes it (`Bearer`).
   */
  secretHeaders?: Array<{ header: string; configKey: string; scheme?: string }>;
  /**
   * The field of the agent's adapterConfig holding this Keel instance's address as the remote
   * side is told it (to call Keel back with the run token). The start is refused (403
   * `instance_address_denied`) unless it names an origin this instance serves.
   */
  instanceUrlKey?: string;
  /** Warnings about the configuration the plugin wants in the execution's log (system lines, before the request). */
  notes?: string[];
  /** Follow a run the request creates on a run server (the request's JSON answer names it): see RemoteRunFollow. */
  remoteRun?: RemoteRunFollow;
}
/**
 * A run created on a run server by the execution's request, then followed until it ends: its
 * event stream (Server-Sent Events, each an output; reconnected after `reconnectMs` on an
 * unexpected end, with `Last-Event-ID` when the server gave ids), its status polled while the
 * stream is unavailable (each answer an output `{event: 'status', data}`) and handed back to the
 * stream after, its stop asked at the deadline (`timeoutMs`, the execution then `timed_out`) or
 * on a cancel. A create answered 429, 5xx or not at all is sent again (same headers: carry an
 * Idempotency-Key) up to `createAttempts` times. URLs are templates with `{id}`, under the
 * configured base URL. A terminal event, or a status answer, whose data `status` is one of
 * `succeeded` or `completed` ends the execution succeeded; `failed`, `error`, `cancelled`,
 * `canceled` or `stopped` end it failed (`remote_run_failed`, `remote_run_cancelled`).
 */
export interface RemoteRunFollow {
  /**
   * The field of the create's JSON answer naming the remote run (default `id`), or several: the
   * first one present names it (`['id', 'run_id']`). A status answer naming another run in the
   * same field is not this run's.
   */
  idField?: string | string[];
  eventsUrl: string;
  statusUrl: string;
  stopUrl: string;
  reconnectMs: number;
  /**
   * SSE event names whose data carries the run's end (`status`, and `result`, `usage`). An event
   * sent without an `event:` line (the SSE default `message`) is named by its data's `event` field;
   * a terminal event whose data has no `status` ends the run as the last part of its name says
   * (`run.completed`: `completed`).
   */
  terminalEvents: string[];
  /** Default 3. */
  createAttempts?: number;
}
export interface ExecutionSummary {
  executionId: string;
  runId: string;
  agentId: string;
  kind: 'process' | 'http';
  status: ExecutionStatus;
  pid: number | null;
  exitCode: number | null;
  signal: string | null;
  httpStatus: number | null;
  errorCode: string | null;
  logBytes: number;
  logSha256: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  createdAt: string;
}
export interface ExecutionLogPage { content: string; offset: number; nextOffset: number; eof: boolean }
export interface ExecutionsCapability {
  /** Starts it (202-like: returns once the execution row is written and the start is under way). Refused (409 with a code naming why) when the agent is not active (paused/held, terminated, pending approval), its company is not active, its adapter config was not written or approved by a board actor, or the run is closed. The check happens again just before the process starts. */
  start(input: ProcessExecutionInput | HttpExecutionInput): Promise<ExecutionSummary>;
  get(executionId: string): Promise<ExecutionSummary>;
  /**
   * Several at once (at most 200 ids), in no particular order: those the plugin started, and
   * those of runs it opened (a contributed adapter's execution of the runtime's run); an unknown
   * id and any other execution are left out alike.
   */
  getMany(executionIds: string[]): Promise<ExecutionSummary[]>;
  /** The NDJSON log by byte offset: each line `{"seq":n,"at":iso,"stream":"stdout"|"stderr"|"system"|"sse","line":"..."}`. */
  log(executionId: string, options?: { offset?: number; limitBytes?: number }): Promise<ExecutionLogPage>;
  /** SIGTERM to the process group, SIGKILL after graceSec (http: abort). Idempotent; answers the summary. */
  cancel(executionId: string, options?: { reason?: string }): Promise<ExecutionSummary>;
  /** See ProbeInput. */
  probe(input: ProbeInput): Promise<ProbeResult>;
  /** The addresses a run's process is given to call Keel back (SERVICE_API_URL, SERVICE_LLM_URL): a tool's base-URL setting points at the model gateway with these. */
  callbackUrl(): Promise<CallbackUrls>;
}

export const MAX_EXECUTION_FILES = 1000;
/** What all the files of one start may hold together, decoded. */
export const MAX_EXECUTION_FILE_BYTES = 32 * 1024 * 1024;
export const MAX_EXECUTION_LOG_PAGE = 1_048_576;

/** A tool launch's standard input (its prompt). */
export const MAX_STDIN_CHARS = 1_048_576;
const logChannel = { type: 'string', pattern: '^[a-z][a-z0-9-]{0,63}$' };
const relativePath = { type: 'string', minLength: 1, maxLength: 500 };
const files = {
  type: 'array', maxItems: MAX_EXECUTION_FILES,
  items: { type: 'object', additionalProperties: false, required: ['path', 'content'], properties: { path: relativePath, content: { type: 'string', maxLength: 1_398_104 }, encoding: { enum: ['utf8', 'base64'] } } },
};
const args = { type: 'array', maxItems: 200, items: { type: 'string', maxLength: 8_192 } };
/** Variable names a tool launch hands the run token or withholds (names only; the run-variable rule applies to token variables). */
const variableNames = { type: 'array', maxItems: 20, uniqueItems: true, items: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]{0,127}$' } };
const homeVariables = { type: 'object', maxProperties: 20, propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_]{0,127}$' }, additionalProperties: relativePath };
/** A field of a run server's JSON answer that names its run. */
const idFieldName = { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]{0,63}$' };
const stringMap = { type: 'object', maxProperties: 100, additionalProperties: { type: 'string', maxLength: 65_536 } };
const processInput = {
  type: 'object', additionalProperties: false, required: ['kind', 'runId'],
  properties: {
    kind: { const: 'process' }, runId: uuid, env: stringMap, logChannel,
    workspace: {
      type: 'object', additionalProperties: false, required: ['environmentId', 'leaseId', 'cwd'],
      properties: {
        environmentId: uuid, leaseId: uuid, cwd: { type: 'string', minLength: 2, maxLength: 4096, pattern: '^/[^\\x00-\\x1f\\x7f]*$' },
        env: {
          type: 'object', maxProperties: 100,
          additionalProperties: {
            anyOf: [
              { type: 'string', maxLength: 65_536 },
              {
                type: 'object', additionalProperties: false, required: ['type', 'secretId'],
                properties: { type: { const: 'secret_ref' }, secretId: uuid, version: { anyOf: [{ const: 'latest' }, { type: 'integer', minimum: 1 }] } },
              },
            ],
          },
        },
      },
    },
    files,
    args,
    stdin: { type: 'string', maxLength: MAX_STDIN_CHARS },
    home: {
      type: 'object', additionalProperties: false,
      properties: { variables: homeVariables, replace: { type: 'array', maxItems: 20, items: relativePath }, files, workdir: relativePath },
    },
    retryOnce: {
      type: 'object', additionalProperties: false, required: ['args', 'ifOutputIncludes'],
      properties: { args, ifOutputIncludes: { type: 'array', minItems: 1, maxItems: 20, items: { type: 'string', minLength: 3, maxLength: 200 } } },
    },
    tokenVariables: variableNames,
    withholdVariables: variableNames,
  },
};
const probeInput = {
  type: 'object', additionalProperties: false, required: ['agentId', 'args'],
  properties: {
    agentId: uuid, args, stdin: { type: 'string', maxLength: MAX_STDIN_CHARS }, timeoutSec: { type: 'integer', minimum: 1, maximum: 300 },
    env: stringMap, homeVariables, homeFiles: files, tokenVariables: variableNames, withholdVariables: variableNames,
  },
};
const httpInput = {
  type: 'object', additionalProperties: false, required: ['kind', 'runId', 'url'],
  properties: {
    kind: { const: 'http' }, runId: uuid, url: { type: 'string', minLength: 1, maxLength: 2000 },
    method: { type: 'string', pattern: '^[A-Z]{3,7}$' }, headers: stringMap, body: {},
    timeoutMs: { type: 'integer', minimum: 1, maximum: 86_400_000 }, stream: { const: 'sse' },
    tokenHeader: { type: 'string', pattern: '^[A-Za-z0-9-]{1,100}$' }, logChannel,
    baseUrlKey: { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9_]{0,63}$' },
    instanceUrlKey: { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9_]{0,63}$' },
    notes: { type: 'array', maxItems: 20, items: { type: 'string', maxLength: 500 } },
    secretHeaders: {
      type: 'array', maxItems: 4,
      items: {
        type: 'object', additionalProperties: false, required: ['header', 'configKey'],
        properties: {
          header: { type: 'string', pattern: '^[A-Za-z0-9-]{1,100}$' }, configKey: { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9_]{0,63}$' },
          scheme: { type: 'string', pattern: '^[A-Za-z]{1,20}$' },
        },
      },
    },
    remoteRun: {
      type: 'object', additionalProperties: false, required: ['eventsUrl', 'statusUrl', 'stopUrl', 'reconnectMs', 'terminalEvents'],
      properties: {
        idField: { anyOf: [idFieldName, { type: 'array', minItems: 1, maxItems: 5, items: idFieldName }] },
        eventsUrl: { type: 'string', minLength: 1, maxLength: 2000 }, statusUrl: { type: 'string', minLength: 1, maxLength: 2000 },
        stopUrl: { type: 'string', minLength: 1, maxLength: 2000 },
        reconnectMs: { type: 'integer', minimum: 10, maximum: 600_000 },
        terminalEvents: { type: 'array', minItems: 1, maxItems: 20, items: { type: 'string', minLength: 1, maxLength: 100 } },
        createAttempts: { type: 'integer', minimum: 1, maximum: 10 },
      },
    },
  },
};
const summary = { type: 'object', required: ['executionId', 'runId', 'agentId', 'kind', 'status', 'logBytes', 'createdAt'] };

export const executions = defineCapability<{ executions: ExecutionsCapability }>()({
  id: 'executions',
  summary: "Run the company's agents as their board-approved adapter configuration says (a process or an HTTP request), cancel them and read their logs",
  members: {
    executions: {
      start: method('kernel', [{ oneOf: [processInput, httpInput] }], summary),
      get: method('kernel', [uuid], summary),
      getMany: method('kernel', [{ type: 'array', maxItems: 200, items: uuid }], { type: 'array', items: summary }),
      log: method('kernel', [uuid, {
        type: 'object', additionalProperties: false,
        properties: { offset: { type: 'integer', minimum: 0 }, limitBytes: { type: 'integer', minimum: 1, maximum: MAX_EXECUTION_LOG_PAGE } },
      }], { type: 'object', required: ['content', 'offset', 'nextOffset', 'eof'] }, { required: 1 }),
      cancel: method('kernel', [uuid, { type: 'object', additionalProperties: false, properties: { reason: { type: 'string', maxLength: 500 } } }], summary, { required: 1 }),
      probe: method('kernel', [probeInput], { type: 'object', required: ['exitCode', 'stdout', 'stderr', 'timedOut'] }),
      callbackUrl: method('kernel', [], { type: 'object', required: ['apiUrl', 'llmUrl'] }, { scope: 'instance' }),
    },
  },
});

