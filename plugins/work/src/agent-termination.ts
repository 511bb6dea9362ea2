import type { WorkContext } from './context.ts';
import { workEvents } from '@keel/sdk/plugin';
import { text } from './event-fields.ts';

/**
 * A terminated agent keeps no work. Its open issues (neither done nor cancelled) lose their
 * assignee and both run locks in one statement, an in_progress one goes back to todo, and each
 * gets an `issue.unassigned` entry (reason `agent_terminated`) and a work.issue.updated event.
 * Other status changes (a pause, the company archive's pause) leave the issues as they are:
 * a paused agent resumes its work.
 *
 * Delivered at least once: a redelivery finds no open issue assigned to the agent any more and
 * changes nothing. A terminated agent is never resumed, so what a redelivery finds assigned to
 * it is work it can no longer do either.
 */
export async function onAgentStatusChanged(payload: Record<string, unknown>, ctx: WorkContext): Promise<void> {
  const agentId = typeof payload.agentId === 'string' ? payload.agentId : '';
  const companyId = ctx.invocation.companyId;
  if (payload.to !== 'terminated' || !agentId || !companyId) return;
  const { rows } = await ctx.db.query(
    `with held as (
       select id, status, checkout_run_id from issues
        where company_id = $1 and assignee_agent_id = $2 and status not in ('done', 'cancelled')
        order by id for no key update)
     update issues i set assignee_agent_id = null, checkout_run_id = null, execution_run_id = null,
            status = case when i.status = 'in_progress' then 'todo' else i.status end, updated_at = now()
       from held o where i.id = o.id
     returning i.id, i.identifier, i.status, o.status as previous_status, o.checkout_run_id as previous_checkout_run_id`,
    [companyId, agentId]);
  for (const row of rows) {
    const issueId = String(row.id);
    await ctx.activity.record({
      action: 'issue.unassigned', entityType: 'issue', entityId: issueId,
      details: {
        identifier: row.identifier, reason: 'agent_terminated', previousAssigneeAgentId: agentId, previousStatus: row.previous_status,
        status: row.status, previousCheckoutRunId: row.previous_checkout_run_id ?? null,
      },
    });
    const changes: Record<string, unknown> = { assigneeAgentId: null };
    if (row.status !== row.previous_status) changes.status = row.status;
    await ctx.events.publish(workEvents.issueUpdated.name, { issueId, identifier: text(row.identifier), changes }, { entityType: 'issue', entityId: issueId });
  }
}
