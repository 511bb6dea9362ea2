import { canonicalLocator, CREDENTIAL_LOCATOR_MESSAGE, isCredentialFree } from './locators.ts';
import { characters, isObject, Issues, rejectUnknownKeys, type Json } from './issues.ts';
import {
  MAX_LOCATOR_LENGTH, MAX_PRIORITY, MAX_RULE_ID_LENGTH, MAX_RULES, MAX_SELECTOR_ENTRIES, MAX_SKILL_KEY_LENGTH, MIN_PRIORITY, RULE_ID,
  SKILL_ACTIONS, SOURCE_TYPES, UUID, type Effect, type PolicyDocument, type PolicyRule, type ResourceSelector, type SkillAction, type SourceType, type Subject,
} from './vocabulary.ts';

type Path = Array<string | number>;

const requiredAt = (issues: Issues, path: Path) => issues.add('invalid_type', path, 'Required');

/** 1..max unique strings, each trimmed to 1..maxLength characters (roles, skill keys). */
function stringList(value: unknown, path: Path, maxLength: number, issues: Issues): string[] {
  if (!Array.isArray(value)) { issues.add('invalid_type', path, 'Expected array'); return []; }
  if (value.length === 0) issues.add('too_small', path, 'Array must contain at least 1 element(s)');
  if (value.length > MAX_SELECTOR_ENTRIES) issues.add('too_big', path, `Array must contain at most ${MAX_SELECTOR_ENTRIES} element(s)`);
  const seen = new Set<string>();
  value.forEach((entry, index) => {
    if (typeof entry !== 'string') return issues.add('invalid_type', [...path, index], 'Expected string');
    const trimmed = entry.trim();
    if (trimmed === '') return issues.add('too_small', [...path, index], 'String must contain at least 1 character(s)');
    if (characters(trimmed) > maxLength) return issues.add('too_big', [...path, index], `String must contain at most ${maxLength} character(s)`);
    if (seen.has(trimmed)) return issues.add('custom', [...path, index], 'Values must be unique');
    seen.add(trimmed);
  });
  return [...seen];
}

/** 1..500 unique uuids (agents, skills), kept in lower case so that they compare with the kernel's ids. */
function uuidList(value: unknown, path: Path, issues: Issues): string[] {
  if (!Array.isArray(value)) { issues.add('invalid_type', path, 'Expected array'); return []; }
  if (value.length === 0) issues.add('too_small', path, 'Array must contain at least 1 element(s)');
  if (value.length > MAX_SELECTOR_ENTRIES) issues.add('too_big', path, `Array must contain at most ${MAX_SELECTOR_ENTRIES} element(s)`);
  const seen = new Set<string>();
  value.forEach((entry, index) => {
    if (typeof entry !== 'string' || !UUID.test(entry)) return issues.add('invalid_string', [...path, index], 'Invalid uuid');
    const id = entry.toLowerCase();
    if (seen.has(id)) return issues.add('custom', [...path, index], 'Values must be unique');
    seen.add(id);
  });
  return [...seen];
}

/** Unique members of a closed list (actions, source types). */
function enumList<T extends string>(value: unknown, path: Path, allowed: readonly T[], duplicate: string, issues: Issues): T[] {
  if (!Array.isArray(value)) { issues.add('invalid_type', path, 'Expected array'); return []; }
  if (value.length === 0) issues.add('too_small', path, 'Array must contain at least 1 element(s)');
  const seen = new Set<T>();
  value.forEach((entry, index) => {
    if (typeof entry !== 'string' || !allowed.includes(entry as T)) {
      return issues.add('invalid_enum_value', [...path, index], `Invalid enum value. Expected ${allowed.map((item) => `'${item}'`).join(' | ')}`);
    }
    if (seen.has(entry as T)) return issues.add('custom', [...path, index], duplicate);
    seen.add(entry as T);
  });
  return [...seen];
}

/** A locator as stored or evaluated: trimmed, 1..2,048 characters, free of credentials, canonical. */
export function readLocator(value: unknown, path: Path, issues: Issues): string | undefined {
  if (typeof value !== 'string') { issues.add('invalid_type', path, 'Expected string'); return undefined; }
  const trimmed = value.trim();
  if (trimmed === '') { issues.add('too_small', path, 'String must contain at least 1 character(s)'); return undefined; }
  if (characters(trimmed) > MAX_LOCATOR_LENGTH) { issues.add('too_big', path, `String must contain at most ${MAX_LOCATOR_LENGTH} character(s)`); return undefined; }
  if (!isCredentialFree(trimmed)) { issues.add('custom', path, CREDENTIAL_LOCATOR_MESSAGE); return undefined; }
  return canonicalLocator(trimmed);
}

function locatorList(value: unknown, path: Path, issues: Issues): string[] {
  if (!Array.isArray(value)) { issues.add('invalid_type', path, 'Expected array'); return []; }
  if (value.length === 0) issues.add('too_small', path, 'Array must contain at least 1 element(s)');
  if (value.length > MAX_SELECTOR_ENTRIES) issues.add('too_big', path, `Array must contain at most ${MAX_SELECTOR_ENTRIES} element(s)`);
  const seen = new Set<string>();
  value.forEach((entry, index) => {
    const locator = readLocator(entry, [...path, index], issues);
    if (locator === undefined) return;
    // Unique as stored: two spellings of one repository are one locator.
    if (seen.has(locator)) return issues.add('custom', [...path, index], 'Source locators must be unique');
    seen.add(locator);
  });
  return [...seen];
}

function readSubject(value: unknown, path: Path, issues: Issues): Subject {
  if (!isObject(value)) { issues.add('invalid_type', path, 'Expected object'); return { type: 'all_agents' }; }
  switch (value.type) {
    case 'all_agents':
      rejectUnknownKeys(value, ['type'], path, issues);
      return { type: 'all_agents' };
    case 'agents':
      rejectUnknownKeys(value, ['type', 'agentIds'], path, issues);
      if (value.agentIds === undefined) { requiredAt(issues, [...path, 'agentIds']); return { type: 'agents', agentIds: [] }; }
      return { type: 'agents', agentIds: uuidList(value.agentIds, [...path, 'agentIds'], issues) };
    case 'roles':
      rejectUnknownKeys(value, ['type', 'roles'], path, issues);
      if (value.roles === undefined) { requiredAt(issues, [...path, 'roles']); return { type: 'roles', roles: [] }; }
      return { type: 'roles', roles: stringList(value.roles, [...path, 'roles'], MAX_SKILL_KEY_LENGTH, issues) };
    case undefined:
      requiredAt(issues, [...path, 'type']);
      return { type: 'all_agents' };
    default:
      issues.add('invalid_union_discriminator', [...path, 'type'], "Invalid discriminator value. Expected 'all_agents' | 'agents' | 'roles'");
      return { type: 'all_agents' };
  }
}

const SELECTOR_KEYS = ['skillIds', 'skillKeys', 'sourceTypes', 'sourceLocators'] as const;

function readResources(value: unknown, path: Path, issues: Issues): ResourceSelector {
  if (!isObject(value)) { issues.add('invalid_type', path, 'Expected object'); return {}; }
  rejectUnknownKeys(value, SELECTOR_KEYS, path, issues);
  if (Object.keys(value).length === 0) issues.add('custom', path, 'At least one resource selector is required');
  const selector: ResourceSelector = {};
  if (value.skillIds !== undefined) selector.skillIds = uuidList(value.skillIds, [...path, 'skillIds'], issues);
  if (value.skillKeys !== undefined) selector.skillKeys = stringList(value.skillKeys, [...path, 'skillKeys'], MAX_SKILL_KEY_LENGTH, issues);
  if (value.sourceTypes !== undefined) selector.sourceTypes = enumList<SourceType>(value.sourceTypes, [...path, 'sourceTypes'], SOURCE_TYPES, 'Source types must be unique', issues);
  if (value.sourceLocators !== undefined) selector.sourceLocators = locatorList(value.sourceLocators, [...path, 'sourceLocators'], issues);
  return selector;
}

function readEffect(value: unknown, path: Path, issues: Issues): Effect {
  if (value === 'allow' || value === 'deny') return value;
  if (value === undefined) requiredAt(issues, path);
  else issues.add('invalid_enum_value', path, "Invalid enum value. Expected 'allow' | 'deny'");
  return 'allow';
}

function readRuleId(value: unknown, path: Path, issues: Issues): string {
  if (value === undefined) { requiredAt(issues, path); return ''; }
  if (typeof value !== 'string') { issues.add('invalid_type', path, 'Expected string'); return ''; }
  const id = value.trim();
  if (id === '') issues.add('too_small', path, 'String must contain at least 1 character(s)');
  else if (characters(id) > MAX_RULE_ID_LENGTH) issues.add('too_big', path, `String must contain at most ${MAX_RULE_ID_LENGTH} character(s)`);
  else if (!RULE_ID.test(id)) issues.add('invalid_string', path, 'Rule IDs must start with a letter or digit and contain only letters, digits, ".", "_", ":" and "-"');
  return id;
}

function readPriority(value: unknown, path: Path, issues: Issues): number {
  if (value === undefined) { requiredAt(issues, path); return 0; }
  if (typeof value !== 'number' || !Number.isInteger(value)) { issues.add('invalid_type', path, 'Expected integer'); return 0; }
  if (value < MIN_PRIORITY) issues.add('too_small', path, `Number must be greater than or equal to ${MIN_PRIORITY}`);
  if (value > MAX_PRIORITY) issues.add('too_big', path, `Number must be less than or equal to ${MAX_PRIORITY}`);
  return value;
}

function readRule(value: unknown, index: number, issues: Issues): PolicyRule | undefined {
  const path: Path = ['rules', index];
  if (!isObject(value)) { issues.add('invalid_type', path, 'Expected object'); return undefined; }
  const before = issues.count;
  rejectUnknownKeys(value, ['id', 'priority', 'effect', 'subject', 'actions', 'resources'], path, issues);
  const id = readRuleId(value.id, [...path, 'id'], issues);
  const priority = readPriority(value.priority, [...path, 'priority'], issues);
  const effect = readEffect(value.effect, [...path, 'effect'], issues);
  const subject = value.subject === undefined ? (requiredAt(issues, [...path, 'subject']), undefined) : readSubject(value.subject, [...path, 'subject'], issues);
  const actions = value.actions === undefined
    ? (requiredAt(issues, [...path, 'actions']), [])
    : enumList<SkillAction>(value.actions, [...path, 'actions'], SKILL_ACTIONS, 'Actions must be unique', issues);
  const resources = value.resources === undefined ? undefined : readResources(value.resources, [...path, 'resources'], issues);
  if (issues.count > before || !subject) return undefined;
  return resources ? { id, priority, effect, subject, actions, resources } : { id, priority, effect, subject, actions };
}

function readRules(value: unknown, issues: Issues): PolicyRule[] {
  if (value === undefined) { requiredAt(issues, ['rules']); return []; }
  if (!Array.isArray(value)) { issues.add('invalid_type', ['rules'], 'Expected array'); return []; }
  if (value.length > MAX_RULES) {
    // A document this far over the limit is not read further: one issue says why.
    issues.add('too_big', ['rules'], `Array must contain at most ${MAX_RULES} element(s)`);
    return [];
  }
  const rules: PolicyRule[] = [];
  const ids = new Set<string>();
  value.forEach((entry, index) => {
    const rule = readRule(entry, index, issues);
    if (!rule) return;
    if (ids.has(rule.id)) return issues.add('custom', ['rules', index, 'id'], 'Rule IDs must be unique');
    ids.add(rule.id);
    rules.push(rule);
  });
  return rules;
}

/** A PUT body: the document and `expectedRevision`, or the issues that make it invalid. */
export function readReplaceRequest(body: unknown): { ok: true; document: PolicyDocument; expectedRevision: number } | { ok: false; issues: Issues } {
  const issues = new Issues();
  if (!isObject(body)) {
    issues.add('invalid_type', [], 'Expected object');
    return { ok: false, issues };
  }
  rejectUnknownKeys(body, ['schemaVersion', 'defaultEffect', 'rules', 'expectedRevision'], [], issues);
  if (body.schemaVersion === undefined) requiredAt(issues, ['schemaVersion']);
  else if (body.schemaVersion !== 1) issues.add('invalid_literal', ['schemaVersion'], 'Invalid literal value, expected 1');
  const defaultEffect = readEffect(body.defaultEffect, ['defaultEffect'], issues);
  const rules = readRules(body.rules, issues);
  let expectedRevision = 0;
  const expected = body.expectedRevision;
  if (expected === undefined) requiredAt(issues, ['expectedRevision']);
  else if (typeof expected !== 'number' || !Number.isInteger(expected)) issues.add('invalid_type', ['expectedRevision'], 'Expected integer');
  else if (expected < 0) issues.add('too_small', ['expectedRevision'], 'Number must be greater than or equal to 0');
  else if (expected > 2_147_483_647) issues.add('too_big', ['expectedRevision'], 'Number must be less than or equal to 2147483647');
  else expectedRevision = expected;
  if (issues.count) return { ok: false, issues };
  return { ok: true, document: { schemaVersion: 1, defaultEffect, rules }, expectedRevision };
}

/** Reads a stored document back (it was valid when written). */
export function storedDocument(value: Json): PolicyDocument {
  return { schemaVersion: 1, defaultEffect: value.defaultEffect as Effect, rules: (value.rules ?? []) as PolicyRule[] };
}
