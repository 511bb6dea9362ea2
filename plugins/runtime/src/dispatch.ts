import type { AgentConfigView } from '@keel/sdk/plugin';
import { maxConcurrentRuns } from './admission.ts';
import { httpRequest, processEnvironment, wakeOf } from './adapters.ts';
import { contributorOf, enqueuedPayload, errorCode, OWN_ADAPTERS, runChannel, unavailableMessage, type Row, type RuntimeContext } from './context.ts';
import type { JobPayload } from './plugin.gen.ts';
import { instructionsForRun } from './instructions.ts';
import { skillsForRun } from './run-skills.ts';
import { finishRun } from './run-end.ts';
import { sessionFor } from './sessions.ts';
import { lockAgentState } from './wakeups.ts';
import { recordActivity } from './activity.ts';
import { LeaseLimitReached, leaseForRun, waitForLease } from './run-environment.ts';

const NOT_STARTABLE = new Set(['terminated', 'pending_approval', 'paused']);

/**
 * Starts the queued runs of an agent, oldest first, while fewer than its maxConcurrentRuns
 * run. Called by the `start-runs` job (enqueued with each queued run, so queued work lives in
 * the database, never in a process's memory) and when a run of the agent ends. The agent-state
 * row is locked for the whole pass, so two processes never start the same run or exceed the
 * limit. Everything is checked again here, just before the start (the executor checks the
 * agent and company once more before the process starts).
 */
export async function dispatch(ctx: RuntimeContext, agentId: string, known?: AgentConfigView | null, createdInCall?: string): Promise<void> {
  const companyId = ctx.invocation.companyId!;
  await lockAgentState(ctx, companyId, agentId);
  const { rows: queued } = await ctx.db.query(`select * from runs where agent_id = $1 and status = 'queued' order by created_at, id`, [agentId]);
  // Nothing queued (a run's end, most often): nothing to read about the agent.
  if (queued.length === 0) return;
  // `known`: the configuration the caller read in this call (a heartbeat's slot); else read now.
  const agent = known === undefined ? await ctx.agents.getConfig(agentId) : known;
  const { rows: running } = await ctx.db.query(`select count(*)::int as n from runs where agent_id = $1 and status = 'running'`, [agentId]);
  if (!agent || NOT_STARTABLE.has(agent.status)) {
    for (const run of queued) await cancelQueued(ctx, run, agent ? `agent_${agent.status}` : 'agent_not_found');
    return;
  }
  let free = maxConcurrentRuns(agent) - Number(running[0]!.n);
  for (const run of queued) {
    if (free <= 0) break;
    if (await blockedNow(ctx, run)) continue;
    // A run waiting for its environment's lease takes no slot of the agent's.
    if (await start(ctx, agent, run, run.id === createdInCall)) free -= 1;
  }
}

/**
 * A project budget hard stop placed since the wakeup: the queued run is cancelled instead of
 * started (an agent's or company's stop pauses it, which the status check and the executor see).
 */
async function blockedNow(ctx: RuntimeContext, run: Row): Promise<boolean> {
  if (!run.project_id) return false;
  const { blocks } = await ctx.services.call<{ blocks: Array<{ scopeType: string }> }>('costs', 'budget-blocks', { agentId: run.agent_id, projectId: run.project_id });
  if (!blocks.some((block) => block.scopeType === 'project')) return false;
  await cancelQueued(ctx, run, 'budget_hard_stop_project');
  return true;
}

/** Answers false when the run stays queued, waiting for a lease of its environment. */
/** `unseen`: the run was created in this call, so its stream has no listener yet (see wake) and its start is not announced there. */
async function start(ctx: RuntimeContext, agent: NonNullable<Awaited<ReturnType<RuntimeContext['agents']['getConfig']>>>, run: Row, unseen: boolean): Promise<boolean> {
  const runId = String(run.id);
  const { rows: wakeups } = await ctx.db.query('select * from wakeups where id = $1', [run.wakeup_id]);
  const wakeup = wakeups[0]!;
  const sessionId = run.force_fresh_session ? null : await sessionFor(ctx, String(run.agent_id), String(run.task_key));
  let execution: { executionId: string; startedAt?: string | null };
  let skills: Awaited<ReturnType<typeof skillsForRun>> | null = null;
  let contributor: string | null = null;
  try {
    contributor = await contributorOf(ctx, agent.adapterType);
    if (!contributor && !OWN_ADAPTERS.has(agent.adapterType)) {
      await failBeforeStart(ctx, run, 'adapter_unavailable', unavailableMessage(agent.adapterType));
      return true;
    }
    if (contributor) {
      // The contributing plugin starts (and drives) the execution; a repeated start answers the same
      // one. It gets the agent's instructions and skills as a process run would have them
      // (`files` under .keel/, their SERVICE_* variables), to place where its tool reads them.
      const instructions = await instructionsForRun(ctx, agent);
      skills = await skillsForRun(ctx, String(run.agent_id));
      execution = await ctx.services.call<{ executionId: string; startedAt: string | null }>(contributor, 'adapter-run', {
        runId, agentId: run.agent_id, issueId: run.issue_id ?? null, taskKey: run.task_key, sessionId, wake: wakeOf(run, wakeup, sessionId),
        files: [...instructions.files, ...skills.files], env: { ...instructions.env, ...skills.env }, skills: skills.runtimeNames,
      });
    } else if (agent.adapterType === 'process') {
      // An agent whose configuration names an environment works in a lease of it (run-environment.ts).
      const workspace = await leaseForRun(ctx, agent, run);
      const instructions = await instructionsForRun(ctx, agent);
      skills = await skillsForRun(ctx, String(run.agent_id));
      const files = [...instructions.files, ...skills.files];
      execution = await ctx.executions.start({
        kind: 'process', runId, logChannel: runChannel(runId), env: { ...processEnvironment(run, wakeup, sessionId), ...instructions.env, ...skills.env },
        ...(files.length > 0 ? { files } : {}), ...(workspace ? { workspace } : {}),
      });
    } else {
      execution = await ctx.executions.start({ ...httpRequest(agent, run, wakeup, sessionId), logChannel: runChannel(runId) });
    }
  } catch (error) {
    if (error instanceof LeaseLimitReached) {
      await waitForLease(ctx, run, error.environmentId);
      return false;
    }
    await failBeforeStart(ctx, run, contributor && errorCode(error) === 'plugin_unavailable' ? 'adapter_unavailable' : errorCode(error), error instanceof Error ? error.message : String(error));
    return true;
  }
  // The process's own facts (its pid, later its exit) stay the executor's: read from the execution (process-facts.ts).
  const { rows } = await ctx.db.query(
    `update runs set status = 'running', execution_id = $2, started_at = coalesce($3::timestamptz, clock_timestamp()), session_id_before = $4,
            updated_at = clock_timestamp() where id = $1 and status = 'queued' returning *`,
    [runId, execution.executionId, execution.startedAt ?? null, sessionId]);
  await ctx.db.query(`update wakeups set status = 'claimed', updated_at = clock_timestamp() where id = $1 and status = 'queued'`, [run.wakeup_id]);
  recordActivity(ctx, { action: 'run.started', entityType: 'heartbeat_run', entityId: runId, details: {
    agentId: run.agent_id, executionId: execution.executionId, adapterType: agent.adapterType,
    ...(skills && (skills.materialised.length > 0 || skills.omitted.length > 0) ? { skills: { materialised: skills.materialised, omitted: skills.omitted } } : {}),
  } });
  if (rows[0] && !unseen) await ctx.streams.publish(runChannel(runId), { event: 'status', status: 'running', executionId: execution.executionId });
  return true;
}

/** The executor refused the start (or the adapter cannot run): the run fails, its ledger run is closed. */
async function failBeforeStart(ctx: RuntimeContext, run: Row, code: string, message: string): Promise<void> {
  await finishRun(ctx, run, { status: 'failed', errorCode: code, error: message });
  await closeLedgerRun(ctx, String(run.id), 'failed', code);
}

/** A queued run that will not start: cancelled, with its wakeup and its ledger run (whose token is revoked). */
export async function cancelQueued(ctx: RuntimeContext, run: Row, reason: string): Promise<void> {
  await finishRun(ctx, run, { status: 'cancelled', cancelReason: reason });
  await closeLedgerRun(ctx, String(run.id), 'cancelled', reason);
}

/**
 * Stops a running run's execution: the runtime's own by cancelling it, a contributed adapter's
 * (another plugin's execution) by closing its ledger run, which the kernel answers by cancelling
 * the execution (its executor then asks the run server to stop, and the plugin reports the end).
 */
export async function stopExecution(ctx: RuntimeContext, run: Row, reason: string): Promise<void> {
  if (!run.execution_id) return;
  const agent = await ctx.agents.getConfig(String(run.agent_id));
  if (await contributorOf(ctx, agent?.adapterType)) {
    await closeLedgerRun(ctx, String(run.id), 'cancelled', reason);
    return;
  }
  try {
    await ctx.executions.cancel(String(run.execution_id), { reason });
  } catch (error) {
    // An execution already gone (its end is on its way as an event) needs no cancel.
    if (errorCode(error) !== 'not_found' && errorCode(error) !== 'execution_not_found') throw error;
  }
}

/** Closes a run in the ledger; a run the executor or another path already closed is left as it is. */
export async function closeLedgerRun(ctx: RuntimeContext, runId: string, status: 'failed' | 'cancelled', reason: string): Promise<void> {
  try {
    await ctx.runs.close(runId, { status, reason });
  } catch (error) {
    if (errorCode(error) !== 'run_already_closed') throw error;
  }
}

/** The `start-runs` job: one per queued run, run by whichever process leases it. */
export async function startRunsJob(ctx: RuntimeContext, payload: JobPayload<'start-runs'>): Promise<void> {
  const { agentId } = enqueuedPayload('start-runs', payload);
  await dispatch(ctx, agentId);
}
