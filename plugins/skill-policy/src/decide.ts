import { canonicalLocator } from './locators.ts';
import type { EffectivePolicy, EvaluatedResource, PolicyRule, SkillAction, SourceType } from './vocabulary.ts';

/** Who an evaluation is about: an agent (with its role) or a board user (role `board`). */
export interface Principal {
  type: 'agent' | 'board';
  /** The agent's id, or the board user's. */
  id: string;
  role: string | null;
}

export type DecisionReason = 'no_policy_default' | 'explicit_rule' | 'policy_default' | 'legacy_compatibility' | 'platform_invariant';

export interface Decision {
  allowed: boolean;
  action: SkillAction;
  reason: DecisionReason;
  policyRevision: number;
  matchedRuleId: string | null;
  remediation: string | null;
}

export const DENIED_REMEDIATION = 'Contact a company administrator to change the skill policy.';

const normalizeRole = (role: string | null | undefined): string => (role ?? '').trim().toLowerCase();

/** A rule ready to match: its lists as sets, roles normalised, locators canonical. */
interface CompiledRule {
  id: string;
  allow: boolean;
  agentsOnly: boolean;
  agentIds: Set<string> | null;
  roles: Set<string> | null;
  skillIds: Set<string> | null;
  skillKeys: Set<string> | null;
  sourceTypes: Set<SourceType> | null;
  sourceLocators: Set<string> | null;
}

/** A materialised policy compiled for evaluation: per action, its rules in decision order. */
export interface CompiledPolicy {
  materialized: boolean;
  revision: number;
  defaultAllows: boolean;
  byAction: Map<SkillAction, CompiledRule[]>;
}

const setOf = <T>(list: T[] | undefined): Set<T> | null => (list ? new Set(list) : null);

function compileRule(rule: PolicyRule): CompiledRule {
  const { subject, resources } = rule;
  return {
    id: rule.id,
    allow: rule.effect === 'allow',
    agentsOnly: subject.type !== 'roles',
    agentIds: subject.type === 'agents' ? new Set(subject.agentIds.map((id) => id.toLowerCase())) : null,
    roles: subject.type === 'roles' ? new Set(subject.roles.map(normalizeRole).filter((role) => role !== '')) : null,
    skillIds: setOf(resources?.skillIds),
    skillKeys: setOf(resources?.skillKeys),
    sourceTypes: setOf(resources?.sourceTypes),
    // Stored locators are canonical already; canonicalising again keeps rows written by older code matching.
    sourceLocators: resources?.sourceLocators ? new Set(resources.sourceLocators.map(canonicalLocator)) : null,
  };
}

/** Rules sorted by priority (lower first), ties by id, then grouped by action in that order. */
export function compilePolicy(policy: EffectivePolicy): CompiledPolicy {
  const sorted = [...policy.rules].sort((a, b) => a.priority - b.priority || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const byAction = new Map<SkillAction, CompiledRule[]>();
  for (const rule of sorted) {
    const compiled = compileRule(rule);
    for (const action of rule.actions) {
      const list = byAction.get(action);
      if (list) list.push(compiled);
      else byAction.set(action, [compiled]);
    }
  }
  return { materialized: policy.materialized, revision: policy.revision, defaultAllows: policy.defaultEffect === 'allow', byAction };
}

function subjectMatches(rule: CompiledRule, principal: Principal): boolean {
  if (rule.agentsOnly) return principal.type === 'agent' && (rule.agentIds === null || rule.agentIds.has(principal.id.toLowerCase()));
  const role = normalizeRole(principal.role);
  return role !== '' && rule.roles!.has(role);
}

/** Every selector the rule lists must match; a selector the evaluation has no value for does not. */
function resourceMatches(rule: CompiledRule, resource: EvaluatedResource): boolean {
  if (rule.skillIds && !(resource.skillId !== undefined && rule.skillIds.has(resource.skillId.toLowerCase()))) return false;
  if (rule.skillKeys && !(resource.skillKey !== undefined && rule.skillKeys.has(resource.skillKey))) return false;
  if (rule.sourceTypes && !(resource.sourceType !== undefined && rule.sourceTypes.has(resource.sourceType))) return false;
  if (rule.sourceLocators && !(resource.sourceLocator !== undefined && rule.sourceLocators.has(canonicalLocator(resource.sourceLocator)))) return false;
  return true;
}

function decision(allowed: boolean, action: SkillAction, reason: DecisionReason, revision: number, matchedRuleId: string | null = null): Decision {
  return { allowed, action, reason, policyRevision: revision, matchedRuleId, remediation: allowed ? null : DENIED_REMEDIATION };
}

/**
 * The decision procedure: (1) no stored policy allows (`no_policy_default`); (2) the first rule
 * in priority-then-id order whose actions, subject and resources all match decides
 * (`explicit_rule`); (3) under a default-deny policy a principal holding a legacy skill grant is
 * allowed (`legacy_compatibility`); (4) otherwise the default effect decides (`policy_default`).
 * `holdsLegacyGrant` is asked only in case (3).
 */
export async function decide(policy: CompiledPolicy, principal: Principal, action: SkillAction, resource: EvaluatedResource, holdsLegacyGrant: () => Promise<boolean>): Promise<Decision> {
  if (!policy.materialized) return decision(true, action, 'no_policy_default', policy.revision);
  for (const rule of policy.byAction.get(action) ?? []) {
    if (subjectMatches(rule, principal) && resourceMatches(rule, resource)) return decision(rule.allow, action, 'explicit_rule', policy.revision, rule.id);
  }
  if (!policy.defaultAllows && await holdsLegacyGrant()) return decision(true, action, 'legacy_compatibility', policy.revision);
  return decision(policy.defaultAllows, action, 'policy_default', policy.revision);
}
