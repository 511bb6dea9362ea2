import type { SkillPolicyContext } from './context.ts';
import type { Principal } from './decide.ts';
import { adminRequired, agentNotFound, authenticationRequired, companyBoundaryDenied } from './errors.ts';
import { LEGACY_SKILL_GRANTS, POLICY_ADMIN_GRANT } from './vocabulary.ts';

/** A principal to decide for, and whether it holds a legacy skill grant (asked only when a decision needs it). */
export interface ResolvedPrincipal {
  principal: Principal;
  holdsLegacyGrant: () => Promise<boolean>;
}

const holdsAny = (grants: Array<{ permissionKey: string }>) => grants.some((grant) => LEGACY_SKILL_GRANTS.includes(grant.permissionKey));

/**
 * The caller as a principal: an agent with its role, or a board user with role `board`. A board
 * user's role needs no kernel call; an agent's does (its role may have just changed).
 */
export async function callerPrincipal(ctx: SkillPolicyContext): Promise<ResolvedPrincipal> {
  const { actor } = ctx.invocation;
  if (actor.type === 'user') {
    return {
      principal: { type: 'board', id: actor.id, role: 'board' },
      holdsLegacyGrant: async () => holdsAny((await ctx.principals.actor(LEGACY_SKILL_GRANTS)).grants),
    };
  }
  if (actor.type !== 'agent') throw authenticationRequired();
  const facts = await ctx.principals.actor();
  if (facts.type !== 'agent' || facts.role === null) throw companyBoundaryDenied();
  return {
    principal: { type: 'agent', id: facts.id!, role: facts.role },
    holdsLegacyGrant: async () => holdsAny((await ctx.principals.actor(LEGACY_SKILL_GRANTS)).grants),
  };
}

/** An agent named by `principal.agentId`: 404 when unknown, 403 when it belongs to another company. */
export async function namedAgentPrincipal(ctx: SkillPolicyContext, agentId: string): Promise<ResolvedPrincipal> {
  const facts = await ctx.principals.agent(agentId, LEGACY_SKILL_GRANTS);
  if (facts.status === 'not_found') throw agentNotFound();
  if (facts.status === 'other_company') throw companyBoundaryDenied();
  const legacy = holdsAny(facts.grants);
  return { principal: { type: 'agent', id: agentId, role: facts.role }, holdsLegacyGrant: async () => legacy };
}

/**
 * Policy administration authority: the implicit local board or an instance admin; a board user
 * or an agent holding `users:manage_permissions` company-wide in the company. Anyone else: 403.
 */
export async function assertPolicyAdmin(ctx: SkillPolicyContext): Promise<void> {
  const facts = await ctx.principals.actor([POLICY_ADMIN_GRANT]);
  if (facts.instanceAuthority) return;
  if (facts.grants.some((grant) => grant.permissionKey === POLICY_ADMIN_GRANT && grant.companyWide)) return;
  throw adminRequired();
}
