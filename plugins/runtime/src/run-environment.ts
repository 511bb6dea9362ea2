import type { AgentConfigView } from '@keel/sdk/plugin';
import { errorCode, type Row, type RuntimeContext } from './context.ts';

/** How long a run waits, queued, before it asks its environment for a lease again. */
export const LEASE_RETRY_MS = 5_000;

export interface RunWorkspace {
  environmentId: string;
  leaseId: string;
  cwd: string;
  env: Record<string, string | { type: 'secret_ref'; secretId: string; version?: 'latest' | number }>;
}

/** The environment a process agent's board-approved configuration names (adapterConfig.environmentId), or null. */
export function environmentOf(agent: AgentConfigView): string | null {
  const named = agent.adapterConfig.environmentId;
  return typeof named === 'string' && named.length > 0 ? named : null;
}

export class LeaseLimitReached extends Error {
  readonly environmentId: string;
  constructor(environmentId: string) {
    super('The environment hands out no more leases now');
    this.environmentId = environmentId;
  }
}

/**
 * The lease a run of the agent works in, from the environments plugin (`run-lease`: an
 * ephemeral lease of the calling company's environment, released when the run closes; the same
 * lease again for a retried start). Null when the agent names no environment. The environment at
 * its concurrency limit throws LeaseLimitReached: the run then waits queued (waitForLease).
 * Anything else refuses the start with the plugin's code (`environment_not_found` for an unknown
 * id or another company's, `environment_archived`, `lease_directory_unavailable`, ...), and
 * `environment_unavailable` when the environments plugin is not running.
 */
export async function leaseForRun(ctx: RuntimeContext, agent: AgentConfigView, run: Row): Promise<RunWorkspace | null> {
  const environmentId = environmentOf(agent);
  if (!environmentId) return null;
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(environmentId)) {
    throw Object.assign(new Error('adapterConfig.environmentId is not the id of an environment'), { code: 'environment_not_found' });
  }
  let answer: { lease: { id: string; path: string }; envVars: RunWorkspace['env'] };
  try {
    answer = await ctx.services.call('environments', 'run-lease', { environmentId, runId: String(run.id), issueId: run.issue_id ?? null });
  } catch (error) {
    const code = errorCode(error);
    if (code === 'lease_limit_reached') throw new LeaseLimitReached(environmentId);
    if (code === 'service_unavailable' || code === 'plugin_unavailable' || code === 'service_not_found') {
      throw Object.assign(new Error('The environments plugin is not running: runs in an environment cannot start'), { code: 'environment_unavailable' });
    }
    throw error;
  }
  return { environmentId, leaseId: answer.lease.id, cwd: answer.lease.path, env: answer.envVars };
}

/**
 * A run whose environment is at its limit stays queued and is tried again (a `start-runs` job
 * LEASE_RETRY_MS later, one per run and retry time), until a lease frees up or the run is
 * cancelled: it is never dropped. Its stream says why it waits.
 */
export async function waitForLease(ctx: RuntimeContext, run: Row, environmentId: string): Promise<void> {
  const retryAt = Math.ceil((Date.now() + LEASE_RETRY_MS) / 1000) * 1000;
  await ctx.jobs.enqueue('start-runs', { agentId: String(run.agent_id), runId: String(run.id) }, {
    runAt: new Date(retryAt).toISOString(), singletonKey: `lease-wait-${String(run.id)}-${retryAt}`,
  });
  await ctx.db.query(`update runs set updated_at = clock_timestamp() where id = $1`, [run.id]);
  await ctx.streams.publish(`run-${String(run.id)}`, { event: 'status', status: 'queued', waitingFor: 'environment_lease', environmentId });
}
