import { ACTIVE_RUN, type Row, type RuntimeContext } from './context.ts';
import { cancelQueued, stopExecution } from './dispatch.ts';
import { firstDelivery } from './handled-events.ts';
import { finishRun } from './run-end.ts';
import { recordActivity } from './activity.ts';
import { lockAgentState } from './wakeups.ts';

/**
 * Cancels one active run: a queued one with its wakeup and ledger run, a running one by
 * cancelling its execution (SIGTERM to the process group, SIGKILL after graceSec; the executor
 * closes the ledger run, which revokes the token). The run is `cancelled` from this moment; the
 * execution's end fills in its exit code and signal. Answers the run's row afterwards.
 */
export async function cancelRun(ctx: RuntimeContext, run: Row, reason: string): Promise<Row> {
  if (run.status === 'queued') {
    await cancelQueued(ctx, run, reason);
  } else if (run.status === 'running') {
    await stopExecution(ctx, run, reason);
    await finishRun(ctx, run, { status: 'cancelled', cancelReason: reason });
  }
  recordActivity(ctx, { action: 'run.cancelled', entityType: 'heartbeat_run', entityId: String(run.id), details: { agentId: run.agent_id, reason, previousStatus: run.status } });
  const { rows } = await ctx.db.query('select * from runs where id = $1', [run.id]);
  return rows[0]!;
}

/** Cancels every active run of the call's company that the condition selects (one parameter, $2). */
async function cancelActive(ctx: RuntimeContext, condition: string, value: string, reason: string): Promise<void> {
  // The agents' states first, in one order, as dispatch takes an agent's state before its runs:
  // a cancel racing a start waits for it, and the two never lock in opposite order.
  const { rows: agents } = await ctx.db.query(
    `select distinct agent_id from runs where company_id = $1 and ${condition} and ${ACTIVE_RUN} order by agent_id`, [ctx.invocation.companyId, value]);
  for (const agent of agents) await lockAgentState(ctx, String(ctx.invocation.companyId), String(agent.agent_id));
  const { rows } = await ctx.db.query(
    `select * from runs where company_id = $1 and ${condition} and ${ACTIVE_RUN} order by created_at for update`, [ctx.invocation.companyId, value]);
  for (const run of rows) await cancelRun(ctx, run, reason);
}

const STOPPED_AGENT = new Set(['paused', 'terminated', 'pending_approval']);

/**
 * A hold or a status that stops an agent (pause, budget hard stop, terminate): its queued
 * wakeups and runs are cancelled and its running ones killed. The kernel cancels the agent's
 * executions in the hold's own transaction; this catches the runs that had none yet.
 */
export async function onAgentStatusChanged(payload: Record<string, unknown>, ctx: RuntimeContext): Promise<void> {
  if (!STOPPED_AGENT.has(String(payload.to)) || typeof payload.agentId !== 'string') return;
  if (!(await firstDelivery(ctx))) return;
  await cancelActive(ctx, 'agent_id = $2', payload.agentId, `agent_${String(payload.to)}${payload.reason ? `:${String(payload.reason)}` : ''}`);
}

/** A company paused (by the board or its hard stop) or archived: every active run of it is cancelled. */
export async function onCompanyStatusChanged(payload: Record<string, unknown>, ctx: RuntimeContext): Promise<void> {
  if (payload.to !== 'paused' && payload.to !== 'archived') return;
  if (!(await firstDelivery(ctx))) return;
  await cancelActive(ctx, 'company_id = $2', String(ctx.invocation.companyId), `company_${String(payload.to)}${payload.reason ? `:${String(payload.reason)}` : ''}`);
}

/** costs.budget.stopped: a project's hard stop cancels the queued and running runs bound to it. */
export async function onBudgetStopped(payload: Record<string, unknown>, ctx: RuntimeContext): Promise<void> {
  if (payload.scopeType !== 'project' || typeof payload.scopeId !== 'string') return;
  if (!(await firstDelivery(ctx))) return;
  await cancelActive(ctx, 'project_id = $2', payload.scopeId, 'budget_hard_stop_project');
}
