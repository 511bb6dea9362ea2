import type { RouteRequest } from '@keel/sdk/plugin';
import type { SkillPolicyContext } from './context.ts';
import { decide, type Decision } from './decide.ts';
import { readReplaceRequest } from './document.ts';
import { invalidDocument, revisionConflict } from './errors.ts';
import { readEvaluationRequest } from './evaluation-request.ts';
import { assertPolicyAdmin, callerPrincipal, namedAgentPrincipal } from './principals.ts';
import { compiledPolicy, readPolicy, replacePolicy, resetPolicy } from './store.ts';
import { openDefault, type EffectivePolicy } from './vocabulary.ts';

/** The host resolved and checked the company of every route before the handler runs. */
const companyOf = (request: RouteRequest): string => request.companyId!;

/** GET: the stored document, or the open default when none is stored. */
export async function getPolicy(request: RouteRequest, ctx: SkillPolicyContext): Promise<EffectivePolicy> {
  return readPolicy(ctx, companyOf(request));
}

/** PUT: validates the whole document first, then authority, then replaces it at the expected revision. */
export async function replacePolicyRoute(request: RouteRequest, ctx: SkillPolicyContext): Promise<EffectivePolicy> {
  const read = readReplaceRequest(request.body);
  if (!read.ok) throw invalidDocument(read.issues);
  await assertPolicyAdmin(ctx);
  const companyId = companyOf(request);
  const outcome = await replacePolicy(ctx, companyId, read.document, read.expectedRevision);
  if (!outcome.ok) throw revisionConflict(read.expectedRevision, outcome.currentRevision);
  await ctx.activity.record({
    action: 'company.skill_policy_replaced',
    entityType: 'company_skill_policy',
    entityId: companyId,
    details: { previousRevision: outcome.previousRevision, newRevision: outcome.policy.revision, defaultEffect: outcome.policy.defaultEffect, ruleCount: outcome.policy.rules.length },
  });
  return outcome.policy;
}

/** DELETE: back to the open default; resetting a company with nothing stored changes nothing. */
export async function resetPolicyRoute(request: RouteRequest, ctx: SkillPolicyContext): Promise<EffectivePolicy> {
  await assertPolicyAdmin(ctx);
  const companyId = companyOf(request);
  const previousRevision = await resetPolicy(ctx, companyId);
  if (previousRevision !== null) {
    await ctx.activity.record({
      action: 'company.skill_policy_reset',
      entityType: 'company_skill_policy',
      entityId: companyId,
      details: { previousRevision, newRevision: 0 },
    });
  }
  return openDefault();
}

/** POST evaluate: the decision for the caller as itself, or (policy admins only) for another agent of the company. */
export async function evaluateRoute(request: RouteRequest, ctx: SkillPolicyContext): Promise<Decision> {
  const read = readEvaluationRequest(request.body);
  if (!read.ok) throw invalidDocument(read.issues);
  const { action, resource, principalAgentId } = read.request;
  let resolved;
  if (principalAgentId) {
    await assertPolicyAdmin(ctx);
    resolved = await namedAgentPrincipal(ctx, principalAgentId);
  } else {
    resolved = await callerPrincipal(ctx);
  }
  const policy = await compiledPolicy(ctx, companyOf(request));
  return decide(policy, resolved.principal, action, resource, resolved.holdsLegacyGrant);
}
