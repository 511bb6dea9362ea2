import type { WorkContext } from './context.ts';
import { workEvents } from '@keel/sdk/plugin';
import { text } from './event-fields.ts';

/**
 * A run that ends, however it ends (succeeded, failed, cancelled, timed out, lost with its
 * process), releases the issues it held: both run locks are cleared in one statement and an
 * issue left in_progress goes back to todo for its assignee's next run. The assignee stays.
 * `run.closed` is written in the transaction that closes the run and delivered at least once;
 * a redelivery finds nothing held by the run any more. Until it is delivered, a checkout by
 * another run already adopts the finished run's lock (checkout.ts).
 */
export async function onRunClosed(payload: Record<string, unknown>, ctx: WorkContext): Promise<void> {
  const runId = typeof payload.runId === 'string' ? payload.runId : '';
  const companyId = ctx.invocation.companyId;
  if (!runId || !companyId) return;
  const { rows } = await ctx.db.query(
    `with held as (
       select id, status from issues where company_id = $1 and (checkout_run_id = $2 or execution_run_id = $2) order by id for no key update)
     update issues i set checkout_run_id = null, execution_run_id = null,
            status = case when i.status = 'in_progress' then 'todo' else i.status end, updated_at = now()
       from held o where i.id = o.id
     returning i.id, i.identifier, i.status, o.status as previous_status`,
    [companyId, runId]);
  for (const row of rows) {
    const issueId = String(row.id);
    await ctx.activity.record({
      action: 'issue.checkout_released', entityType: 'issue', entityId: issueId,
      details: { identifier: row.identifier, reason: 'run_closed', runId, runStatus: payload.status ?? null, previousStatus: row.previous_status, status: row.status },
    });
    if (row.status !== row.previous_status) {
      await ctx.events.publish(workEvents.issueUpdated.name, { issueId, identifier: text(row.identifier), changes: { status: row.status } }, { entityType: 'issue', entityId: issueId });
    }
  }
}
