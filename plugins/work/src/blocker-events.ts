import type { WorkContext } from './context.ts';
import { workEvents } from '@keel/sdk/plugin';
import { text } from './event-fields.ts';

const RESOLVED = ['done', 'cancelled'];

/**
 * An issue was resolved (done or cancelled): each open issue it blocked whose last unresolved
 * blocker it was, and whose assignee is an agent, gets `work.issue.blockers_resolved` (the
 * runtime wakes that agent). Called in the transaction of the status change, after it, so the
 * event commits with it; the blocked issues are read as that transaction sees them.
 */
export async function publishBlockersResolved(ctx: WorkContext, blockerId: string, fromStatus: string, toStatus: string): Promise<void> {
  if (!RESOLVED.includes(toStatus) || RESOLVED.includes(fromStatus)) return;
  const { rows } = await ctx.db.query(
    `select i.id, i.identifier, i.assignee_agent_id from issue_blockers b join issues i on i.id = b.issue_id
      where b.blocker_id = $1 and i.assignee_agent_id is not null and i.status not in ('done', 'cancelled')
        and not exists (select 1 from issue_blockers o join issues bi on bi.id = o.blocker_id
                         where o.issue_id = i.id and bi.status not in ('done', 'cancelled'))
      order by i.id`, [blockerId]);
  for (const row of rows) {
    await ctx.events.publish(workEvents.issueBlockersResolved.name, {
      issueId: text(row.id), identifier: text(row.identifier), assigneeAgentId: text(row.assignee_agent_id), resolvedBlockerIssueId: blockerId,
    }, { entityType: 'issue', entityId: String(row.id) });
  }
}
