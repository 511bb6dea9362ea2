import { createOnce, PluginError, respond, type RouteRequest, workEvents } from '@keel/sdk/plugin';
import type { WorkContext } from './context.ts';
import { commentJson } from './json.ts';
import { actorOf, rowOfCompany } from './issues.ts';
import { text } from './event-fields.ts';

/** `@shortname` of an agent, as its urlKey is written. */
const MENTION = /(?:^|[^\w@])@([a-z0-9][a-z0-9-]{0,63})/gi;

/**
 * The agents a comment should wake: those it mentions by `@shortname`, the agent whose comment
 * it answers, and, for a comment by someone else, the agent the issue is assigned to. The
 * author itself is never woken by its own comment.
 */
async function agentsToWake(ctx: WorkContext, text: string, repliedToAgentId: string | null, assigneeAgentId: string | null, authorAgentId: string | null) {
  const mentioned = new Set<string>();
  const names = new Set([...text.matchAll(MENTION)].map((match) => match[1]!.toLowerCase()));
  if (names.size) {
    for (const agent of await ctx.agents.list()) {
      if (names.has(String(agent.urlKey).toLowerCase()) && agent.status !== 'terminated') mentioned.add(String(agent.id));
    }
  }
  const wake = new Set(mentioned);
  if (repliedToAgentId) wake.add(repliedToAgentId);
  if (assigneeAgentId && !authorAgentId) wake.add(assigneeAgentId);
  if (authorAgentId) wake.delete(authorAgentId);
  return { mentionedAgentIds: [...mentioned].sort(), wakeAgentIds: [...wake].sort() };
}

/** With an Idempotency-Key, a retried comment answers the comment it made (200) and writes nothing (createOnce). */
export async function createComment(req: RouteRequest, ctx: WorkContext) {
  const companyId = req.companyId!;
  return createOnce(ctx.db, {
    key: req.headers['idempotency-key'], companyId, kind: 'comment', request: { issueId: req.params.issueId, body: req.body },
    load: async (id) => { const row = await rowOfCompany(ctx, 'issue_comments', id, companyId); return row && commentJson(row); },
    create: () => addComment(req, ctx),
  });
}

/**
 * The comment's insert, reading its issue in the same statement (one round trip): no row when
 * the call's company has no such issue. The issue is read, not locked: a comment changes
 * nothing of it, and the comment's foreign key keeps it from being deleted until the commit
 * (KEY SHARE, which neither other comments nor changes of the issue wait for). Concurrent
 * comments of one issue are listed in the order they were made (created_at, their
 * transactions' start), not the order they committed.
 */
const INSERT_COMMENT = `
with issue as (select id, identifier, assignee_agent_id from issues where id = $2::uuid and company_id = $1::uuid),
ins as (
  insert into issue_comments (company_id, issue_id, author_type, author_agent_id, author_user_id, run_id, parent_comment_id, body)
  select $1::uuid, issue.id, $3::text, $4::uuid, $5::text, $6::uuid, $7::uuid, $8::text from issue
  returning *)
select ins.*, issue.identifier as issue_identifier, issue.assignee_agent_id as issue_assignee_agent_id from ins, issue`;

async function addComment(req: RouteRequest, ctx: WorkContext) {
  const body = req.body as { body: string; parentCommentId?: string | null };
  const companyId = req.companyId!;
  const issueId = req.params.issueId!;
  let repliedToAgentId: string | null = null;
  if (body.parentCommentId) {
    const { rows } = await ctx.db.query('select author_agent_id from issue_comments where id = $1 and issue_id = $2 and company_id = $3 and deleted_at is null', [body.parentCommentId, issueId, companyId]);
    if (!rows[0]) throw new PluginError(422, 'comment_not_found', 'parentCommentId: no comment with this id belongs to the issue', { field: 'parentCommentId' });
    repliedToAgentId = (rows[0].author_agent_id as string | null) ?? null;
  }
  const { agentId, userId } = actorOf(ctx);
  const authorType = agentId ? 'agent' : userId ? 'user' : 'system';
  const { rows } = await ctx.db.query(INSERT_COMMENT, [companyId, issueId, authorType, agentId, userId, ctx.invocation.runId, body.parentCommentId ?? null, body.body]);
  if (!rows[0]) throw new PluginError(404, 'not_found', 'Issue not found');
  const issue = { id: rows[0].issue_id, identifier: rows[0].issue_identifier, assignee_agent_id: rows[0].issue_assignee_agent_id };
  const comment = commentJson(rows[0]);
  const { mentionedAgentIds, wakeAgentIds } = await agentsToWake(ctx, body.body, repliedToAgentId, (issue.assignee_agent_id as string | null) ?? null, agentId);
  await ctx.activity.record({
    action: 'issue.comment_added', entityType: 'issue', entityId: String(issue.id),
    details: { identifier: issue.identifier, commentId: comment.id, mentionedAgentIds },
  });
  await ctx.events.publish(workEvents.issueCommentAdded.name, {
    issueId: text(issue.id), identifier: text(issue.identifier), commentId: text(comment.id), authorType, authorAgentId: agentId, mentionedAgentIds, wakeAgentIds,
  }, { entityType: 'issue', entityId: String(issue.id) });
  return { id: String(comment.id), answer: respond(201, comment) };
}

export async function listComments(req: RouteRequest, ctx: WorkContext) {
  const { rows } = await ctx.db.query(
    'select * from issue_comments where issue_id = $1 and company_id = $2 and deleted_at is null order by created_at, id',
    [req.params.issueId, req.companyId]);
  return rows.map(commentJson);
}
