import { errorStatus, type RuntimeContext } from './context.ts';
import { wake, type WakeInput } from './wakeups.ts';

/**
 * Wakes that follow the work plugin's events, once per event and agent: the wake's
 * idempotency key is made of the event id, so a redelivered event gives back the same wakeup.
 * A wake the agent cannot take (paused, terminated, blocked by a budget) is left out; the
 * event is still delivered.
 */
async function wakeFor(ctx: RuntimeContext, agentId: string, input: WakeInput): Promise<void> {
  try {
    await wake(ctx, agentId, input);
  } catch (error) {
    if (errorStatus(error) >= 500) throw error;
    ctx.log.info('event wake refused', { agentId, code: (error as { code?: string }).code ?? null });
  }
}

const eventKey = (ctx: RuntimeContext, agentId: string) => `event-${ctx.invocation.event?.id ?? 'none'}-${agentId}`;

/** work.issue.assigned: the new assignee wakes with the issue bound to its run, unless it took the issue itself (a checkout). */
export async function onIssueAssigned(payload: Record<string, unknown>, ctx: RuntimeContext): Promise<void> {
  const agentId = payload.agentId;
  if (typeof agentId !== 'string' || payload.byAgentId === agentId) return;
  await wakeFor(ctx, agentId, {
    source: 'assignment', triggerDetail: 'system', reason: 'issue_assigned', payload: { issueId: payload.issueId },
    idempotencyKey: eventKey(ctx, agentId),
  });
}

/** work.issue.comment_added: each agent the comment mentions or answers wakes on the issue. */
export async function onCommentAdded(payload: Record<string, unknown>, ctx: RuntimeContext): Promise<void> {
  const agents = Array.isArray(payload.wakeAgentIds) ? payload.wakeAgentIds.filter((id): id is string => typeof id === 'string') : [];
  for (const agentId of agents) {
    if (agentId === payload.authorAgentId) continue;
    await wakeFor(ctx, agentId, {
      source: 'automation', triggerDetail: 'system', reason: 'issue_comment_mentioned', payload: { issueId: payload.issueId, commentId: payload.commentId },
      idempotencyKey: eventKey(ctx, agentId),
    });
  }
}

/** work.issue.blockers_resolved: the assignee of an issue whose last blocker was resolved wakes on it. */
export async function onBlockersResolved(payload: Record<string, unknown>, ctx: RuntimeContext): Promise<void> {
  const agentId = payload.assigneeAgentId;
  if (typeof agentId !== 'string') return;
  await wakeFor(ctx, agentId, {
    source: 'automation', triggerDetail: 'system', reason: 'issue_blockers_resolved',
    payload: { issueId: payload.issueId, resolvedBlockerIssueId: payload.resolvedBlockerIssueId }, idempotencyKey: eventKey(ctx, agentId),
  });
}

/**
 * approval.decided to approved: the agent that asked for it wakes (`approval_approved`, with the
 * approval's id), and for a hire the hired agent wakes too (`hire_approved`), each once.
 */
export async function onApprovalDecided(payload: Record<string, unknown>, ctx: RuntimeContext): Promise<void> {
  const approval = (payload.approval ?? {}) as Record<string, unknown>;
  if (payload.to !== 'approved' || typeof approval.id !== 'string') return;
  const requester = typeof approval.requestedByAgentId === 'string' ? approval.requestedByAgentId : null;
  const hired = approval.type === 'hire_agent' && typeof approval.subjectAgentId === 'string' ? approval.subjectAgentId : null;
  if (requester && requester !== hired) {
    await wakeFor(ctx, requester, {
      source: 'automation', triggerDetail: 'system', reason: 'approval_approved',
      payload: { approvalId: approval.id, approvalStatus: 'approved', ...(hired ? { hiredAgentId: hired } : {}) }, idempotencyKey: eventKey(ctx, requester),
    });
  }
  if (hired) {
    await wakeFor(ctx, hired, {
      source: 'automation', triggerDetail: 'system', reason: 'hire_approved', payload: { approvalId: approval.id }, idempotencyKey: eventKey(ctx, hired),
    });
  }
}
