import { resolveDesiredSkills } from './desired-skills.ts';
import { contributedAdapterConfig, storeSecretFields } from './adapter-config-point.ts';
import { prospectiveAdapterConfig } from './agent-patch.ts';
import type { Context } from 'koa';
import type { RouteModule } from '../http/app.ts';
import type { Tx } from '../db/database.ts';
import type { KernelServices } from '../services.ts';
import { forbidden } from '../http/errors.ts';
import { declareRoutes } from '../http/route-spec.ts';
import { bodyValidator } from '../http/validate.ts';
import { AGENT_REFERENCE_PARAMETERS, agentForRequest, isCeoAgentOf } from './agent-access.ts';
import { maskConfig } from './agent-config.ts';
import { changedConfigKeys, deepEqual, recordRevision, snapshotOf } from './agent-config-revisions.ts';
import { refusePermissionsInPatch, updateAgentBody } from './agent-input.ts';
import { authorizePatch, nextStateForPatch, patchedFields } from './agent-patch.ts';
import { agentDetail, agentView } from './agent-read-routes.ts';
import { afterAgentWrite, callerIds, eventActor, recordConfigRevision, stateOf, syncBoardHolds, writeAgent } from './agent-service.ts';
import { decideOpenHires, TERMINATED_BEFORE_APPROVAL } from './approval-decisions.ts';
import { lockOpenHires } from './approvals.ts';
import { eventAgent, lockAgent, type AgentRow } from './agents.ts';
import { deleteGrant, ensureActiveAgentMembership, hasGrant, upsertGrant } from './permission-grants.ts';

const permissionsBody = bodyValidator<{ canCreateAgents?: boolean; canAssignTasks?: boolean }>({
  type: 'object',
  properties: { canCreateAgents: { type: 'boolean' }, canAssignTasks: { type: 'boolean' } },
});

/** Field name -> new value (masked) for every column that differs, for events and audit. */
export function changesBetween(before: AgentRow, after: AgentRow): Record<string, unknown> {
  const a = stateOf(before) as unknown as Record<string, unknown>;
  const b = stateOf(after) as unknown as Record<string, unknown>;
  const changes: Record<string, unknown> = {};
  const names: Record<string, string> = {
    url_key: 'urlKey', reports_to: 'reportsTo', adapter_type: 'adapterType', adapter_config: 'adapterConfig', runtime_config: 'runtimeConfig',
    budget_monthly_cents: 'budgetMonthlyCents', pause_reason: 'pauseReason', paused_at: 'pausedAt', terminated_at: 'terminatedAt',
  };
  for (const key of Object.keys(b)) {
    const left = key === 'budget_monthly_cents' ? Number(a[key]) : a[key];
    const right = key === 'budget_monthly_cents' ? Number(b[key]) : b[key];
    if (!deepEqual(left, right)) changes[names[key] ?? key] = maskConfig(right, names[key] ?? key);
  }
  return changes;
}

/** Audit, revision, cache and events after an agent row changed through an update. */
export async function finishUpdate(ctx: Context, kernel: KernelServices, tx: Tx, before: AgentRow, after: AgentRow, action: string, source: 'patch' | 'rollback' | 'import', extra: { revisionId?: string; details?: Record<string, unknown> } = {}) {
  const changedKeys = changedConfigKeys(snapshotOf(before), snapshotOf(after));
  const changes = changesBetween(before, after);
  let revision;
  if (source === 'import') {
    // A package's configuration has no author here (RevisionSource): it waits for a board approval.
    if (changedKeys.length > 0) revision = await recordRevision(tx, { agent: after, source, changedKeys, userId: null, agentId: null });
  } else if (changedKeys.length > 0 || source === 'rollback') {
    revision = await recordConfigRevision(ctx, tx, after, source, changedKeys, extra.revisionId);
  }
  await kernel.activity.recordFor(ctx, tx, {
    companyId: after.company_id, action, entityType: 'agent', entityId: after.id,
    details: { changedKeys: Object.keys(changes), configRevision: revision?.revision_number ?? null, ...extra.details },
  });
  if (Object.keys(changes).length > 0) {
    await kernel.events.emit(tx, 'agent.updated', { companyId: after.company_id, agentId: after.id, agent: eventAgent(after), changes, actor: eventActor(ctx) }, { awaited: true });
  }
  await afterAgentWrite(ctx, kernel, tx, before, after);
}

export const agentUpdateRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Agents');

  route({
    method: 'PATCH', path: '/api/agents/:agentId', auth: 'any', body: updateAgentBody, parameters: AGENT_REFERENCE_PARAMETERS,
    success: 200, errors: [409, 422], summary: "Change an agent's fields and configuration (records a configuration revision)",
  }, async (ctx, req) => {
    const { caller, agent } = await agentForRequest(ctx, kernel.db);
    const requested = await req.body();
    refusePermissionsInPatch(requested);
    await authorizePatch(kernel.db, caller, agent, patchedFields(requested));
    const desiredSkills = await resolveDesiredSkills(ctx, kernel, {
      companyId: agent.company_id, desiredSkills: requested.desiredSkills, adapterType: requested.adapterType ?? agent.adapter_type, agentId: agent.id,
    });
    let body = desiredSkills === undefined ? requested : { ...requested, desiredSkills };
    // A contributed adapter type validates the configuration the patch leads to (merged as the write will merge it).
    const contributed = requested.adapterConfig === undefined && requested.adapterType === undefined ? null
      : await contributedAdapterConfig(ctx, kernel, {
        companyId: agent.company_id, adapterType: requested.adapterType ?? agent.adapter_type, agentId: agent.id,
        adapterConfig: prospectiveAdapterConfig(agent.adapter_config, requested.adapterConfig, requested.replaceAdapterConfig === true),
      });
    const updated = await kernel.db.transaction(async (tx) => {
      if (contributed?.answered) {
        body = { ...body, adapterConfig: await storeSecretFields(ctx, kernel, tx, agent.company_id, contributed), replaceAdapterConfig: true };
      }
      // Terminating a pending agent cancels its hire, as POST .../terminate does; the hire is locked before the agent, as everywhere.
      if (body.status === 'terminated') await lockOpenHires(tx, agent.id);
      const before = await lockAgent(tx, agent.id);
      const after = await writeAgent(tx, before.id, await nextStateForPatch(tx, before, body));
      await syncBoardHolds(tx, before, after, body.status === 'paused' && before.status !== 'paused');
      const cancelled = before.status === 'pending_approval' && after.status === 'terminated'
        ? await decideOpenHires(ctx, kernel, tx, after.id, 'cancelled', TERMINATED_BEFORE_APPROVAL) : [];
      await finishUpdate(ctx, kernel, tx, before, after, 'agent.updated', 'patch',
        cancelled.length > 0 ? { details: { cancelledApprovalIds: cancelled.map((row) => row.id) } } : {});
      return after;
    });
    ctx.body = await agentView(kernel.db, caller, updated);
  });

  /**
   * canCreateAgents is the stored legacy flag; canAssignTasks is an explicit tasks:assign
   * grant plus an active company membership, so the agent can take part in assignment.
   */
  route({
    method: 'PATCH', path: '/api/agents/:agentId/permissions', auth: 'any', body: permissionsBody, parameters: AGENT_REFERENCE_PARAMETERS,
    success: 200, summary: "Change an agent's permissions (board users and the company's CEO agent)",
  }, async (ctx, req) => {
    const { caller, agent } = await agentForRequest(ctx, kernel.db);
    if (caller.kind === 'agent' && !(await isCeoAgentOf(kernel.db, caller, agent.company_id))) {
      throw forbidden("Only the board or the company's CEO agent can change agent permissions", 'permission_denied');
    }
    const body = await req.body();
    const updated = await kernel.db.transaction(async (tx) => {
      const before = await lockAgent(tx, agent.id);
      const state = stateOf(before);
      if (body.canCreateAgents !== undefined) state.permissions = { ...(before.permissions ?? {}), canCreateAgents: body.canCreateAgents };
      const after = await writeAgent(tx, before.id, state);
      const { userId, agentId } = callerIds(ctx);
      if (body.canAssignTasks === true) {
        await ensureActiveAgentMembership(tx, after.company_id, after.id);
        if (!(await hasGrant(tx, after.company_id, 'agent', after.id, 'tasks:assign'))) {
          await upsertGrant(tx, { companyId: after.company_id, principalType: 'agent', principalId: after.id, permissionKey: 'tasks:assign', scope: null, grantedByUserId: userId, grantedByAgentId: agentId });
        }
      } else if (body.canAssignTasks === false) {
        await deleteGrant(tx, after.company_id, 'agent', after.id, 'tasks:assign');
      }
      await kernel.activity.recordFor(ctx, tx, {
        companyId: after.company_id, action: 'agent.permissions_updated', entityType: 'agent', entityId: after.id,
        details: { canCreateAgents: body.canCreateAgents ?? null, canAssignTasks: body.canAssignTasks ?? null },
      });
      const changes = changesBetween(before, after);
      if (Object.keys(changes).length > 0) {
        await kernel.events.emit(tx, 'agent.updated', { companyId: after.company_id, agentId: after.id, agent: eventAgent(after), changes, actor: eventActor(ctx) }, { awaited: true });
      }
      return after;
    });
    ctx.body = await agentDetail(kernel.db, caller, updated);
  });
};
