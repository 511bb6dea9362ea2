import { PluginError, respond, type RouteRequest } from '@keel/sdk/plugin';
import type { WorkContext } from './context.ts';
import { agentOutput, type TargetType } from './feedback-targets.ts';
import { time } from './json.ts';
import { lockIssue } from './issues.ts';

type Row = Record<string, unknown>;
interface VoteBody { targetType: TargetType; targetId: string; vote: 'up' | 'down'; reason?: string | null; shareable?: boolean }

/**
 * A trace's status when voted: `local` unless the voter allowed sharing, then `pending`; the
 * delivery (feedback-delivery.ts) moves a pending trace of a consenting company to `sent` or `failed`.
 */
const statusOf = (shareable: boolean): 'local' | 'pending' => (shareable ? 'pending' : 'local');

/**
 * Whether a trace may be shared: the instance's `feedbackDataSharingPreference` decides for
 * everyone when an operator set it to `allowed` or `not_allowed`; under `prompt` (the default)
 * the voter's own `shareable` does.
 */
async function sharing(ctx: WorkContext, voterAllows: boolean): Promise<boolean> {
  const preference = (await ctx.instanceSettings.get('general')).feedbackDataSharingPreference;
  if (preference === 'not_allowed') return false;
  if (preference === 'allowed') return true;
  return voterAllows;
}

/** A trace as the API shows it; the payload snapshot only when asked for (it may hold 64 KiB of text). */
export function traceJson(row: Row, includePayload: boolean) {
  return {
    id: row.id, companyId: row.company_id, issueId: row.issue_id, issueIdentifier: row.issue_identifier, projectId: row.project_id ?? null,
    targetType: row.target_type, targetId: row.target_id, authorAgentId: row.author_agent_id, runId: row.run_id ?? null,
    voterUserId: row.voter_user_id, vote: row.vote, reason: row.reason ?? null, shareable: row.shareable, status: row.status,
    deliveryAttempts: Number(row.delivery_attempts), lastDeliveryError: row.last_delivery_error ?? null, sentAt: time(row.sent_at),
    createdAt: time(row.created_at), updatedAt: time(row.updated_at),
    ...(includePayload ? { payload: row.payload } : {}),
  };
}

/**
 * The calling board user: these routes are declared board-only, so the host has refused agents
 * before the handler runs. Votes are human judgement of agent output; an agent voting (on
 * another agent's output, or its own) would pass for a board user's judgement in the traces.
 */
const voterOf = (ctx: WorkContext): string => ctx.invocation.actor.id;

const traceOf = async (ctx: WorkContext, issueId: unknown, targetType: string, targetId: string, voter: string): Promise<Row | undefined> =>
  (await ctx.db.query('select * from feedback_traces where issue_id = $1 and target_type = $2 and target_id = $3 and voter_user_id = $4',
    [issueId, targetType, targetId, voter])).rows[0];

/**
 * `POST /api/issues/{issueId}/feedback`: a board user's vote on agent output of the issue. The
 * first vote on a target makes a trace with a snapshot of the target (201); voting again
 * replaces vote, reason and shareable and keeps the snapshot (200). Votes are serialised by the
 * issue's row lock, so one user's two concurrent votes on a target leave one trace.
 */
export async function voteFeedback(req: RouteRequest, ctx: WorkContext) {
  const body = req.body as VoteBody;
  const voter = voterOf(ctx);
  const shareable = await sharing(ctx, body.shareable ?? false);
  const issue = await lockIssue(ctx, req.params.issueId!, req.companyId!);
  const targetId = body.targetId.toLowerCase();
  const output = await agentOutput(ctx, issue, body.targetType, targetId);
  const reason = body.reason ?? null;
  const previous = await traceOf(ctx, issue.id, body.targetType, targetId, voter);
  const about = { issueId: issue.id, identifier: issue.identifier, targetType: body.targetType, targetId, authorAgentId: output.authorAgentId };
  if (previous) {
    // The same vote again keeps where its delivery stands; a changed one is a new trace to deliver.
    const unchanged = previous.vote === body.vote && (previous.reason ?? null) === reason && previous.shareable === shareable;
    const { rows } = unchanged
      ? await ctx.db.query('update feedback_traces set updated_at = now() where id = $1 returning *', [previous.id])
      : await ctx.db.query(
        `update feedback_traces set vote = $2, reason = $3, shareable = $4, status = $5, updated_at = now(),
                delivery_attempts = 0, last_delivery_error = null, next_delivery_at = null, sent_at = null
          where id = $1 returning *`,
        [previous.id, body.vote, reason, shareable, statusOf(shareable)]);
    const trace = rows[0]!;
    // The reason is the voter's free text: it stays in the trace (which a withdrawal deletes), not in the append-only log.
    await ctx.activity.record({
      action: 'feedback.vote_changed', entityType: 'feedback_trace', entityId: String(trace.id),
      details: {
        ...about, vote: trace.vote, shareable: trace.shareable, status: trace.status, reasonChanged: (previous.reason ?? null) !== reason,
        previous: { vote: previous.vote, shareable: previous.shareable, status: previous.status },
      },
    });
    return traceJson(trace, true);
  }
  const { rows } = await ctx.db.query(
    `insert into feedback_traces (company_id, issue_id, issue_identifier, project_id, target_type, target_id, author_agent_id, run_id,
                                  voter_user_id, vote, reason, shareable, status, payload)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::jsonb) returning *`,
    [issue.company_id, issue.id, issue.identifier, issue.project_id ?? null, body.targetType, targetId, output.authorAgentId, output.runId,
      voter, body.vote, reason, shareable, statusOf(shareable), JSON.stringify(output.payload)]);
  const trace = rows[0]!;
  await ctx.activity.record({
    action: 'feedback.voted', entityType: 'feedback_trace', entityId: String(trace.id),
    details: { ...about, vote: trace.vote, shareable: trace.shareable, status: trace.status, hasReason: reason !== null },
  });
  return respond(201, traceJson(trace, true));
}

/** `DELETE /api/issues/{issueId}/feedback?targetType=&targetId=`: the caller withdraws their vote; its trace is deleted. */
export async function withdrawFeedback(req: RouteRequest, ctx: WorkContext) {
  const targetType = String(req.query.targetType);
  const targetId = String(req.query.targetId).toLowerCase();
  const voter = voterOf(ctx);
  const issue = await lockIssue(ctx, req.params.issueId!, req.companyId!);
  const { rows } = await ctx.db.query(
    'delete from feedback_traces where issue_id = $1 and target_type = $2 and target_id = $3 and voter_user_id = $4 returning id, vote, shareable, status',
    [issue.id, targetType, targetId, voter]);
  const trace = rows[0];
  if (!trace) throw new PluginError(404, 'feedback_not_found', 'You have no vote on this target of the issue');
  await ctx.activity.record({
    action: 'feedback.vote_withdrawn', entityType: 'feedback_trace', entityId: String(trace.id),
    details: { issueId: issue.id, identifier: issue.identifier, targetType, targetId, previous: { vote: trace.vote, shareable: trace.shareable, status: trace.status } },
  });
  return { id: trace.id, withdrawn: true };
}
