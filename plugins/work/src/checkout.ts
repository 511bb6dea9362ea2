import { PluginError, type RouteRequest, workEvents } from '@keel/sdk/plugin';
import type { WorkContext } from './context.ts';
import { issueJson } from './json.ts';
import { blockersOf, lockIssue } from './issues.ts';
import { assertProjectTakesWork } from './project-holds.ts';
import { issueStatus, text, textOrNull } from './event-fields.ts';

/**
 * Checkout: an agent takes an issue for one run. It checks out only as itself and only from a
 * run (its run token's run, or X-Service-Run-Id); checkout makes it the assignee, sets both run
 * locks and `in_progress`. Another run holding the issue gets 409 naming the holder; the same
 * run again changes nothing; a lock left by a run that has finished is adopted. An issue with
 * open blockers answers 422 naming them.
 */
export async function checkoutIssue(req: RouteRequest, ctx: WorkContext) {
  const body = req.body as { agentId: string; expectedStatuses?: string[] };
  const { actor, runId } = ctx.invocation;
  if (actor.type !== 'agent' || actor.agentId !== body.agentId.toLowerCase()) {
    throw new PluginError(403, 'checkout_self_only', 'An agent checks out an issue only as itself');
  }
  if (!runId) throw new PluginError(409, 'run_required', 'Checkout needs a run: call with the run token of a run, or with X-Service-Run-Id');
  const current = await lockIssue(ctx, req.params.issueId!, req.companyId!);
  if (current.checkout_run_id === runId) return issueJson(current, await blockersOf(ctx, String(current.id)));
  if (current.checkout_run_id && await runIsLive(ctx, String(current.checkout_run_id))) {
    throw new PluginError(409, 'checkout_conflict', 'The issue is checked out by another run', {
      checkoutRunId: current.checkout_run_id, assigneeAgentId: current.assignee_agent_id ?? null,
    });
  }
  if (body.expectedStatuses?.length && !body.expectedStatuses.includes(String(current.status))) {
    throw new PluginError(409, 'unexpected_status', `The issue is ${current.status}, not ${body.expectedStatuses.join(' or ')}`, { status: current.status, expectedStatuses: body.expectedStatuses });
  }
  await assertProjectTakesWork(ctx, req.companyId!, current.project_id);
  const { rows: open } = await ctx.db.query(
    `select b.blocker_id::text as id from issue_blockers b join issues i on i.id = b.blocker_id
      where b.issue_id = $1 and i.status not in ('done', 'cancelled') order by b.created_at, b.blocker_id`, [current.id]);
  if (open.length) {
    const ids = open.map((row) => String(row.id));
    throw new PluginError(422, 'issue_blocked', `The issue is blocked by ${ids.length} unresolved issue${ids.length === 1 ? '' : 's'}`, { unresolvedBlockerIssueIds: ids });
  }
  const { rows } = await ctx.db.query(
    `update issues set assignee_agent_id = $2, assignee_user_id = null, checkout_run_id = $3, execution_run_id = $3,
            status = 'in_progress', started_at = coalesce(started_at, now()), completed_at = null, cancelled_at = null, updated_at = now()
      where id = $1 returning *`, [current.id, actor.agentId, runId]);
  const issue = issueJson(rows[0]!, await blockersOf(ctx, String(current.id)));
  await ctx.activity.record({
    action: 'issue.checked_out', entityType: 'issue', entityId: String(issue.id),
    details: { identifier: issue.identifier, agentId: actor.agentId, runId, previousStatus: current.status },
  });
  if (current.assignee_agent_id !== actor.agentId) {
    await ctx.events.publish(workEvents.issueAssigned.name, {
      issueId: text(issue.id), identifier: text(issue.identifier), agentId: text(actor.agentId), previousAgentId: textOrNull(current.assignee_agent_id),
      status: issueStatus(issue.status), byAgentId: actor.agentId,
    }, { entityType: 'issue', entityId: String(issue.id) });
  }
  return issue;
}

/**
 * A lock whose run has finished (or that the run ledger does not know) is stale: the next
 * checkout adopts it instead of answering 409 for ever.
 */
async function runIsLive(ctx: WorkContext, runId: string): Promise<boolean> {
  const [run] = await ctx.runs.get([runId]);
  return run !== undefined && (run.status === 'queued' || run.status === 'running');
}

/**
 * Release: back to `todo`, with the assignee and both run locks cleared in one statement (half
 * cleared locks are what leaves issues stuck). The agent that holds it may release it; a board
 * user may release any issue (a forced release, recorded as such).
 */
export async function releaseIssue(req: RouteRequest, ctx: WorkContext) {
  const { actor } = ctx.invocation;
  const current = await lockIssue(ctx, req.params.issueId!, req.companyId!);
  const holds = actor.type === 'agent' && (current.assignee_agent_id === actor.agentId || (current.checkout_run_id !== null && current.checkout_run_id === ctx.invocation.runId));
  if (actor.type === 'agent' && !holds) throw new PluginError(403, 'checkout_not_held', 'Only the agent that holds the issue, or a board user, can release it');
  if (!current.checkout_run_id && !current.assignee_agent_id && !current.assignee_user_id) {
    throw new PluginError(409, 'not_checked_out', 'The issue is neither checked out nor assigned');
  }
  const { rows } = await ctx.db.query(
    `update issues set status = 'todo', assignee_agent_id = null, assignee_user_id = null, checkout_run_id = null, execution_run_id = null,
            completed_at = null, cancelled_at = null, updated_at = now()
      where id = $1 returning *`, [current.id]);
  const issue = issueJson(rows[0]!, await blockersOf(ctx, String(current.id)));
  await ctx.activity.record({
    action: 'issue.released', entityType: 'issue', entityId: String(issue.id),
    details: { identifier: issue.identifier, previousAssigneeAgentId: current.assignee_agent_id ?? null, previousCheckoutRunId: current.checkout_run_id ?? null, forced: actor.type !== 'agent' },
  });
  await ctx.events.publish(workEvents.issueUpdated.name, { issueId: text(issue.id), identifier: text(issue.identifier), changes: { status: 'todo', assigneeAgentId: null } }, { entityType: 'issue', entityId: String(issue.id) });
  return issue;
}
