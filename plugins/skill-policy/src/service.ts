import { allOf, PluginError } from '@keel/sdk/plugin';
import type { SkillPolicyContext } from './context.ts';
import { decide, type Decision } from './decide.ts';
import { isObject } from './issues.ts';
import { canonicalLocator } from './locators.ts';
import { callerPrincipal } from './principals.ts';
import { compiledPolicy } from './store.ts';
import type { EvaluatedResource, SkillAction } from './vocabulary.ts';

/**
 * The `decide` service: the decision for the actor a calling plugin acts for, in the call's
 * company, exactly as POST evaluate answers that actor asking for itself. The host checked the
 * input against the declared schema. A locator is canonicalised like a stored one; one that
 * carries credentials is not refused here (it can match no stored locator, as stored ones
 * never carry credentials), because the calling plugin answers for its own input.
 */
export async function decideService(input: unknown, ctx: SkillPolicyContext): Promise<Decision> {
  const companyId = ctx.invocation.companyId;
  if (!companyId || !isObject(input)) throw new PluginError(400, 'company_required', 'decide serves a call of a company');
  const given = (isObject(input.resource) ? input.resource : {}) as EvaluatedResource;
  const resource: EvaluatedResource = {};
  if (given.skillId) resource.skillId = given.skillId.toLowerCase();
  if (given.skillKey?.trim()) resource.skillKey = given.skillKey.trim();
  if (given.sourceType) resource.sourceType = given.sourceType;
  if (given.sourceLocator?.trim()) resource.sourceLocator = canonicalLocator(given.sourceLocator);
  // The policy read and the caller's role are independent: fetch them together.
  const [policy, resolved] = await allOf([compiledPolicy(ctx, companyId), callerPrincipal(ctx)]);
  return decide(policy, resolved.principal, input.action as SkillAction, resource, resolved.holdsLegacyGrant);
}
