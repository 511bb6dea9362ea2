import { createOnce, PluginError, respond, type RouteRequest, workEvents } from '@keel/sdk/plugin';
import { publishBlockersResolved } from './blocker-events.ts';
import type { WorkContext } from './context.ts';
import { issueJson } from './json.ts';
import { assertProjectTakesWork } from './project-holds.ts';
import { assertAgentOfCompany, assertIssuesOfCompany, assertNotUnderItself, assertRowOfCompany } from './references.ts';
import { assignments, changedFields, list, lockRow, updateRow } from './sql.ts';
import { issueStatus, text, textOrNull } from './event-fields.ts';

type Row = Record<string, unknown>;
type Body = Record<string, unknown>;

const COLUMNS = {
  title: 'title', description: 'description', status: 'status', priority: 'priority', projectId: 'project_id', goalId: 'goal_id',
  parentId: 'parent_id', assigneeAgentId: 'assignee_agent_id', assigneeUserId: 'assignee_user_id', billingCode: 'billing_code',
};
const FIELDS = [...Object.keys(COLUMNS), 'blockedByIssueIds'];

/** The issues blocking one issue, as ids. */
export async function blockersOf(ctx: WorkContext, issueId: string): Promise<string[]> {
  const { rows } = await ctx.db.query('select blocker_id from issue_blockers where issue_id = $1 order by created_at, blocker_id', [issueId]);
  return rows.map((row) => String(row.blocker_id));
}

export async function issueWithBlockers(ctx: WorkContext, row: Row) {
  return issueJson(row, await blockersOf(ctx, String(row.id)));
}

/**
 * The stamps a status change brings (`status` is the new status's parameter): entering
 * in_progress, done or cancelled stamps its time; leaving done or cancelled clears it.
 */
function statusStamps(status: string): string {
  return `started_at = case when ${status}::text = 'in_progress' then coalesce(started_at, now()) else started_at end,
          completed_at = case when ${status}::text = 'done' then coalesce(completed_at, now()) else null end,
          cancelled_at = case when ${status}::text = 'cancelled' then coalesce(cancelled_at, now()) else null end`;
}

async function checkReferences(ctx: WorkContext, companyId: string, body: Body, issueId?: string): Promise<string[] | undefined> {
  if (body.assigneeAgentId && body.assigneeUserId) {
    throw new PluginError(422, 'assignee_conflict', 'An issue is assigned to an agent or to a user, not both');
  }
  await assertRowOfCompany(ctx, companyId, 'project', 'projectId', body.projectId);
  await assertRowOfCompany(ctx, companyId, 'goal', 'goalId', body.goalId);
  await assertRowOfCompany(ctx, companyId, 'issue', 'parentId', body.parentId);
  await assertAgentOfCompany(ctx, 'assigneeAgentId', body.assigneeAgentId);
  if (issueId) await assertNotUnderItself(ctx, 'issue', issueId, body.parentId, 'an issue cannot be placed under itself or one of its sub-issues');
  if (!Array.isArray(body.blockedByIssueIds)) return undefined;
  const blockers = await assertIssuesOfCompany(ctx, companyId, 'blockedByIssueIds', body.blockedByIssueIds as string[]);
  if (issueId && blockers.length) {
    // A blocker may not be blocked, directly or through others, by the issue it blocks.
    const { rows } = await ctx.db.query(
      `with recursive chain(id) as (select unnest(${list(1, 'uuid')})
         union select b.blocker_id from issue_blockers b join chain on b.issue_id = chain.id)
       select 1 from chain where id = $2 limit 1`, [blockers, issueId]);
    if (rows.length) throw new PluginError(422, 'blocker_cycle', 'blockedByIssueIds: an issue cannot block itself, directly or through other issues', { field: 'blockedByIssueIds' });
  }
  return blockers;
}

async function replaceBlockers(ctx: WorkContext, companyId: string, issueId: string, blockers: string[]): Promise<void> {
  await ctx.db.query(`delete from issue_blockers where issue_id = $1 and not (blocker_id = any(${list(2, 'uuid')}))`, [issueId, blockers]);
  if (blockers.length) {
    await ctx.db.query(
      `insert into issue_blockers (company_id, issue_id, blocker_id) select $1, $2, unnest(${list(3, 'uuid')}) on conflict do nothing`,
      [companyId, issueId, blockers]);
  }
}

/** Who acts, as the issue's created_by columns and a comment's author. */
export function actorOf(ctx: WorkContext): { agentId: string | null; userId: string | null } {
  const actor = ctx.invocation.actor;
  return { agentId: actor.type === 'agent' ? actor.agentId : null, userId: actor.type === 'user' ? actor.id : null };
}

async function publishAssigned(ctx: WorkContext, issue: ReturnType<typeof issueJson>, previousAgentId: string | null): Promise<void> {
  if (!issue.assigneeAgentId || issue.assigneeAgentId === previousAgentId) return;
  await ctx.events.publish(workEvents.issueAssigned.name, {
    issueId: text(issue.id), identifier: text(issue.identifier), agentId: text(issue.assigneeAgentId), previousAgentId, status: issueStatus(issue.status),
    byAgentId: actorOf(ctx).agentId,
  }, { entityType: 'issue', entityId: String(issue.id) });
}

/**
 * Creates an issue. Its number is taken from the company's counter in a short transaction of
 * its own (issues.number), after every check that can refuse the create: concurrent creates of
 * the company (in any process) get distinct numbers in the order they took them without waiting
 * for each other's commits; a create that fails after that leaves its number unused. With an
 * Idempotency-Key, a retried create answers the issue it made (200), and the same key with
 * another body 409 (createOnce).
 */
export async function createIssue(req: RouteRequest, ctx: WorkContext) {
  const body = req.body as Body;
  const companyId = req.companyId!;
  return createOnce(ctx.db, {
    key: req.headers['idempotency-key'], companyId, kind: 'issue', request: body,
    load: async (id) => {
      const row = await rowOfCompany(ctx, 'issues', id, companyId);
      return row && issueWithBlockers(ctx, row);
    },
    create: async () => {
      const blockers = (await checkReferences(ctx, companyId, body)) ?? [];
      await assertProjectTakesWork(ctx, companyId, body.projectId);
      const assigned = Boolean(body.assigneeAgentId || body.assigneeUserId);
      const status = String(body.status ?? (assigned ? 'todo' : 'backlog'));
      const row = await insertIssueRow(ctx, companyId, { ...body, status });
      // A new issue has no blockers to remove: only the given ones are stored.
      if (blockers.length) await replaceBlockers(ctx, companyId, String(row.id), blockers);
      const issue = issueJson(row, blockers);
      await announceCreated(ctx, issue);
      return { id: String(row.id), answer: respond(201, issue) };
    },
  });
}

/** A row of one of the plugin's tables, by id, if it belongs to the company. */
export async function rowOfCompany(ctx: WorkContext, table: string, id: string, companyId: string): Promise<Row | null> {
  const { rows } = await ctx.db.query(`select * from ${table} where id = $1 and company_id = $2`, [id, companyId]);
  return rows[0] ?? null;
}

/**
 * Numbers and inserts an issue (the number is committed as it is taken; the company row is not
 * held until this call commits). `origin` marks issues the plugin makes itself (a liveness
 * escalation: kind and the finding's key); never taken from a request body.
 */
export async function insertIssueRow(ctx: WorkContext, companyId: string, body: Body, origin?: { kind: string; id: string }): Promise<Row> {
  const { agentId, userId } = actorOf(ctx);
  const number = await ctx.companies.nextIssueNumber();
  const { rows } = await ctx.db.query(
    `insert into issues (company_id, issue_number, identifier, title, description, status, priority, project_id, goal_id, parent_id,
                         assignee_agent_id, assignee_user_id, created_by_agent_id, created_by_user_id, billing_code,
                         started_at, completed_at, cancelled_at, origin_kind, origin_id)
     values ($1, $2, $3, $4, $5, $6, coalesce($7, 'medium'), $8, $9, $10, $11, $12, $13, $14, $15,
             case when $6 = 'in_progress' then now() end, case when $6 = 'done' then now() end, case when $6 = 'cancelled' then now() end,
             coalesce($16, 'manual'), $17)
     returning *`,
    [companyId, number.number, number.identifier, body.title, body.description ?? null, body.status, body.priority ?? null,
      body.projectId ?? null, body.goalId ?? null, body.parentId ?? null, body.assigneeAgentId ?? null, body.assigneeUserId ?? null,
      agentId, userId, body.billingCode ?? null, origin?.kind ?? null, origin?.id ?? null]);
  return rows[0]!;
}

/** The activity entry and events of a new issue (the runtime wakes its assignee on `work.issue.assigned`). */
export async function announceCreated(ctx: WorkContext, issue: ReturnType<typeof issueJson>, details: Record<string, unknown> = {}): Promise<void> {
  await ctx.activity.record({
    action: 'issue.created', entityType: 'issue', entityId: String(issue.id),
    details: { identifier: issue.identifier, title: issue.title, status: issue.status, assigneeAgentId: issue.assigneeAgentId, projectId: issue.projectId, ...details },
  });
  await ctx.events.publish(workEvents.issueCreated.name, { issueId: text(issue.id), identifier: text(issue.identifier), status: issueStatus(issue.status), assigneeAgentId: textOrNull(issue.assigneeAgentId) }, { entityType: 'issue', entityId: String(issue.id) });
  await publishAssigned(ctx, issue, null);
}

export async function getIssue(req: RouteRequest, ctx: WorkContext) {
  const { rows } = await ctx.db.query('select * from issues where id = $1 and company_id = $2', [req.params.issueId, req.companyId]);
  if (!rows[0]) throw new PluginError(404, 'not_found', 'Issue not found');
  return issueWithBlockers(ctx, rows[0]);
}

/**
 * Locks and answers the issue the route names, in the call's company: every change of the issue
 * row itself (a patch, checkout and release) and a feedback vote take it first. A comment does
 * not (see comments.ts), nor does a write of a document, attachment or work product, which
 * locks the issue's artifacts instead (lockIssueArtifacts).
 */
export function lockIssue(ctx: WorkContext, issueId: string, companyId: string): Promise<Row> {
  return lockRow(ctx.db, 'issues', issueId, companyId);
}

export async function updateIssue(req: RouteRequest, ctx: WorkContext) {
  const body = req.body as Body;
  const companyId = req.companyId!;
  const current = await lockIssue(ctx, req.params.issueId!, companyId);
  const blockers = await checkReferences(ctx, companyId, { ...body }, String(current.id));
  if (body.projectId && body.projectId !== current.project_id) await assertProjectTakesWork(ctx, companyId, body.projectId);
  // Assigning one kind of assignee clears the other.
  const patch: Body = { ...body };
  if (patch.assigneeAgentId) patch.assigneeUserId = null;
  if (patch.assigneeUserId) patch.assigneeAgentId = null;
  const params: unknown[] = [current.id];
  const sets = assignments(patch, COLUMNS, params);
  if (typeof patch.status === 'string' && patch.status !== current.status) {
    params.push(patch.status);
    sets.push(statusStamps(`$${params.length}`));
  }
  const row = await updateRow(ctx.db, 'issues', current, sets, params);
  const previousBlockers = await blockersOf(ctx, String(current.id));
  if (blockers) await replaceBlockers(ctx, companyId, String(current.id), blockers);
  const before = issueJson(current, previousBlockers);
  const after = issueJson(row, blockers ?? previousBlockers);
  const { changes, previous } = changedFields(before, after, FIELDS);
  await ctx.activity.record({ action: 'issue.updated', entityType: 'issue', entityId: String(after.id), details: { identifier: after.identifier, changes, previous } });
  if (Object.keys(changes).length) {
    await ctx.events.publish(workEvents.issueUpdated.name, { issueId: text(after.id), identifier: text(after.identifier), changes }, { entityType: 'issue', entityId: String(after.id) });
  }
  await publishAssigned(ctx, after, before.assigneeAgentId as string | null);
  await publishBlockersResolved(ctx, String(after.id), String(current.status), String(row.status));
  return after;
}
