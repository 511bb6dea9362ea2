import type { RouteRequest } from '@keel/sdk/plugin';
import type { WorkContext } from './context.ts';
import { inboxItemJson, type ActiveRun } from './json.ts';
import { list } from './sql.ts';

type Row = Record<string, unknown>;

/** What an agent works from: its issues that are still to do, being done, or waiting. */
const INBOX_STATUSES = ['todo', 'in_progress', 'blocked'];
const EVERY_STATUS_BUT_CANCELLED = ['backlog', 'todo', 'in_progress', 'in_review', 'done', 'blocked'];
const DEFAULT_MINE_LIMIT = 100;
/** Most run ids one ctx.runs.get takes. */
const RUNS_PER_CALL = 200;

/** The columns of an inbox item, with the ids of the blockers that are neither done nor cancelled. */
const ITEM_COLUMNS = `i.id, i.identifier, i.title, i.status, i.priority, i.project_id, i.goal_id, i.parent_id, i.updated_at,
  i.checkout_run_id, i.execution_run_id,
  coalesce((select array_agg(b.blocker_id::text order by b.created_at, b.blocker_id) from issue_blockers b join issues o on o.id = b.blocker_id
             where b.issue_id = i.id and o.status not in ('done', 'cancelled')), '{}') as open_blockers`;

/**
 * The run working on each checked-out issue: its execution run (the checkout's run when none
 * is recorded), with the ledger's status. A lock the ledger shows finished is still answered,
 * with that status: the issue stays checked out until it is released.
 */
async function activeRuns(ctx: WorkContext, rows: Row[]): Promise<Map<string, ActiveRun>> {
  const byIssue = new Map<string, string>();
  for (const row of rows) {
    if (row.checkout_run_id) byIssue.set(String(row.id), String(row.execution_run_id ?? row.checkout_run_id));
  }
  const ids = [...new Set(byIssue.values())];
  const ledger = new Map<string, { status: string; agentId: string; startedAt: string }>();
  for (let start = 0; start < ids.length; start += RUNS_PER_CALL) {
    for (const run of await ctx.runs.get(ids.slice(start, start + RUNS_PER_CALL))) ledger.set(run.runId, run);
  }
  const answer = new Map<string, ActiveRun>();
  for (const [issueId, runId] of byIssue) {
    const run = ledger.get(runId);
    answer.set(issueId, { runId, status: run?.status ?? null, agentId: run?.agentId ?? null, startedAt: run?.startedAt ?? null });
  }
  return answer;
}

async function inboxItems(ctx: WorkContext, rows: Row[]) {
  const runs = await activeRuns(ctx, rows);
  return rows.map((row) => inboxItemJson(row, runs.get(String(row.id)) ?? null));
}

/**
 * The calling agent's inbox: the issues assigned to it in todo, in_progress or blocked, hidden
 * ones left out; critical first, then high, medium and low, each most recently updated first.
 */
export async function inboxLite(req: RouteRequest, ctx: WorkContext) {
  // The route is agent-only (auth: agent): the host refuses every other caller with 403 agent_required.
  const agentId = ctx.invocation.actor.agentId!;
  const { rows } = await ctx.db.query(
    `select ${ITEM_COLUMNS} from issues i
      where i.company_id = $1 and i.assignee_agent_id = $2 and i.status = any(${list(3, 'text')}) and i.hidden_at is null
      order by case i.priority when 'critical' then 0 when 'high' then 1 when 'medium' then 2 else 3 end, i.updated_at desc, i.id`,
    [req.companyId, agentId, INBOX_STATUSES]);
  return inboxItems(ctx, rows);
}

/**
 * The issues a board user touched in the calling agent's company: created, assigned to the user,
 * or commented on by the user (a comment not deleted). `status` filters (comma-separated;
 * default every status but cancelled); most recently updated first, at most `limit`.
 */
export async function inboxMine(req: RouteRequest, ctx: WorkContext) {
  const query = req.query as { userId: string; status?: string; limit?: number };
  const statuses = typeof query.status === 'string' ? query.status.split(',').map((s) => s.trim()).filter(Boolean) : EVERY_STATUS_BUT_CANCELLED;
  const { rows } = await ctx.db.query(
    `select ${ITEM_COLUMNS} from issues i
      where i.company_id = $1 and i.hidden_at is null and i.status = any(${list(3, 'text')})
        and (i.created_by_user_id = $2 or i.assignee_user_id = $2
             or exists (select 1 from issue_comments c where c.issue_id = i.id and c.author_user_id = $2 and c.deleted_at is null))
      order by i.updated_at desc, i.id desc limit $4`,
    [req.companyId, query.userId, statuses, query.limit ?? DEFAULT_MINE_LIMIT]);
  return inboxItems(ctx, rows);
}
