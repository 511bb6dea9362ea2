import { defineCapability, method } from './define.ts';
import { id, object, uuid } from './schemas.ts';

export interface RunsOpenCapability {
  open(input: { agentId: string; invocationSource?: string; trigger?: string }): Promise<{ runId: string; token: string; tokenExpiresAt: string }>;
}
export interface RunsCloseCapability {
  close(runId: string, input: { status: 'succeeded' | 'failed' | 'cancelled' | 'timed_out'; reason?: string }): Promise<{ runId: string; status: string }>;
}

export const runsOpen = defineCapability<{ runs: RunsOpenCapability }>()({
  id: 'runs.open',
  summary: 'Open runs of agents of the company a call serves, with a run token',
  members: { runs: { open: method('kernel', [{ type: 'object', required: ['agentId'] }], { type: 'object', required: ['runId', 'token', 'tokenExpiresAt'] }) } },
});

export const runsClose = defineCapability<{ runs: RunsCloseCapability }>()({
  id: 'runs.close',
  summary: 'Close runs of the company a call serves',
  members: { runs: { close: method('kernel', [id, object], { type: 'object', required: ['runId', 'status'] }) } },
});

/**
 * A run of the run ledger, as the issue routes answer it. `logBytes` and whatever else the
 * ledger does not store yet is null.
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
  usageJson: unknown;
  resultJson: unknown;
  logBytes: number | null;
}
export interface RunsReadCapability {
  /**
   * The runs of the company the call serves among these ids (at most 200), newest first; an
   * unknown id and another company's run are left out alike.
   */
  get(runIds: string[]): Promise<RunSummary[]>;
}

export const MAX_RUNS_GET = 200;

export const runsRead = defineCapability<{ runs: RunsReadCapability }>()({
  id: 'runs.read',
  summary: 'Read the runs of the company a call serves from the run ledger',
  members: {
    runs: {
      get: method('kernel', [{ type: 'array', maxItems: MAX_RUNS_GET, items: uuid }], {
        type: 'array', items: { type: 'object', required: ['runId', 'status', 'agentId', 'createdAt'] },
      }),
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

