/** The words of a skill policy: actions, source types, effects, limits (the spec's Limits table). */
export const SKILL_ACTIONS = ['skills.create', 'skills.import', 'skills.install', 'skills.edit', 'skills.update', 'skills.test', 'skills.reset', 'skills.remove'] as const;
export type SkillAction = (typeof SKILL_ACTIONS)[number];

export const SOURCE_TYPES = ['workspace', 'catalog', 'git', 'external_package', 'generated', 'unknown'] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];

export type Effect = 'allow' | 'deny';

export const SCHEMA_VERSION = 1;
export const MAX_RULES = 1_000;
export const MAX_SELECTOR_ENTRIES = 500;
export const MAX_RULE_ID_LENGTH = 128;
export const MAX_SKILL_KEY_LENGTH = 512;
export const MAX_LOCATOR_LENGTH = 2_048;
export const MIN_PRIORITY = -1_000_000;
export const MAX_PRIORITY = 1_000_000;
export const RULE_ID = /^[a-zA-Z0-9][a-zA-Z0-9._:-]*$/;
export const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** Grants that once allowed every skill change: honoured under a default-deny policy when no rule matched. */
export const LEGACY_SKILL_GRANTS = ['skills:create', 'skills:suggest-changes'];
/** The grant that carries policy administration authority (company-wide grants only). */
export const POLICY_ADMIN_GRANT = 'users:manage_permissions';

export type Subject = { type: 'all_agents' } | { type: 'agents'; agentIds: string[] } | { type: 'roles'; roles: string[] };

export interface ResourceSelector {
  skillIds?: string[];
  skillKeys?: string[];
  sourceTypes?: SourceType[];
  sourceLocators?: string[];
}

export interface PolicyRule {
  id: string;
  priority: number;
  effect: Effect;
  subject: Subject;
  actions: SkillAction[];
  resources?: ResourceSelector;
}

export interface PolicyDocument {
  schemaVersion: 1;
  defaultEffect: Effect;
  rules: PolicyRule[];
}

/** What GET answers: the stored document with its revision, or the open default. */
export interface EffectivePolicy extends PolicyDocument {
  revision: number;
  materialized: boolean;
}

export function openDefault(): EffectivePolicy {
  return { schemaVersion: 1, revision: 0, defaultEffect: 'allow', rules: [], materialized: false };
}

/** The resource an evaluation is about; every field optional. */
export interface EvaluatedResource {
  skillId?: string;
  skillKey?: string;
  sourceType?: SourceType;
  sourceLocator?: string;
}
