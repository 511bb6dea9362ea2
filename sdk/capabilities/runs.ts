import { defineCapability, method } from './define.ts';
import { id, object } from './schemas.ts';

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

export interface SecretsCapability {
  /** The environment of a run of the agent: plain values plus decrypted references and env grants. */
  resolveEnvironment(agentId: string): Promise<Record<string, string>>;
}

export const secretsResolve = defineCapability<{ secrets: SecretsCapability }>()({
  id: 'secrets.resolve',
  summary: "Decrypt the secrets of an agent's environment, to start its run",
  members: { secrets: { resolveEnvironment: method('kernel', [id], { type: 'object', additionalProperties: { type: 'string' } }) } },
});

