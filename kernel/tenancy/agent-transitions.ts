import type { Context } from 'koa';
import type { Tx } from '../db/database.ts';
import { conflict } from '../http/errors.ts';
import type { KernelServices } from '../services.ts';
import { afterAgentWrite, stateOf, syncBoardHolds, withStatus, writeAgent } from './agent-service.ts';
import { decideOpenHires, TERMINATED_BEFORE_APPROVAL } from './approval-decisions.ts';
import { lockOpenHires } from './approvals.ts';
import { awaitsBoardApproval, IMPORTED_PAUSE_REASON, lockAgent, type AgentRow } from './agents.ts';
import { recordRevision } from './agent-config-revisions.ts';

/**
 * Agent status transitions inside a caller's transaction: the lifecycle routes run them on
 * their own, an approval decision runs approve and terminate together with its own writes.
 * Approving and terminating also decide the agent's open hire approvals, so the agent routes
 * and the approval routes are one mechanism.
 */
export type Transition = (before: AgentRow) => { status: string; reason?: string | null } | null;
type Also = (tx: Tx, before: AgentRow, after: AgentRow) => Promise<Record<string, unknown>>;

/** Holds of others than the board that a board decision lifted, named in its activity entry. */
function liftedHoldsDetail(lifted: Array<{ holder: string; reason: string }>): Record<string, unknown> {
  const others = lifted.filter((hold) => hold.holder !== 'operator');
  return others.length > 0 ? { liftedHolds: others } : {};
}

/**
 * One status transition: lock, decide, write, then cache eviction, the activity entry and the
 * status event. A null decision leaves the row as it is. `also` adds writes of its own and
 * details to the activity entry.
 */
export async function applyTransition(ctx: Context, kernel: KernelServices, tx: Tx, agentId: string, action: string, decide: Transition, also?: Also): Promise<AgentRow> {
  const before = await lockAgent(tx, agentId);
  const decision = decide(before);
  const after = decision ? await writeAgent(tx, before.id, withStatus(stateOf(before), decision.status, decision.reason)) : before;
  const lifted = decision ? await syncBoardHolds(tx, before, after, decision.status === 'paused') : [];
  const extra = also ? await also(tx, before, after) : {};
  await kernel.activity.recordFor(ctx, tx, {
    companyId: after.company_id, action, entityType: 'agent', entityId: after.id,
    details: {
      from: before.status, to: after.status, ...(after.pause_reason && after.status === 'paused' ? { reason: after.pause_reason } : {}),
      ...liftedHoldsDetail(lifted), ...extra,
    },
  });
  await afterAgentWrite(ctx, kernel, tx, before, after, decision?.reason ?? null);
  return after;
}

/** Pauses an agent an import created or reconfigured, until the board approves its configuration. */
export async function holdImportedAgent(ctx: Context, kernel: KernelServices, tx: Tx, agentId: string): Promise<AgentRow> {
  return applyTransition(ctx, kernel, tx, agentId, 'agent.paused', (before) => (
    before.status === 'terminated' || before.status === 'pending_approval' ? null : { status: 'paused', reason: IMPORTED_PAUSE_REASON }
  ));
}

/**
 * The board approves a configuration it did not write (an imported or managed agent's): a revision of source `approval` by the board
 * user records it (start-checks.ts reads it), and the agent goes to idle.
 */
export async function approveHeldAgent(ctx: Context, kernel: KernelServices, tx: Tx, agentId: string, userId: string): Promise<AgentRow> {
  return applyTransition(ctx, kernel, tx, agentId, 'agent.approved', (before) => {
    if (!awaitsBoardApproval(before)) throw conflict('Agent is not pending approval', { status: before.status }, 'invalid_status_transition');
    return { status: 'idle' };
  }, async (inner, _before, approved) => {
    const revision = await recordRevision(inner, { agent: approved, source: 'approval', changedKeys: [], userId, agentId: null });
    return { importedConfigApproved: true, configRevision: revision.revision_number };
  });
}

/** Activates an agent pending approval; its open hire approvals are approved with the note. */
export async function approvePendingAgent(ctx: Context, kernel: KernelServices, tx: Tx, agentId: string, note: string | null): Promise<AgentRow> {
  await lockOpenHires(tx, agentId);
  return applyTransition(ctx, kernel, tx, agentId, 'agent.approved', (before) => {
    if (before.status !== 'pending_approval') throw conflict('Agent is not pending approval', { status: before.status }, 'invalid_status_transition');
    return { status: 'idle' };
  }, async (inner, _before, approved) => {
    const decided = await decideOpenHires(ctx, kernel, inner, approved.id, 'approved', note);
    return { approvalIds: decided.map((row) => row.id) };
  });
}

/**
 * Terminates an agent. A hire still waiting is closed with it: `cancelled` when the board
 * terminates the agent, `rejected` when the board rejects the hire.
 */
export async function terminateAgent(ctx: Context, kernel: KernelServices, tx: Tx, agentId: string, hire: { status: 'cancelled' | 'rejected'; note: string | null } = { status: 'cancelled', note: TERMINATED_BEFORE_APPROVAL }): Promise<AgentRow> {
  await lockOpenHires(tx, agentId);
  return applyTransition(ctx, kernel, tx, agentId, 'agent.terminated', (before) => {
    if (before.status === 'terminated') throw conflict('Agent is already terminated', { status: before.status }, 'invalid_status_transition');
    return { status: 'terminated' };
  }, async (inner, before, terminated) => {
    if (before.status !== 'pending_approval') return {};
    const decided = await decideOpenHires(ctx, kernel, inner, terminated.id, hire.status, hire.note);
    return { [hire.status === 'cancelled' ? 'cancelledApprovalIds' : 'rejectedApprovalIds']: decided.map((row) => row.id) };
  });
}
