import { PluginError } from '@keel/sdk/plugin';
import type { WorkContext } from './context.ts';
import { issueJson } from './json.ts';
import { announceCreated, insertIssueRow } from './issues.ts';

type Row = Record<string, unknown>;

/** What another plugin sees of a task it made: enough to show it and to check who works on it. */
function taskView(row: Row) {
  return {
    id: String(row.id), identifier: String(row.identifier), title: String(row.title), status: String(row.status),
    assigneeAgentId: (row.assignee_agent_id as string | null) ?? null, projectId: (row.project_id as string | null) ?? null,
    checkoutRunId: (row.checkout_run_id as string | null) ?? null, executionRunId: (row.execution_run_id as string | null) ?? null,
    originKind: String(row.origin_kind), originId: (row.origin_id as string | null) ?? null, hidden: row.hidden_at !== null && row.hidden_at !== undefined,
  };
}

/**
 * The `create-hidden-task` service: a hidden `todo` issue of the calling company assigned to one
 * of its agents (the platform's own work, left out of lists and the activity feed), numbered like
 * any issue. The caller names its origin (`originKind`, `originId`): a second call with the same
 * origin answers the task the first made (`created` false) instead of making another, so a caller
 * that failed after this service committed gets its task back on retry. The assignee is woken by
 * the runtime on `work.issue.assigned`, as for any assignment.
 */
export async function createHiddenTaskService(input: unknown, ctx: WorkContext) {
  const body = input as { title: string; description: string; assigneeAgentId: string; projectId?: string | null; originKind: string; originId: string };
  const companyId = ctx.invocation.companyId!;
  const origin = { kind: `${ctx.invocation.caller?.plugin ?? 'unknown'}:${body.originKind}`, id: body.originId };
  const existing = await ctx.db.query('select * from issues where company_id = $1 and origin_kind = $2 and origin_id = $3', [companyId, origin.kind, origin.id]);
  if (existing.rows[0]) return { task: taskView(existing.rows[0]), created: false };
  const agent = await ctx.agents.get(body.assigneeAgentId);
  if (!agent) throw new PluginError(422, 'invalid_assignee', 'assigneeAgentId names no agent of the company', { field: 'assigneeAgentId' });
  const row = await insertIssueRow(ctx, companyId, {
    title: body.title, description: body.description, status: 'todo', assigneeAgentId: body.assigneeAgentId, projectId: body.projectId ?? null,
  }, origin);
  const { rows } = await ctx.db.query('update issues set hidden_at = created_at where id = $1 returning *', [row.id]);
  await announceCreated(ctx, issueJson(rows[0]!, []), { hidden: true, originKind: origin.kind });
  return { task: taskView(rows[0]!), created: true };
}

/** The `task` service: an issue of the calling company, hidden or not, with who holds it; `task` null when there is none. */
export async function taskService(input: unknown, ctx: WorkContext) {
  const { issueId } = input as { issueId: string };
  const { rows } = await ctx.db.query('select * from issues where id = $1 and company_id = $2', [issueId, ctx.invocation.companyId]);
  return { task: rows[0] ? taskView(rows[0]) : null };
}

const SNAPSHOT_GROUPS = { blocked: 'blocked', inReview: 'in_review', inProgress: 'in_progress', recentlyDone: 'done' } as const;

/**
 * The `issue-snapshot` service: the calling company's visible issues (of one project, or all) in
 * the groups a status summary needs (blocked, in review, in progress, and done since `doneSince`),
 * each the `limit` most recently changed.
 */
export async function issueSnapshotService(input: unknown, ctx: WorkContext) {
  const { projectId, doneSince, limit } = input as { projectId?: string | null; doneSince: string; limit: number };
  const groups: Record<string, unknown[]> = {};
  for (const [group, status] of Object.entries(SNAPSHOT_GROUPS)) {
    const params: unknown[] = [ctx.invocation.companyId, status, limit];
    let where = 'company_id = $1 and status = $2 and hidden_at is null';
    if (projectId) { params.push(projectId); where += ` and project_id = $${params.length}`; }
    if (status === 'done') { params.push(doneSince); where += ` and updated_at >= $${params.length}::timestamptz`; }
    const { rows } = await ctx.db.query(
      `select identifier, title, status, priority, updated_at from issues where ${where} order by updated_at desc, id desc limit $3`, params);
    groups[group] = rows.map((row) => ({
      identifier: String(row.identifier), title: String(row.title), status: String(row.status), priority: String(row.priority),
      updatedAt: new Date(row.updated_at as string).toISOString(),
    }));
  }
  return groups;
}
