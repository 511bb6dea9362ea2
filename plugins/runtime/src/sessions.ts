import { type RouteRequest } from '@keel/sdk/plugin';
import type { RuntimeContext } from './context.ts';
import { agentStateJson } from './json.ts';
import { recordActivity } from './activity.ts';

/** The adapter session of an agent's task, handed back to its next run (SERVICE_SESSION_ID) unless forceFreshSession. */
export async function sessionFor(ctx: RuntimeContext, agentId: string, taskKey: string): Promise<string | null> {
  const { rows } = await ctx.db.query('select session_id from task_sessions where agent_id = $1 and task_key = $2', [agentId, taskKey]);
  return rows[0] ? String(rows[0].session_id) : null;
}

/** A session id an adapter returned (a service.session or service.result line, an http answer's sessionId). */
export async function keepSession(ctx: RuntimeContext, run: Record<string, unknown>, sessionId: string): Promise<void> {
  if (sessionId.length === 0 || sessionId.length > 500) return;
  await ctx.db.query(
    `insert into task_sessions (company_id, agent_id, task_key, adapter_type, session_id, last_run_id) values ($1, $2, $3, $4, $5, $6)
     on conflict (agent_id, task_key) do update set session_id = excluded.session_id, adapter_type = excluded.adapter_type,
       last_run_id = excluded.last_run_id, updated_at = clock_timestamp()`,
    [run.company_id, run.agent_id, run.task_key, run.adapter_type, sessionId, run.id]);
  await ctx.db.query('update runs set session_id_after = $2, updated_at = clock_timestamp() where id = $1', [run.id, sessionId]);
  await ctx.db.query(
    `insert into agent_states (agent_id, company_id, session_id) values ($1, $2, $3)
     on conflict (agent_id) do update set session_id = excluded.session_id, updated_at = clock_timestamp()`,
    [run.agent_id, run.company_id, sessionId]);
}

export async function runtimeStateRoute(req: RouteRequest, ctx: RuntimeContext) {
  const agentId = req.params.agentId!;
  const { rows } = await ctx.db.query('select * from agent_states where agent_id = $1 and company_id = $2', [agentId, req.companyId]);
  const { rows: active } = await ctx.db.query(
    `select count(*) filter (where status = 'queued')::int as queued, count(*) filter (where status = 'running')::int as running
       from runs where agent_id = $1 and status in ('queued', 'running')`, [agentId]);
  return { ...agentStateJson(agentId, rows[0]), queuedRuns: active[0]!.queued, runningRuns: active[0]!.running };
}

/** Session ids are shown in full to the board; they are handles into the adapter, not credentials. */
export async function taskSessionsRoute(req: RouteRequest, ctx: RuntimeContext) {
  const { rows } = await ctx.db.query('select * from task_sessions where agent_id = $1 and company_id = $2 order by updated_at desc, task_key', [req.params.agentId, req.companyId]);
  return rows.map((row) => ({
    agentId: row.agent_id, taskKey: row.task_key, adapterType: row.adapter_type, sessionId: row.session_id, lastRunId: row.last_run_id ?? null,
    createdAt: new Date(row.created_at as string).toISOString(), updatedAt: new Date(row.updated_at as string).toISOString(),
  }));
}

/** Forgets one task's session (taskKey) or every session of the agent; the next run starts fresh. */
export async function resetSessionRoute(req: RouteRequest, ctx: RuntimeContext) {
  const agentId = req.params.agentId!;
  const taskKey = (req.body as { taskKey?: string | null } | undefined)?.taskKey ?? null;
  const { rows } = taskKey === null
    ? await ctx.db.query('delete from task_sessions where agent_id = $1 and company_id = $2 returning task_key', [agentId, req.companyId])
    : await ctx.db.query('delete from task_sessions where agent_id = $1 and company_id = $2 and task_key = $3 returning task_key', [agentId, req.companyId, taskKey]);
  if (taskKey === null) await ctx.db.query('update agent_states set session_id = null, updated_at = clock_timestamp() where agent_id = $1', [agentId]);
  recordActivity(ctx, { action: 'agent.runtime_session_reset', entityType: 'agent', entityId: agentId, details: { taskKey, cleared: rows.map((row) => row.task_key) } });
  return { agentId, taskKey, clearedTaskKeys: rows.map((row) => row.task_key) };
}
