import { defineCapability, method } from './define.ts';
import { uuid } from './schemas.ts';

/**
 * Workspace processes: a working copy's runtime services (long-running processes) and
 * workspace commands (jobs that run to an exit code), which a board user defined and a board
 * user asks to start. The kernel runs them outside the isolates with the same supervision as
 * agent runs (kernel/executions/): as the unprivileged agent user, in a PID namespace of their
 * own, with an environment built from scratch, in a cwd the kernel confines to a folder an
 * operator mounted for the company for the calling plugin. Only an invocation made by a board
 * user with access to the company may start or stop one; an agent's never.
 */
export type WorkspaceProcessPurpose = 'service' | 'command';
export type WorkspaceProcessStatus = 'starting' | 'running' | 'succeeded' | 'failed' | 'cancelled' | 'timed_out' | 'lost';

/** A secret of the company's vault, resolved by the kernel when the process starts (the value never enters the isolate). */
export interface WorkspaceSecretRef { type: 'secret_ref'; secretId: string; version?: 'latest' | number }

export interface WorkspaceProcessInput {
  purpose: WorkspaceProcessPurpose;
  /** The plugin's own id of the workspace (recorded on the execution, and listed by). */
  workspaceRef: string;
  /** The service's or command's name, for the log and the activity. */
  label: string;
  /** An absolute directory inside a folder an operator mounted for the company (the plugin's `folders`); links are resolved and must stay inside. */
  cwd: string;
  command: string;
  args?: string[];
  /** Added to PATH, HOME, LANG and TMPDIR (the kernel's). Names refused by the one rule for run variables (refusedRunVariable: PATH, LD_*, NODE_OPTIONS, BASH_ENV, SERVICE_*, KEEL_*, ...) are refused. */
  env?: Record<string, string | WorkspaceSecretRef>;
  /** A command's deadline (default none); the process group is stopped when it passes (`timed_out`). */
  timeoutSec?: number;
  /** Between SIGTERM and SIGKILL on a stop (default 5). */
  graceSec?: number;
}

export interface WorkspaceProcessSummary {
  executionId: string;
  purpose: WorkspaceProcessPurpose;
  workspaceRef: string;
  label: string;
  status: WorkspaceProcessStatus;
  exitCode: number | null;
  signal: string | null;
  errorCode: string | null;
  logBytes: number;
  startedAt: string | null;
  finishedAt: string | null;
  createdAt: string;
}

export interface WorkspaceProcessesCapability {
  /** Starts it; answers once the execution row is written and the start is under way. */
  start(input: WorkspaceProcessInput): Promise<WorkspaceProcessSummary>;
  get(executionId: string): Promise<WorkspaceProcessSummary>;
  /** The NDJSON log by byte offset, as ctx.executions.log. */
  log(executionId: string, options?: { offset?: number; limitBytes?: number }): Promise<{ content: string; offset: number; nextOffset: number; eof: boolean }>;
  /** SIGTERM to the process group (SIGKILL after graceSec), by whichever Keel process runs it; answers once it ended (or after `waitMs`, default 10 000, still live). Idempotent. */
  stop(executionId: string, options?: { reason?: string; waitMs?: number }): Promise<WorkspaceProcessSummary>;
}

export const MAX_WORKSPACE_PROCESS_ARGS = 100;

const secretRef = {
  type: 'object', additionalProperties: false, required: ['type', 'secretId'],
  properties: { type: { const: 'secret_ref' }, secretId: uuid, version: { anyOf: [{ const: 'latest' }, { type: 'integer', minimum: 1 }] } },
};
const startInput = {
  type: 'object', additionalProperties: false, required: ['purpose', 'workspaceRef', 'label', 'cwd', 'command'],
  properties: {
    purpose: { enum: ['service', 'command'] },
    workspaceRef: { type: 'string', minLength: 1, maxLength: 200 },
    label: { type: 'string', minLength: 1, maxLength: 200 },
    cwd: { type: 'string', minLength: 1, maxLength: 4096, pattern: '^/' },
    command: { type: 'string', minLength: 1, maxLength: 4096 },
    args: { type: 'array', maxItems: MAX_WORKSPACE_PROCESS_ARGS, items: { type: 'string', maxLength: 65_536 } },
    env: { type: 'object', maxProperties: 100, additionalProperties: { anyOf: [{ type: 'string', maxLength: 65_536 }, secretRef] } },
    timeoutSec: { type: 'integer', minimum: 1, maximum: 7 * 24 * 3600 },
    graceSec: { type: 'integer', minimum: 0, maximum: 300 },
  },
};
const summary = { type: 'object', required: ['executionId', 'purpose', 'workspaceRef', 'label', 'status', 'logBytes', 'createdAt'] };

export const executionsWorkspace = defineCapability<{ workspaceProcesses: WorkspaceProcessesCapability }>()({
  id: 'executions.workspace',
  summary: "Run a workspace's board-defined services and commands as the unprivileged agent user, in a folder an operator mounted for the company, on a board user's request",
  members: {
    workspaceProcesses: {
      start: method('kernel', [startInput], summary),
      get: method('kernel', [uuid], summary),
      log: method('kernel', [uuid, {
        type: 'object', additionalProperties: false,
        properties: { offset: { type: 'integer', minimum: 0 }, limitBytes: { type: 'integer', minimum: 1, maximum: 1_048_576 } },
      }], { type: 'object', required: ['content', 'offset', 'nextOffset', 'eof'] }, { required: 1 }),
      stop: method('kernel', [uuid, {
        type: 'object', additionalProperties: false,
        properties: { reason: { type: 'string', maxLength: 500 }, waitMs: { type: 'integer', minimum: 0, maximum: 60_000 } },
      }], summary, { required: 1 }),
    },
  },
});
