import { defineCapability, method } from './define.ts';
import { id, object, uuid } from './schemas.ts';

export interface RunsOpenCapability {
  /**
   * Opens a run of an agent of the call's company. `context` is the run's context snapshot (what
   * the run works on: `{ issueId, projectId, taskKey, ... }`, a flat object of at most
   * 4 KiB of JSON), kept in the ledger with the run and found again with `runs.withContext`.
   */
  open(input: { agentId: string; invocationSource?: string; trigger?: string; context?: RunContext }): Promise<{ runId: string; token: string; tokenExpiresAt: string }>;
}

/** A run's context snapshot: flat, plain values (ids, keys), as the ledger stores and matches it. */
export type RunContext = Record<string, string | number | boolean | null>;

/** The largest context snapshot a run may carry, in bytes of JSON. */
export const MAX_RUN_CONTEXT_BYTES = 4096;

const runContext = {
  type: 'object', maxProperties: 32,
  propertyNames: { type: 'string', maxLength: 64 },
  additionalProperties: { anyOf: [{ type: 'string', maxLength: 1000 }, { type: 'number' }, { type: 'boolean' }, { type: 'null' }] },
};
export interface RunsCloseCapability {
  close(runId: string, input: { status: 'succeeded' | 'failed' | 'cancelled' | 'timed_out'; reason?: string }): Promise<{ runId: string; status: string }>;
}

export const runsOpen = defineCapability<{ runs: RunsOpenCapability }>()({
  id: 'runs.open',
  summary: 'Open runs of agents of the company a call serves, with a run token',
  members: { runs: { open: method('kernel', [{ type: 'object', required: ['agentId'], properties: { context: runContext } }], { type: 'object', required: ['runId', 'token', 'tokenExpiresAt'] }) } },
});

export const runsClose = defineCapability<{ runs: RunsCloseCapability }>()({
  id: 'runs.close',
  summary: 'Close runs of the company a call serves',
  members: { runs: { close: method('kernel', [id, object], { type: 'object', required: ['runId', 'status'] }) } },
});

/**
 * A run of the run ledger: who runs it, how it was invoked and whether it is live. The ledger
 * keeps no usage, result or log: the plugin that runs the run holds them (the runtime's
 * `run-outcomes` service answers them for its runs).
 */
export interface RunSummary {
  runId: string;
  status: 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled' | 'timed_out';
  agentId: string;
  adapterType: string | null;
  startedAt: string;
  finishedAt: string | null;
  createdAt: string;
  invocationSource: string;
}
export interface RunsReadCapability {
  /**
   * The runs of the company the call serves among these ids (at most 200), newest first; an
   * unknown id and another company's run are left out alike.
   */
  get(runIds: string[]): Promise<RunSummary[]>;
  /**
   * The runs of the company the call serves whose context snapshot (given to `runs.open`) holds
   * every one of these values, newest first, at most 200: `withContext({ issueId })` are the runs
   * bound to an issue. Indexed in the ledger, whatever plugin opened the runs.
   */
  withContext(match: RunContext): Promise<RunSummary[]>;
  /**
   * The latest runs of the company the call serves, newest first: those in `statuses` when given
   * (`['failed', 'timed_out']` are the runs that went wrong), created at or after `since` when
   * given, at most `limit` (1-200, default 50).
   */
  recent(filter?: RecentRunsFilter): Promise<RunSummary[]>;
}

/** Which runs `runs.recent` answers; every field is optional. */
export interface RecentRunsFilter { statuses?: RunSummary['status'][]; since?: string; limit?: number }

export const RUN_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out'] as const;

export const MAX_RUNS_GET = 200;

const runSummaries = { type: 'array', items: { type: 'object', required: ['runId', 'status', 'agentId', 'createdAt'] } };

export const runsRead = defineCapability<{ runs: RunsReadCapability }>()({
  id: 'runs.read',
  summary: 'Read the runs of the company a call serves from the run ledger',
  members: {
    runs: {
      get: method('kernel', [{ type: 'array', maxItems: MAX_RUNS_GET, items: uuid }], runSummaries),
      withContext: method('kernel', [{ ...runContext, minProperties: 1 }], runSummaries),
      recent: method('kernel', [{
        type: 'object', additionalProperties: false,
        properties: {
          statuses: { type: 'array', minItems: 1, maxItems: RUN_STATUSES.length, uniqueItems: true, items: { enum: [...RUN_STATUSES] } },
          // An ISO 8601 instant (the kernel compares it as timestamptz): a pattern, as calls are checked without formats.
          since: { type: 'string', maxLength: 40, pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,6})?(Z|[+-]\\d{2}:\\d{2})$' },
          limit: { type: 'integer', minimum: 1, maximum: MAX_RUNS_GET },
        },
      }], runSummaries, { required: 0 }),
    },
  },
});

export interface SecretsCapability {
  /** The environment of a run of the agent: plain values plus decrypted references and env grants. */
  resolveEnvironment(agentId: string): Promise<Record<string, string>>;
}

export const secretsResolve = defineCapability<{ secrets: SecretsCapability }>()({
  id: 'secrets.resolve',
  summary: "Decrypt the secrets of an agent's environment, to start its run",
  members: { secrets: { resolveEnvironment: method('kernel', [id], { type: 'object', additionalProperties: { type: 'string' } }) } },
});

