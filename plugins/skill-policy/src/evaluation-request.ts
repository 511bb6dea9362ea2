import { readLocator } from './document.ts';
import { characters, isObject, Issues, rejectUnknownKeys } from './issues.ts';
import { MAX_SKILL_KEY_LENGTH, SKILL_ACTIONS, SOURCE_TYPES, UUID, type EvaluatedResource, type SkillAction, type SourceType } from './vocabulary.ts';

export interface EvaluationRequest {
  action: SkillAction;
  resource: EvaluatedResource;
  /** `principal.agentId`: evaluate as that agent instead of the caller. */
  principalAgentId?: string;
}

/** The `resource` of an evaluation: any subset of its four fields, each checked as a rule stores it. */
export function readResource(value: unknown, issues: Issues): EvaluatedResource {
  const path = ['resource'];
  if (!isObject(value)) { issues.add('invalid_type', path, 'Expected object'); return {}; }
  rejectUnknownKeys(value, ['skillId', 'skillKey', 'sourceType', 'sourceLocator'], path, issues);
  const resource: EvaluatedResource = {};
  if (value.skillId !== undefined) {
    if (typeof value.skillId === 'string' && UUID.test(value.skillId)) resource.skillId = value.skillId.toLowerCase();
    else issues.add('invalid_string', [...path, 'skillId'], 'Invalid uuid');
  }
  if (value.skillKey !== undefined) {
    const key = typeof value.skillKey === 'string' ? value.skillKey.trim() : undefined;
    if (key === undefined) issues.add('invalid_type', [...path, 'skillKey'], 'Expected string');
    else if (key === '') issues.add('too_small', [...path, 'skillKey'], 'String must contain at least 1 character(s)');
    else if (characters(key) > MAX_SKILL_KEY_LENGTH) issues.add('too_big', [...path, 'skillKey'], `String must contain at most ${MAX_SKILL_KEY_LENGTH} character(s)`);
    else resource.skillKey = key;
  }
  if (value.sourceType !== undefined) {
    if (SOURCE_TYPES.includes(value.sourceType as SourceType)) resource.sourceType = value.sourceType as SourceType;
    else issues.add('invalid_enum_value', [...path, 'sourceType'], `Invalid enum value. Expected ${SOURCE_TYPES.map((type) => `'${type}'`).join(' | ')}`);
  }
  if (value.sourceLocator !== undefined) {
    const locator = readLocator(value.sourceLocator, [...path, 'sourceLocator'], issues);
    if (locator !== undefined) resource.sourceLocator = locator;
  }
  return resource;
}

export function readAction(value: unknown, issues: Issues): SkillAction {
  if (SKILL_ACTIONS.includes(value as SkillAction)) return value as SkillAction;
  if (value === undefined) issues.add('invalid_type', ['action'], 'Required');
  else issues.add('invalid_enum_value', ['action'], `Invalid enum value. Expected ${SKILL_ACTIONS.map((action) => `'${action}'`).join(' | ')}`);
  return 'skills.create';
}

/** A POST evaluate body, or the issues that make it invalid. */
export function readEvaluationRequest(body: unknown): { ok: true; request: EvaluationRequest } | { ok: false; issues: Issues } {
  const issues = new Issues();
  if (!isObject(body)) {
    issues.add('invalid_type', [], 'Expected object');
    return { ok: false, issues };
  }
  rejectUnknownKeys(body, ['action', 'resource', 'principal'], [], issues);
  const action = readAction(body.action, issues);
  const resource = body.resource === undefined ? {} : readResource(body.resource, issues);
  let principalAgentId: string | undefined;
  if (body.principal !== undefined) {
    if (!isObject(body.principal)) issues.add('invalid_type', ['principal'], 'Expected object');
    else {
      rejectUnknownKeys(body.principal, ['agentId'], ['principal'], issues);
      const agentId = body.principal.agentId;
      if (typeof agentId === 'string' && UUID.test(agentId)) principalAgentId = agentId.toLowerCase();
      else if (agentId === undefined) issues.add('invalid_type', ['principal', 'agentId'], 'Required');
      else issues.add('invalid_string', ['principal', 'agentId'], 'Invalid uuid');
    }
  }
  if (issues.count) return { ok: false, issues };
  return { ok: true, request: principalAgentId ? { action, resource, principalAgentId } : { action, resource } };
}
