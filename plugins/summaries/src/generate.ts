import { PluginError, respond, type RouteRequest } from '@keel/sdk/plugin';
import type { Row, SummariesContext } from './context.ts';
import { slotJson, taskRef, type Task } from './json.ts';
import { assertSummariesEnabled, findSlot, selectorOf, targetProject, type Selector } from './selector.ts';
import { taskDescription, taskTitle } from './snapshot.ts';
import { SUMMARIZER_KEY, summarizerOf } from './summarizer.ts';

/** Generation tasks in these statuses are over: the slot can take a new one. */
export const TASK_ENDED = new Set(['done', 'cancelled']);

/** Board only, with `tasks:assign` in the company (the implicit local board and instance admins skip the check). */
async function assertMayGenerate(ctx: SummariesContext): Promise<void> {
  const actor = await ctx.principals.actor(['tasks:assign']);
  if (actor.type !== 'board') throw new PluginError(403, 'board_only', 'Only board operators can generate summaries.');
  if (!actor.instanceAuthority && !actor.grants.some((grant) => grant.permissionKey === 'tasks:assign')) {
    throw new PluginError(403, 'missing_permission', 'Missing permission: tasks:assign');
  }
}

export async function loadTask(ctx: SummariesContext, issueId: string): Promise<Task | null> {
  const { task } = await ctx.services.call<{ task: Task | null }>('work', 'task', { issueId });
  return task;
}

/** The slot's row, made if it was never touched, locked until this call commits: generations of one slot take turns. */
async function lockedSlot(ctx: SummariesContext, sel: Selector): Promise<Row> {
  await ctx.db.query(
    `insert into summary_slots (company_id, scope_kind, scope_id, slot_key) values ($1, $2, $3, $4)
     on conflict (company_id, scope_kind, coalesce(scope_id, '00000000-0000-0000-0000-000000000000'::uuid), slot_key) do nothing`,
    [sel.companyId, sel.scopeKind, sel.scopeId, sel.slotKey]);
  return (await findSlot(ctx, sel, true))!;
}

async function recordRequested(ctx: SummariesContext, sel: Selector, slot: Row, generatingIssueId: string, alreadyGenerating: boolean): Promise<void> {
  await ctx.activity.record({
    action: 'summary_slot.generate_requested', entityType: 'summary_slot', entityId: String(slot.id),
    details: { scopeKind: sel.scopeKind, scopeId: sel.scopeId, slotKey: sel.slotKey, generatingIssueId, alreadyGenerating },
  });
}

/**
 * POST .../generate: a hidden task assigned to the summarizer, with the scope's snapshot in its
 * description, linked to the slot (summary_generations); the work plugin's assignment event has
 * the runtime wake the summarizer. 202. While the slot's task is still open, the request joins
 * it instead (200, `alreadyGenerating`). The task's origin is the slot and its generation
 * number, so a retry after a failure past the task's creation finds the same task.
 */
export async function generate(req: RouteRequest, ctx: SummariesContext) {
  await assertSummariesEnabled(ctx);
  await assertMayGenerate(ctx);
  const sel = selectorOf(req);
  const projectId = await targetProject(ctx, sel);
  // The company's first generate makes its summarizer (it then waits for the board to set it up).
  await ctx.agents.provisionManaged(SUMMARIZER_KEY);
  const summarizer = await summarizerOf(ctx);
  if (summarizer.status !== 'ready' || !summarizer.agentId) {
    throw new PluginError(422, 'summarizer_not_configured', 'Summarizer built-in agent is not configured', { code: 'summarizer_not_configured', status: summarizer.status });
  }
  const slot = await lockedSlot(ctx, sel);
  if (slot.status === 'generating' && slot.generating_issue_id) {
    const current = await loadTask(ctx, String(slot.generating_issue_id));
    if (current && !TASK_ENDED.has(current.status)) {
      await recordRequested(ctx, sel, slot, current.id, true);
      return respond(200, { slot: slotJson(slot), generatingIssue: taskRef(current), alreadyGenerating: true });
    }
  }
  const generation = Number(slot.generation_count) + 1;
  const { task, created } = await ctx.services.call<{ task: Task; created: boolean }>('work', 'create-hidden-task', {
    title: taskTitle(sel), description: await taskDescription(ctx, sel, projectId, (slotJson(slot).lastGeneratedAt as string | null)),
    assigneeAgentId: summarizer.agentId, projectId, originKind: 'summary_generation', originId: `${String(slot.id)}:${generation}`,
  });
  await ctx.db.query(
    `insert into summary_generations (issue_id, company_id, slot_id, summarizer_agent_id) values ($1, $2, $3, $4) on conflict (issue_id) do nothing`,
    [task.id, sel.companyId, slot.id, summarizer.agentId]);
  const { rows } = await ctx.db.query(
    `update summary_slots set status = 'generating', failure_reason = null, generating_issue_id = $2, generation_count = $3, updated_at = now()
      where id = $1 returning *`, [slot.id, task.id, generation]);
  const updated = rows[0]!;
  await recordRequested(ctx, sel, updated, task.id, !created);
  return respond(created ? 202 : 200, { slot: slotJson(updated), generatingIssue: taskRef(task), alreadyGenerating: !created });
}
