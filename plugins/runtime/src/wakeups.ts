import { PluginError, respond, type AgentConfigView, type RouteRequest } from '@keel/sdk/plugin';
import { agentConfig, assertWakeable, boundIssue } from './admission.ts';
import { ACTIVE_RUN, runChannel, type Row, type RuntimeContext } from './context.ts';
import { runJson, wakeupJson } from './json.ts';
import { executionOf } from './process-facts.ts';
import { recordActivity } from './activity.ts';

export interface WakeInput {
  source?: 'timer' | 'assignment' | 'on_demand' | 'automation';
  triggerDetail?: 'manual' | 'ping' | 'callback' | 'system';
  reason?: string | null;
  payload?: Record<string, unknown> | null;
  idempotencyKey?: string | null;
  forceFreshSession?: boolean;
}

/**
 * `startInCall`: the caller starts a queued run itself (dispatch) in this transaction, so no
 * start-runs job is enqueued for it. `agent`: the agent's configuration, when the caller read it
 * in this call already (a heartbeat's slot).
 */
export interface WakeOptions { startInCall?: boolean; agent?: AgentConfigView }

export interface WakeAnswer { status: 'queued' | 'skipped' | 'coalesced'; wakeup: ReturnType<typeof wakeupJson>; run: ReturnType<typeof runJson> | null; replayed: boolean }

/** The task a run works on, for its adapter session: the bound issue, a payload `taskKey`, or `default`. */
function taskKeyOf(issueId: string | null, payload: Record<string, unknown>): string {
  if (issueId) return issueId;
  const key = payload.taskKey;
  return typeof key === 'string' && key.length > 0 && key.length <= 200 ? key : 'default';
}

/**
 * Wakes an agent of the call's company. Checks first (nothing is written when one fails), then
 * claims the idempotency key (a concurrent request with the same key waits on the unique index
 * and then answers the first one's wakeup), then either records a skipped or coalesced wakeup
 * that points at the run already doing the work, or opens the run in the run ledger, stores it
 * queued and enqueues the job that starts it once this transaction commits (unless the caller
 * starts it itself, as the heartbeat job does).
 */
export async function wake(ctx: RuntimeContext, agentId: string, input: WakeInput, options: WakeOptions = {}): Promise<WakeAnswer> {
  const companyId = ctx.invocation.companyId!;
  const key = input.idempotencyKey ?? null;
  if (key !== null) {
    const replay = await replayed(ctx, companyId, agentId, key);
    if (replay) return replay;
  }
  const payload = input.payload ?? {};
  const source = input.source ?? 'on_demand';
  const triggerDetail = input.triggerDetail ?? 'manual';
  const agent = options.agent ?? await agentConfig(ctx, agentId);
  const issue = await boundIssue(ctx, payload);
  const issueId = issue?.issueId ?? null;
  const projectId = issue?.facts.projectId ?? null;
  await assertWakeable(ctx, agent, projectId, issue?.facts ?? null);

  // Coalescing and skipping look at the agent's active runs: the agent-state row serialises them per agent.
  await lockAgentState(ctx, companyId, agentId);
  const active = await ctx.db.query(`select * from runs where agent_id = $1 and ${ACTIVE_RUN} order by created_at`, [agentId]);
  const sameIssue = issueId ? active.rows.find((run) => run.issue_id === issueId) : undefined;
  const joined = sameIssue ?? (source === 'timer' ? active.rows[0] : undefined);
  const status = sameIssue ? 'skipped' : joined ? 'coalesced' : 'queued';

  const actor = ctx.invocation.actor;
  const inserted = await ctx.db.query(
    `insert into wakeups (company_id, agent_id, source, trigger_detail, reason, payload, issue_id, project_id, idempotency_key,
                          force_fresh_session, status, run_id, requested_by_type, requested_by_id)
     values ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, $10, $11, $12, $13, $14)
     on conflict (company_id, agent_id, idempotency_key) where idempotency_key is not null do nothing
     returning *`,
    [companyId, agentId, source, triggerDetail, input.reason ?? null, JSON.stringify(payload), issueId, projectId, key,
      input.forceFreshSession === true, status, joined?.id ?? null, actor.type, actor.id]);
  const wakeup = inserted.rows[0];
  if (!wakeup) {
    // Another request with this key committed while this one was checking: answer its wakeup.
    const replay = await replayed(ctx, companyId, agentId, key!);
    if (replay) return replay;
    throw new PluginError(409, 'idempotency_conflict', 'A wakeup with this idempotencyKey is still being processed; retry it');
  }
  if (joined) {
    recordActivity(ctx, { action: `agent.wakeup_${status}`, entityType: 'agent', entityId: agentId, details: { wakeupId: wakeup.id, runId: joined.id, source, reason: input.reason ?? null } });
    return { status: status as 'skipped' | 'coalesced', wakeup: wakeupJson(wakeup), run: runJson(joined, await executionOf(ctx, joined)), replayed: false };
  }

  // The run's context snapshot in the ledger: what it works on, so that its bound issue finds it (GET /api/issues/{id}/runs).
  // Ids and keys only (the reason, up to 2000 characters, stays in this plugin's runs row).
  const context = { issueId, projectId, taskKey: taskKeyOf(issueId, payload), wakeupId: String(wakeup.id) };
  const opened = await ctx.runs.open({ agentId, invocationSource: source, trigger: triggerDetail, context });
  const { rows } = await ctx.db.query(
    `insert into runs (id, company_id, agent_id, wakeup_id, invocation_source, trigger_detail, wake_reason, issue_id, project_id, task_key, adapter_type, force_fresh_session)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) returning *`,
    [opened.runId, companyId, agentId, wakeup.id, source, triggerDetail, input.reason ?? null, issueId, projectId, context.taskKey,
      agent.adapterType, input.forceFreshSession === true]);
  const run = rows[0]!;
  const { rows: updated } = await ctx.db.query('update wakeups set run_id = $2 where id = $1 returning *', [wakeup.id, run.id]);
  if (!options.startInCall) await ctx.jobs.enqueue('start-runs', { agentId, runId: String(run.id) }, { singletonKey: `start-${String(run.id)}` });
  recordActivity(ctx, { action: 'agent.wakeup_queued', entityType: 'agent', entityId: agentId, details: { wakeupId: wakeup.id, runId: run.id, source, triggerDetail, reason: input.reason ?? null, issueId } });
  // No `queued` on the run's stream: the run exists from this transaction's commit, and its stream
  // answers 404 until then, so nobody can be listening yet; a listener's first event is the run as
  // it is (runStreamRoute).
  return { status: 'queued', wakeup: wakeupJson(updated[0]!), run: runJson(run), replayed: false };
}

async function replayed(ctx: RuntimeContext, companyId: string, agentId: string, key: string): Promise<WakeAnswer | null> {
  const { rows } = await ctx.db.query('select * from wakeups where company_id = $1 and agent_id = $2 and idempotency_key = $3', [companyId, agentId, key]);
  const wakeup = rows[0];
  if (!wakeup) return null;
  const run = wakeup.run_id ? (await ctx.db.query('select * from runs where id = $1', [wakeup.run_id])).rows[0] : undefined;
  const status = wakeup.status === 'skipped' || wakeup.status === 'coalesced' ? wakeup.status : 'queued';
  return { status, wakeup: wakeupJson(wakeup), run: run ? runJson(run, await executionOf(ctx, run)) : null, replayed: true };
}

/**
 * The agent's runtime-state row, created on first use and locked until the call's transaction
 * ends. The row exists after an agent's first wakeup, so the lock is tried first: one statement
 * where it exists (a run takes this lock about six times), three on first use.
 */
export async function lockAgentState(ctx: RuntimeContext, companyId: string, agentId: string): Promise<Row> {
  const locked = await ctx.db.query('select * from agent_states where agent_id = $1 for update', [agentId]);
  if (locked.rows[0]) return locked.rows[0];
  await ctx.db.query('insert into agent_states (agent_id, company_id) values ($1, $2) on conflict do nothing', [agentId, companyId]);
  const { rows } = await ctx.db.query('select * from agent_states where agent_id = $1 for update', [agentId]);
  return rows[0]!;
}

function answer(result: WakeAnswer) {
  const body = { status: result.status, wakeup: result.wakeup, run: result.run };
  return respond(202, body, result.replayed ? { 'x-idempotent-replayed': 'true' } : undefined);
}

/** The body's idempotencyKey, else the Idempotency-Key header: either makes a retry answer the same wakeup. */
export async function wakeupRoute(req: RouteRequest, ctx: RuntimeContext) {
  const input = (req.body ?? {}) as WakeInput;
  return answer(await wake(ctx, req.params.agentId!, { ...input, idempotencyKey: input.idempotencyKey ?? req.headers['idempotency-key'] ?? null }));
}

/** A manual heartbeat: a wakeup with source timer (which coalesces into a run already active); an Idempotency-Key makes a retry answer the same one. */
export async function heartbeatInvokeRoute(req: RouteRequest, ctx: RuntimeContext) {
  return answer(await wake(ctx, req.params.agentId!, { source: 'timer', triggerDetail: 'manual', reason: 'heartbeat_invoked', idempotencyKey: req.headers['idempotency-key'] ?? null }));
}

