import type { Context } from 'koa';
import type { RouteModule } from '../http/app.ts';
import { conflict, notFound } from '../http/errors.ts';
import { assertCompanyAccess, requireActor } from '../http/guards.ts';
import { declareRoutes, LIST_RESPONSE } from '../http/route-spec.ts';
import { bodyValidator, queryValidator } from '../http/validate.ts';
import type { KernelServices } from '../services.ts';
import { agentMayManageAgents, type Caller } from './agent-access.ts';
import { approvePendingAgent, terminateAgent } from './agent-transitions.ts';
import { recordDecision, type Decision } from './approval-decisions.ts';
import {
  APPROVAL_LIST_LIMIT, APPROVAL_STATUSES, findApproval, HIRE_APPROVAL, isOpen, listApprovals, lockApproval, toApprovalJson,
  type ApprovalRow, type ApprovalStatus,
} from './approvals.ts';
import { companyForRequest } from './company-access.ts';

/**
 * Approvals: the company's list and one approval for the board and the company's agents, and
 * the board's decisions. Deciding a hire decides its agent in the same transaction, through
 * the same code as POST /api/agents/{agentId}/approve and /terminate.
 */
export const DECISION_NOTE_MAX_LENGTH = 2000;

const listQuery = queryValidator<{ status?: ApprovalStatus; type?: string; limit: number }>({
  type: 'object',
  properties: {
    status: { enum: [...APPROVAL_STATUSES] },
    type: { type: 'string', minLength: 1, maxLength: 100 },
    limit: { type: 'integer', minimum: 1, maximum: APPROVAL_LIST_LIMIT.max, default: APPROVAL_LIST_LIMIT.default },
  },
});

const decisionBody = bodyValidator<{ decisionNote?: string | null }>({
  type: 'object',
  properties: { decisionNote: { type: ['string', 'null'], maxLength: DECISION_NOTE_MAX_LENGTH } },
});

/**
 * The `:approvalId` of the path, scoped like every company route: a malformed or unknown id
 * answers 404, an approval of a company the caller cannot reach 403.
 */
async function approvalForRequest(ctx: Context, kernel: KernelServices): Promise<{ caller: Caller; approval: ApprovalRow }> {
  const caller = requireActor(ctx);
  const approval = await findApproval(kernel.db, String(ctx.params.approvalId ?? ''));
  if (!approval) throw notFound('Approval not found');
  assertCompanyAccess(ctx, approval.company_id);
  ctx.state.auditCompanyId = approval.company_id;
  return { caller, approval };
}

/** A hire's requested configuration is agent configuration: agents without agents:create see it redacted. */
async function redactFor(kernel: KernelServices, caller: Caller, companyId: string): Promise<boolean> {
  return caller.kind === 'agent' && !(await agentMayManageAgents(kernel.db, caller.agentId, companyId));
}

/**
 * Decides an open approval. The row is locked first, so of two concurrent decisions the second
 * finds the first one's status and is refused. A hire decides its agent too: approving
 * activates it, rejecting terminates it (both decide the approval on the way).
 */
async function decide(ctx: Context, kernel: KernelServices, approvalId: string, decision: Decision, note: string | null): Promise<ApprovalRow> {
  return kernel.db.transaction(async (tx) => {
    const row = await lockApproval(tx, approvalId);
    if (!isOpen(row.status)) {
      throw conflict(`Only pending approvals or approvals awaiting revision can be decided; this one is ${row.status}`, { status: row.status }, 'approval_not_pending');
    }
    const agentId = row.type === HIRE_APPROVAL ? row.subject_agent_id : null;
    if (agentId && decision === 'approved') await approvePendingAgent(ctx, kernel, tx, agentId, note);
    else if (agentId && decision === 'rejected') await terminateAgent(ctx, kernel, tx, agentId, { status: 'rejected', note });
    else return recordDecision(ctx, kernel, tx, row, decision, note);
    // The agent's transition decided the hire: read it back as decided.
    return (await findApproval(tx, row.id))!;
  });
}

const DECISIONS: Array<{ segment: string; decision: Decision; summary: string }> = [
  { segment: 'approve', decision: 'approved', summary: 'Approve an approval (a hire activates its agent)' },
  { segment: 'reject', decision: 'rejected', summary: 'Reject an approval (a hire terminates its agent)' },
  { segment: 'request-revision', decision: 'revision_requested', summary: 'Send an approval back for revision (it stays open)' },
];

export const approvalRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Approvals');

  route({
    method: 'GET', path: '/api/companies/:companyId/approvals', auth: 'any', query: listQuery, success: 200, response: LIST_RESPONSE,
    summary: "The company's approvals, newest first (board users and the company's agents)",
  }, async (ctx, req) => {
    const { actor, company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    const query = req.query();
    const rows = await listApprovals(kernel.db, company.id, query);
    const redacted = await redactFor(kernel, actor, company.id);
    ctx.body = rows.map((row) => toApprovalJson(row, { redacted }));
  });

  route({
    method: 'GET', path: '/api/approvals/:approvalId', auth: 'any', success: 200,
    summary: "One approval (board users and the company's agents)",
  }, async (ctx) => {
    const { caller, approval } = await approvalForRequest(ctx, kernel);
    ctx.body = toApprovalJson(approval, { redacted: await redactFor(kernel, caller, approval.company_id) });
  });

  for (const { segment, decision, summary } of DECISIONS) {
    route({
      method: 'POST', path: `/api/approvals/:approvalId/${segment}`, auth: 'board', body: decisionBody, success: 200, errors: [409],
      summary,
    }, async (ctx, req) => {
      const { approval } = await approvalForRequest(ctx, kernel);
      const body = await req.body();
      const note = body.decisionNote?.trim() || null;
      ctx.body = toApprovalJson(await decide(ctx, kernel, approval.id, decision, note));
    });
  }
};
