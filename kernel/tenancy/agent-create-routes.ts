import type { RouteModule } from '../http/app.ts';
import { IDEMPOTENCY_KEY_PARAMETER } from '../http/idempotency-key.ts';
import { createOnceForRequest } from '../http/idempotent-create.ts';
import { declareRoutes } from '../http/route-spec.ts';
import { companyForRequest } from './company-access.ts';
import { assertMayManageAgents } from './agent-access.ts';
import { createAgentBody, hireAgentBody, sourceIssueIds } from './agent-input.ts';
import { callerIds, insertAgent, normalizeNewAgent, requestedSnapshot } from './agent-service.ts';
import { announceApproval } from './approval-decisions.ts';
import { createHireApproval, HIRE_APPROVAL, toApprovalJson, type ApprovalRow } from './approvals.ts';
import { findAgent, toAgentJson } from './agents.ts';
import { withDesiredSkills } from './agent-config.ts';
import { requestedSkills, resolveDesiredSkills } from './desired-skills.ts';
import { contributedAdapterConfig, storeSecretFields } from './adapter-config-point.ts';

export const agentCreateRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Agents');

  route({
    method: 'POST', path: '/api/companies/:companyId/agents', auth: 'board', body: createAgentBody, success: 201, errors: [409, 422], parameters: [IDEMPOTENCY_KEY_PARAMETER],
    summary: 'Create an agent (idle at once)',
  }, async (ctx, req) => {
    const { company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    const body = await req.body();
    const values = normalizeNewAgent(body);
    // Resolved (or refused) before the transaction: a refusal leaves nothing behind.
    const desiredSkills = await resolveDesiredSkills(ctx, kernel, { companyId: company.id, desiredSkills: requestedSkills(body), adapterType: values.adapterType, agentId: null });
    values.adapterConfig = withDesiredSkills(values.adapterConfig, desiredSkills);
    const contributed = await contributedAdapterConfig(ctx, kernel, { companyId: company.id, adapterType: values.adapterType, adapterConfig: values.adapterConfig, agentId: null });
    ctx.body = await kernel.db.transaction((tx) => createOnceForRequest(ctx, tx, {
      kind: 'agent', companyId: company.id, request: body,
      load: async (id) => { const row = await findAgent(tx, id); return row ? toAgentJson(row) : null; },
      create: async () => {
        values.adapterConfig = await storeSecretFields(ctx, kernel, tx, company.id, contributed);
        const agent = await insertAgent(ctx, kernel, tx, company.id, values, 'idle');
        return { id: agent.id, answer: toAgentJson(agent) };
      },
    }));
  });

  /**
   * Hiring runs the same normalisation as create. When the company requires board approval
   * the agent waits in pending_approval beside a hire approval holding the requested config.
   */
  route({
    method: 'POST', path: '/api/companies/:companyId/agent-hires', auth: 'any', body: hireAgentBody, success: 201, errors: [409, 422], parameters: [IDEMPOTENCY_KEY_PARAMETER],
    summary: 'Hire an agent (board users, or agents holding agents:create); waits for approval when the company requires it',
  }, async (ctx, req) => {
    const { actor, company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    await assertMayManageAgents(kernel.db, actor, company.id, 'hiring agents');
    const body = await req.body();
    const values = normalizeNewAgent(body);
    // Resolved (or refused) before the transaction: a refusal leaves nothing behind.
    const desiredSkills = await resolveDesiredSkills(ctx, kernel, { companyId: company.id, desiredSkills: requestedSkills(body), adapterType: values.adapterType, agentId: null });
    values.adapterConfig = withDesiredSkills(values.adapterConfig, desiredSkills);
    const contributed = await contributedAdapterConfig(ctx, kernel, { companyId: company.id, adapterType: values.adapterType, adapterConfig: values.adapterConfig, agentId: null });
    const issues = sourceIssueIds(body);
    const needsApproval = company.require_board_approval_for_new_agents === true;
    ctx.body = await kernel.db.transaction((tx) => createOnceForRequest(ctx, tx, {
      kind: 'agent_hire', companyId: company.id, request: body,
      load: async (id) => {
        const agent = await findAgent(tx, id);
        if (!agent) return null;
        const approval = await tx.maybeOne<ApprovalRow>('select * from approvals where subject_agent_id = ? and type = ? order by created_at limit 1', [id, HIRE_APPROVAL]);
        return { agent: toAgentJson(agent), approval: approval ? toApprovalJson(approval) : null };
      },
      create: async () => {
        values.adapterConfig = await storeSecretFields(ctx, kernel, tx, company.id, contributed);
        const agent = await insertAgent(ctx, kernel, tx, company.id, values, needsApproval ? 'pending_approval' : 'idle', { hire: true, sourceIssueIds: issues });
        let approval: ApprovalRow | null = null;
        if (needsApproval) {
          const { userId, agentId } = callerIds(ctx);
          approval = await createHireApproval(tx, {
            companyId: company.id,
            agentId: agent.id,
            payload: { ...requestedSnapshot(values), agentId: agent.id, name: agent.name, urlKey: agent.url_key, sourceIssueIds: issues },
            requestedByUserId: userId,
            requestedByAgentId: agentId,
          });
          await announceApproval(ctx, kernel, tx, approval);
        }
        return { id: agent.id, answer: { agent: toAgentJson(agent), approval: approval ? toApprovalJson(approval) : null } };
      },
    }));
  });
};
