import type { Context } from 'koa';
import type { Tx } from '../db/database.ts';
import type { KernelServices } from '../services.ts';
import { callerIds, eventActor } from './agent-service.ts';
import { HIRE_APPROVAL, OPEN_APPROVAL_STATUSES, toApprovalJson, type ApprovalRow, type ApprovalStatus } from './approvals.ts';

/**
 * Writes of approvals that others are told about: each one records an activity entry and
 * appends a kernel event in the writing transaction, so that whoever asked (the requesting
 * agent or user, named in the approval) can be notified of it durably.
 */

/** The status a decision sets. */
export type Decision = Exclude<ApprovalStatus, 'pending'>;

const ACTIONS: Record<Decision, string> = {
  approved: 'approval.approved',
  rejected: 'approval.rejected',
  revision_requested: 'approval.revision_requested',
  cancelled: 'approval.cancelled',
};

/** The note of the hire approvals that terminating their agent cancels. */
export const TERMINATED_BEFORE_APPROVAL = 'Agent terminated before approval';

/** After an approval was written: its activity entry `approval.created` and the event of the same name. */
export async function announceApproval(ctx: Context, kernel: KernelServices, tx: Tx, row: ApprovalRow): Promise<void> {
  await kernel.activity.recordFor(ctx, tx, {
    companyId: row.company_id, action: 'approval.created', entityType: 'approval', entityId: row.id,
    details: { type: row.type, subjectAgentId: row.subject_agent_id },
  });
  await kernel.events.emit(tx, 'approval.created', { companyId: row.company_id, approvalId: row.id, approval: toApprovalJson(row), actor: eventActor(ctx) });
}

/**
 * Records a decision on an open approval the caller holds locked: status, who decided, when,
 * and the note (a decision without a note clears the previous one, which belonged to an
 * earlier decision), then the activity entry and the `approval.decided` event.
 */
export async function recordDecision(ctx: Context, kernel: KernelServices, tx: Tx, before: ApprovalRow, status: Decision, note: string | null): Promise<ApprovalRow> {
  const rows = await tx.query<ApprovalRow>(
    `update approvals set status = ?, decided_by_user_id = ?, decided_at = now(), decision_note = ?, updated_at = now()
      where id = ? returning *`,
    [status, callerIds(ctx).userId, note, before.id],
  );
  const after = rows[0]!;
  await kernel.activity.recordFor(ctx, tx, {
    companyId: after.company_id, action: ACTIONS[status], entityType: 'approval', entityId: after.id,
    details: { type: after.type, from: before.status, to: after.status, subjectAgentId: after.subject_agent_id, ...(note ? { decisionNote: note } : {}) },
  });
  await kernel.events.emit(tx, 'approval.decided', {
    companyId: after.company_id, approvalId: after.id, approval: toApprovalJson(after), from: before.status, to: after.status,
    decisionNote: note, actor: eventActor(ctx),
  });
  return after;
}

/**
 * Decides every open hire approval of an agent at once (approving or terminating the agent
 * decides its hire). The caller locked them before the agent (lockOpenHires).
 */
export async function decideOpenHires(ctx: Context, kernel: KernelServices, tx: Tx, agentId: string, status: Decision, note: string | null): Promise<ApprovalRow[]> {
  const open = await tx.query<ApprovalRow>(
    'select * from approvals where subject_agent_id = ? and type = ? and status in (?, ?) order by id',
    [agentId, HIRE_APPROVAL, ...OPEN_APPROVAL_STATUSES],
  );
  const decided: ApprovalRow[] = [];
  for (const row of open) decided.push(await recordDecision(ctx, kernel, tx, row, status, note));
  return decided;
}
