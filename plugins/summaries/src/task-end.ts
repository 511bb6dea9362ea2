import type { SummariesContext } from './context.ts';
import { TASK_ENDED } from './generate.ts';

/**
 * work.issue.updated: a slot's generation task that reaches done or cancelled while the slot
 * still waits on it (no write came) leaves the slot `failed`, with the reason. Each event once.
 */
export async function onIssueUpdated(payload: Record<string, unknown>, ctx: SummariesContext): Promise<void> {
  const changes = (payload.changes ?? {}) as Record<string, unknown>;
  const status = changes.status;
  if (typeof status !== 'string' || !TASK_ENDED.has(status)) return;
  const eventId = ctx.invocation.event?.id;
  if (eventId) {
    const claimed = await ctx.db.query('insert into handled_events (event_id) values ($1) on conflict do nothing returning event_id', [eventId]);
    if (!claimed.rows[0]) return;
  }
  const label = String(payload.identifier ?? payload.issueId);
  const reason = status === 'cancelled'
    ? `Summary generation task ${label} was cancelled before writing a summary.`
    : `Summary generation task ${label} finished without writing a summary.`;
  const { rows } = await ctx.db.query(
    `update summary_slots set status = 'failed', failure_reason = $3, generating_issue_id = null, updated_at = now()
      where company_id = $1 and generating_issue_id = $2 and status = 'generating' returning id`,
    [ctx.invocation.companyId, payload.issueId, reason]);
  if (rows[0]) {
    await ctx.activity.record({ action: 'summary_slot.generation_failed', entityType: 'summary_slot', entityId: String(rows[0].id), details: { generatingIssueId: payload.issueId, reason } });
  }
}

/** company.deleted: the company's slots, documents, and revisions go with it (the summarizer agent is the kernel's, removed with the company). */
export async function onCompanyDeleted(payload: Record<string, unknown>, ctx: SummariesContext): Promise<void> {
  const companyId = String(payload.companyId ?? '');
  if (!companyId) return;
  await ctx.db.query('delete from summary_slots where company_id = $1', [companyId]);
}
