import type { RouteModule } from '../http/app.ts';
import type { KernelServices } from '../services.ts';
import { conflict, forbidden } from '../http/errors.ts';
import { declareRoutes } from '../http/route-spec.ts';
import { bodyValidator } from '../http/validate.ts';
import { AGENT_REFERENCE_PARAMETERS, agentForRequest, isCeoAgentOf, type Caller } from './agent-access.ts';
import { agentView } from './agent-read-routes.ts';
import { applyTransition, approveHeldAgent, approvePendingAgent, terminateAgent } from './agent-transitions.ts';
import { lockOpenHires } from './approvals.ts';
import { awaitingApproval, awaitsBoardApproval, lockAgent } from './agents.ts';
import { unapprovedConfig } from './agent-config-revisions.ts';

/**
 * Lifecycle actions: pause, resume, approve, terminate and hard delete. Pause and resume are
 * open to the board and to the company's CEO agent; approval, termination and deletion are
 * board decisions. Approve and terminate decide the agent's open hire approvals as well
 * (agent-transitions.ts), exactly as deciding the approval does.
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
    const after = await kernel.db.transaction((tx) => applyTransition(ctx, kernel, tx, agent.id, 'agent.paused', (before) => {
      if (before.status === 'terminated') throw conflict('Cannot pause a terminated agent', { status: before.status }, 'invalid_status_transition');
      if (before.status === 'pending_approval') {
        throw conflict('Pending approval agents cannot be paused; approve or terminate them', { status: before.status }, 'invalid_status_transition');
      }
      return { status: 'paused', reason: reason ?? (before.status === 'paused' ? before.pause_reason : null) ?? 'manual' };
    }));
    ctx.body = await agentView(kernel.db, caller, after);
  });

  route({
    method: 'POST', path: '/api/agents/:agentId/resume', auth: 'any', parameters, success: 200, errors: [409],
    summary: "Resume a paused or failed agent (board users and the company's CEO agent)",
  }, async (ctx) => {
    const { caller, agent } = await agentForRequest(ctx, kernel.db);
    await assertBoardOrCeo(kernel, caller, agent.company_id, 'resume');
    // An imported or managed agent resumes once the board approved or wrote its configuration.
    const unapproved = awaitsBoardApproval(agent) ? await unapprovedConfig(kernel.db, agent.id) : null;
    const after = await kernel.db.transaction((tx) => applyTransition(ctx, kernel, tx, agent.id, 'agent.resumed', (before) => {
      if (before.status === 'terminated') throw conflict('Cannot resume a terminated agent', { status: before.status }, 'invalid_status_transition');
      if (before.status === 'pending_approval') {
        throw conflict('Pending approval agents cannot be resumed; approve them with POST /api/agents/{agentId}/approve', { status: before.status }, 'invalid_status_transition');
      }
      if (awaitsBoardApproval(before) && unapproved) throw awaitingApproval(before);
      // Only a paused or failed agent goes back to idle; a working agent keeps its state.
      return before.status === 'paused' || before.status === 'error' ? { status: 'idle' } : null;
    }));
    ctx.body = await agentView(kernel.db, caller, after);
  });

  route({
    method: 'POST', path: '/api/agents/:agentId/approve', auth: 'board', parameters, success: 200, errors: [409],
    summary: 'Approve an agent pending approval, or the configuration of an agent paused `imported` (a company import) or `managed` (made for a plugin)',
  }, async (ctx) => {
    const { caller, agent } = await agentForRequest(ctx, kernel.db);
    const after = await kernel.db.transaction((tx) => (awaitsBoardApproval(agent) && caller.kind === 'board' && caller.userId
      ? approveHeldAgent(ctx, kernel, tx, agent.id, caller.userId)
      : approvePendingAgent(ctx, kernel, tx, agent.id, null)));
    ctx.body = await agentView(kernel.db, caller, after);
  });

  route({
    method: 'POST', path: '/api/agents/:agentId/terminate', auth: 'board', parameters, success: 200, errors: [409],
    summary: 'Terminate an agent (for good)',
  }, async (ctx) => {
    const { caller, agent } = await agentForRequest(ctx, kernel.db);
    const after = await kernel.db.transaction((tx) => terminateAgent(ctx, kernel, tx, agent.id));
    ctx.body = await agentView(kernel.db, caller, after);
  });

  /** Hard delete: the agent, its keys, revisions, grants and membership go; the activity log stays. */
  route({
    method: 'DELETE', path: '/api/agents/:agentId', auth: 'board', parameters, success: 200,
    summary: 'Delete an agent with its keys, revisions, grants and memberships (the activity log stays)',
  }, async (ctx) => {
    const { agent } = await agentForRequest(ctx, kernel.db);
    await kernel.db.transaction(async (tx) => {
      // Approvals about the agent go with it (a cascade): its open hire is locked first, as everywhere.
      await lockOpenHires(tx, agent.id);
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
