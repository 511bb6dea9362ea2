import type { Context } from 'koa';
import type { RouteModule } from '../http/app.ts';
import type { Tx } from '../db/database.ts';
import type { KernelServices } from '../services.ts';
import { conflict, forbidden } from '../http/errors.ts';
import { declareRoutes } from '../http/route-spec.ts';
import { bodyValidator } from '../http/validate.ts';
import { AGENT_REFERENCE_PARAMETERS, agentForRequest, isCeoAgentOf, type Caller } from './agent-access.ts';
import { agentView } from './agent-read-routes.ts';
import { afterAgentWrite, stateOf, syncBoardHolds, withStatus, writeAgent } from './agent-service.ts';
import { decidePendingHire } from './approvals.ts';
import { lockAgent, type AgentRow } from './agents.ts';

/**
 * Lifecycle actions: pause, resume, approve, terminate and hard delete. Pause and resume are
 * open to the board and to the company's CEO agent; approval, termination and deletion are
 * board decisions.
 */
const pauseBody = bodyValidator<{ reason?: string | null }>({
  type: 'object',
  properties: { reason: { type: ['string', 'null'], maxLength: 500 } },
});

async function assertBoardOrCeo(kernel: KernelServices, caller: Caller, companyId: string, action: string): Promise<void> {
  if (caller.kind === 'board') return;
  if (await isCeoAgentOf(kernel.db, caller, companyId)) return;
  throw forbidden(`Only the board or the company's CEO agent can ${action} agents`, 'permission_denied');
}

/** Holds of others than the board that a board decision lifted, named in its activity entry. */
function liftedHoldsDetail(lifted: Array<{ holder: string; reason: string }>): Record<string, unknown> {
  const others = lifted.filter((hold) => hold.holder !== 'operator');
  return others.length > 0 ? { liftedHolds: others } : {};
}

type Transition = (before: AgentRow) => { status: string; reason?: string | null } | null;

/**
 * Runs one status transition in a transaction: lock, decide, write, then cache eviction,
 * the activity entry and the status event. A null decision leaves the row as it is.
 */
async function transition(ctx: Context, kernel: KernelServices, agentId: string, action: string, decide: Transition, also?: (tx: Tx, before: AgentRow, after: AgentRow) => Promise<Record<string, unknown>>): Promise<AgentRow> {
  return kernel.db.transaction(async (tx) => {
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
  });
}

export const agentLifecycleRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Agents');
  const parameters = AGENT_REFERENCE_PARAMETERS;

  route({
    method: 'POST', path: '/api/agents/:agentId/pause', auth: 'any', body: pauseBody, parameters, success: 200, errors: [409],
    summary: "Pause an agent (board users and the company's CEO agent)",
  }, async (ctx, req) => {
    const { caller, agent } = await agentForRequest(ctx, kernel.db);
    await assertBoardOrCeo(kernel, caller, agent.company_id, 'pause');
    const body = await req.body();
    const reason = body.reason?.trim() || null;
    const after = await transition(ctx, kernel, agent.id, 'agent.paused', (before) => {
      if (before.status === 'terminated') throw conflict('Cannot pause a terminated agent', { status: before.status }, 'invalid_status_transition');
      if (before.status === 'pending_approval') {
        throw conflict('Pending approval agents cannot be paused; approve or terminate them', { status: before.status }, 'invalid_status_transition');
      }
      return { status: 'paused', reason: reason ?? (before.status === 'paused' ? before.pause_reason : null) ?? 'manual' };
    });
    ctx.body = await agentView(kernel.db, caller, after);
  });

  route({
    method: 'POST', path: '/api/agents/:agentId/resume', auth: 'any', parameters, success: 200, errors: [409],
    summary: "Resume a paused or failed agent (board users and the company's CEO agent)",
  }, async (ctx) => {
    const { caller, agent } = await agentForRequest(ctx, kernel.db);
    await assertBoardOrCeo(kernel, caller, agent.company_id, 'resume');
    const after = await transition(ctx, kernel, agent.id, 'agent.resumed', (before) => {
      if (before.status === 'terminated') throw conflict('Cannot resume a terminated agent', { status: before.status }, 'invalid_status_transition');
      if (before.status === 'pending_approval') {
        throw conflict('Pending approval agents cannot be resumed; approve them with POST /api/agents/{agentId}/approve', { status: before.status }, 'invalid_status_transition');
      }
      // Only a paused or failed agent goes back to idle; a working agent keeps its state.
      return before.status === 'paused' || before.status === 'error' ? { status: 'idle' } : null;
    });
    ctx.body = await agentView(kernel.db, caller, after);
  });

  route({
    method: 'POST', path: '/api/agents/:agentId/approve', auth: 'board', parameters, success: 200, errors: [409],
    summary: 'Approve an agent pending approval',
  }, async (ctx, req) => {
    const board = req.actor;
    const { caller, agent } = await agentForRequest(ctx, kernel.db);
    const after = await transition(ctx, kernel, agent.id, 'agent.approved', (before) => {
      if (before.status !== 'pending_approval') throw conflict('Agent is not pending approval', { status: before.status }, 'invalid_status_transition');
      return { status: 'idle' };
    }, async (tx, _before, approved) => {
      const closed = await decidePendingHire(tx, approved.id, 'approved', board.userId);
      return { approvalIds: closed.map((row) => row.id) };
    });
    ctx.body = await agentView(kernel.db, caller, after);
  });

  route({
    method: 'POST', path: '/api/agents/:agentId/terminate', auth: 'board', parameters, success: 200, errors: [409],
    summary: 'Terminate an agent (for good)',
  }, async (ctx, req) => {
    const board = req.actor;
    const { caller, agent } = await agentForRequest(ctx, kernel.db);
    const after = await transition(ctx, kernel, agent.id, 'agent.terminated', (before) => {
      if (before.status === 'terminated') throw conflict('Agent is already terminated', { status: before.status }, 'invalid_status_transition');
      return { status: 'terminated' };
    }, async (tx, before, terminated) => {
      if (before.status !== 'pending_approval') return {};
      const closed = await decidePendingHire(tx, terminated.id, 'cancelled', board.userId, 'Agent terminated before approval');
      return { cancelledApprovalIds: closed.map((row) => row.id) };
    });
    ctx.body = await agentView(kernel.db, caller, after);
  });

  /** Hard delete: the agent, its keys, revisions, grants and membership go; the activity log stays. */
  route({
    method: 'DELETE', path: '/api/agents/:agentId', auth: 'board', parameters, success: 200,
    summary: 'Delete an agent with its keys, revisions, grants and memberships (the activity log stays)',
  }, async (ctx) => {
    const { agent } = await agentForRequest(ctx, kernel.db);
    await kernel.db.transaction(async (tx) => {
      const row = await lockAgent(tx, agent.id);
      await tx.exec("delete from permission_grants where company_id = ? and principal_type = 'agent' and principal_id = ?", [row.company_id, row.id]);
      await tx.exec("delete from company_memberships where company_id = ? and principal_type = 'agent' and principal_id = ?", [row.company_id, row.id]);
      await tx.exec("delete from resource_memberships where company_id = ? and resource_type = 'agent' and resource_id = ?", [row.company_id, row.id]);
      await tx.exec('delete from agents where id = ?', [row.id]);
      await kernel.invalidate(tx, { type: 'agent', id: row.id });
      await kernel.activity.recordFor(ctx, tx, {
        companyId: row.company_id, action: 'agent.deleted', entityType: 'agent', entityId: row.id,
        details: { name: row.name, urlKey: row.url_key, status: row.status },
      });
    });
    ctx.body = { ok: true, id: agent.id };
  });
};
