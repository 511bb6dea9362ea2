import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { createCompany } from '../../support/fixtures.ts';
import { activities, document, policyPath, putPolicy, rule, storedRows } from './helpers.ts';

let t: TestKernel;
beforeAll(async () => { t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS }); });
afterAll(async () => { await t?.stop(); });

const OPEN_DEFAULT = { schemaVersion: 1, revision: 0, defaultEffect: 'allow', rules: [], materialized: false };

/** PUT that must be refused as invalid: answers the issues and stores nothing. */
async function invalid(body: unknown): Promise<Array<{ path: Array<string | number>; message: string; code: string }>> {
  const company = await createCompany(t.api);
  const res = await t.api.put(policyPath(company.id), body);
  expect(res.status, res.text).toBe(422);
  expect(res.body.error).toBe('Invalid skill policy document');
  expect(res.body.code).toBe('skill_policy_validation_failed');
  const issues = res.body.details.issues;
  expect(Array.isArray(issues) && issues.length > 0).toBe(true);
  for (const issue of issues) {
    expect(Array.isArray(issue.path)).toBe(true);
    expect(typeof issue.message).toBe('string');
  }
  expect(await storedRows(t, company.id)).toEqual([]);
  expect(await activities(t, company.id, 'company.skill_policy_replaced')).toEqual([]);
  return issues;
}

const messageAt = (issues: Array<{ path: Array<string | number>; message: string }>, path: Array<string | number>) =>
  issues.filter((issue) => JSON.stringify(issue.path) === JSON.stringify(path)).map((issue) => issue.message);

describe('GET, PUT and DELETE /api/companies/{companyId}/skill-policy', () => {
  it('answers the open default when nothing is stored', async () => {
    const company = await createCompany(t.api);
    const res = await t.api.get(policyPath(company.id));
    expect(res.status).toBe(200);
    expect(res.body).toEqual(OPEN_DEFAULT);
  });

  it('stores a document: revision 1, materialized, the saved document echoed and read back, one activity entry', async () => {
    const company = await createCompany(t.api);
    const rules = [rule({ id: 'no-external-installs', priority: 10, actions: ['skills.install', 'skills.import'], resources: { sourceTypes: ['external_package', 'git'] } })];
    const res = await t.api.put(policyPath(company.id), document({ defaultEffect: 'deny', rules }));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ schemaVersion: 1, revision: 1, defaultEffect: 'deny', rules, materialized: true });
    expect((await t.api.get(policyPath(company.id))).body).toEqual(res.body);
    const [entry, ...more] = await activities(t, company.id, 'company.skill_policy_replaced');
    expect(more).toEqual([]);
    expect(entry).toMatchObject({ entity_type: 'company_skill_policy', entity_id: company.id, actor_type: 'user' });
    expect(entry.details).toMatchObject({ previousRevision: 0, newRevision: 1, defaultEffect: 'deny', ruleCount: 1 });
  });

  it('counts revisions up by one per replace and records each', async () => {
    const company = await createCompany(t.api);
    await putPolicy(t.api, company.id);
    const second = await putPolicy(t.api, company.id, { rules: [rule()] });
    expect(second.revision).toBe(2);
    const third = await t.api.put(policyPath(company.id), document({ expectedRevision: 2, defaultEffect: 'deny' }));
    expect(third.body).toMatchObject({ revision: 3, defaultEffect: 'deny', rules: [] });
    const details = (await activities(t, company.id, 'company.skill_policy_replaced')).map(({ details: { plugin, ...rest } }) => rest);
    expect(details).toEqual([
      { previousRevision: 0, newRevision: 1, defaultEffect: 'allow', ruleCount: 0 },
      { previousRevision: 1, newRevision: 2, defaultEffect: 'allow', ruleCount: 1 },
      { previousRevision: 2, newRevision: 3, defaultEffect: 'deny', ruleCount: 0 },
    ]);
  });

  it('409 skill_policy_revision_conflict with expected and current revisions, writing nothing', async () => {
    const company = await createCompany(t.api);
    const stale = await t.api.put(policyPath(company.id), document({ expectedRevision: 3 }));
    expect(stale.status).toBe(409);
    expect(stale.body).toEqual({ error: 'Skill policy revision is stale', code: 'skill_policy_revision_conflict', details: { expectedRevision: 3, currentRevision: 0 } });
    await putPolicy(t.api, company.id);
    const again = await t.api.put(policyPath(company.id), document({ expectedRevision: 0, defaultEffect: 'deny' }));
    expect(again.status).toBe(409);
    expect(again.body.details).toEqual({ expectedRevision: 0, currentRevision: 1 });
    expect((await t.api.get(policyPath(company.id))).body).toMatchObject({ revision: 1, defaultEffect: 'allow' });
    expect(await activities(t, company.id, 'company.skill_policy_replaced')).toHaveLength(1);
  });

  it('DELETE resets to the open default and records previous and new revision 0; the next PUT expects 0', async () => {
    const company = await createCompany(t.api);
    await putPolicy(t.api, company.id);
    await putPolicy(t.api, company.id, { rules: [rule()] });
    const res = await t.api.delete(policyPath(company.id));
    expect(res.status).toBe(200);
    expect(res.body).toEqual(OPEN_DEFAULT);
    expect((await t.api.get(policyPath(company.id))).body).toEqual(OPEN_DEFAULT);
    const [entry] = await activities(t, company.id, 'company.skill_policy_reset');
    expect(entry).toMatchObject({ entity_type: 'company_skill_policy', entity_id: company.id });
    expect(entry.details).toMatchObject({ previousRevision: 2, newRevision: 0 });
    const next = await t.api.put(policyPath(company.id), document({ expectedRevision: 0 }));
    expect(next.body.revision).toBe(1);
  });

  it('DELETE with nothing stored is a no-op answering the default (no reset entry)', async () => {
    const company = await createCompany(t.api);
    const res = await t.api.delete(policyPath(company.id));
    expect(res.status).toBe(200);
    expect(res.body).toEqual(OPEN_DEFAULT);
    expect(await activities(t, company.id, 'company.skill_policy_reset')).toEqual([]);
  });

  it('404 for an unknown company', async () => {
    const res = await t.api.get(policyPath(randomUUID()));
    expect(res.status).toBe(404);
  });
});

describe('document validation (422 skill_policy_validation_failed)', () => {
  it('a body that is not an object, or misses every field', async () => {
    expect(messageAt(await invalid([1]), [])).toEqual(['Expected object']);
    const issues = await invalid({});
    for (const field of ['schemaVersion', 'defaultEffect', 'rules', 'expectedRevision']) expect(messageAt(issues, [field])).toEqual(['Required']);
  });

  it('schemaVersion 1 only; defaultEffect allow or deny; rules an array; expectedRevision a non-negative integer', async () => {
    expect(messageAt(await invalid(document({ schemaVersion: 2 })), ['schemaVersion'])).toEqual(['Invalid literal value, expected 1']);
    expect(messageAt(await invalid(document({ schemaVersion: '1' })), ['schemaVersion'])).toEqual(['Invalid literal value, expected 1']);
    expect(messageAt(await invalid(document({ defaultEffect: 'maybe' })), ['defaultEffect'])).toEqual(["Invalid enum value. Expected 'allow' | 'deny'"]);
    expect(messageAt(await invalid(document({ rules: {} })), ['rules'])).toEqual(['Expected array']);
    expect(messageAt(await invalid(document({ expectedRevision: -1 })), ['expectedRevision'])).toEqual(['Number must be greater than or equal to 0']);
    expect(messageAt(await invalid(document({ expectedRevision: 1.5 })), ['expectedRevision'])).toEqual(['Expected integer']);
    expect(messageAt(await invalid(document({ expectedRevision: '0' })), ['expectedRevision'])).toEqual(['Expected integer']);
  });

  it('unknown fields are rejected at every level', async () => {
    expect(messageAt(await invalid(document({ extra: 1 })), [])).toEqual(["Unrecognized key(s) in object: 'extra'"]);
    expect(messageAt(await invalid(document({ rules: [rule({ note: 'x' })] })), ['rules', 0])).toEqual(["Unrecognized key(s) in object: 'note'"]);
    expect(messageAt(await invalid(document({ rules: [rule({ subject: { type: 'all_agents', agentIds: [] } })] })), ['rules', 0, 'subject'])).toEqual(["Unrecognized key(s) in object: 'agentIds'"]);
    expect(messageAt(await invalid(document({ rules: [rule({ subject: { type: 'roles', roles: ['cto'], agentIds: [] } })] })), ['rules', 0, 'subject'])).toEqual(["Unrecognized key(s) in object: 'agentIds'"]);
    expect(messageAt(await invalid(document({ rules: [rule({ resources: { skillKeys: ['a'], owner: 'x' } })] })), ['rules', 0, 'resources'])).toEqual(["Unrecognized key(s) in object: 'owner'"]);
  });

  it('up to 1,000 rules', async () => {
    const rules = (n: number) => Array.from({ length: n }, (_, i) => rule({ id: `rule-${i}`, priority: i }));
    const company = await createCompany(t.api);
    const ok = await t.api.put(policyPath(company.id), document({ rules: rules(1000) }));
    expect(ok.status, ok.text.slice(0, 300)).toBe(200);
    expect(ok.body.rules).toHaveLength(1000);
    expect(messageAt(await invalid(document({ rules: rules(1001) })), ['rules'])).toEqual(['Array must contain at most 1000 element(s)']);
  });

  it('rule ids: required, unique, 1-128 characters, the pattern', async () => {
    expect(messageAt(await invalid(document({ rules: [rule(), rule({ priority: 5 })] })), ['rules', 1, 'id'])).toEqual(['Rule IDs must be unique']);
    expect(messageAt(await invalid(document({ rules: [{ ...rule(), id: undefined }] })), ['rules', 0, 'id'])).toEqual(['Required']);
    expect(messageAt(await invalid(document({ rules: [rule({ id: '' })] })), ['rules', 0, 'id'])).toEqual(['String must contain at least 1 character(s)']);
    expect(messageAt(await invalid(document({ rules: [rule({ id: 'a'.repeat(129) })] })), ['rules', 0, 'id'])).toEqual(['String must contain at most 128 character(s)']);
    for (const id of ['-leading-dash', '.dot', 'has space', 'slash/inside', 'ünï']) {
      expect(messageAt(await invalid(document({ rules: [rule({ id })] })), ['rules', 0, 'id'])).toHaveLength(1);
    }
    const company = await createCompany(t.api);
    const ok = await t.api.put(policyPath(company.id), document({ rules: [rule({ id: `A9._:-${'x'.repeat(122)}` }), rule({ id: '0' })] }));
    expect(ok.status, ok.text).toBe(200);
  });

  it('priority: a required integer from -1,000,000 to 1,000,000', async () => {
    expect(messageAt(await invalid(document({ rules: [rule({ priority: 1_000_001 })] })), ['rules', 0, 'priority'])).toEqual(['Number must be less than or equal to 1000000']);
    expect(messageAt(await invalid(document({ rules: [rule({ priority: -1_000_001 })] })), ['rules', 0, 'priority'])).toEqual(['Number must be greater than or equal to -1000000']);
    expect(messageAt(await invalid(document({ rules: [rule({ priority: 0.5 })] })), ['rules', 0, 'priority'])).toEqual(['Expected integer']);
    expect(messageAt(await invalid(document({ rules: [{ ...rule(), priority: undefined }] })), ['rules', 0, 'priority'])).toEqual(['Required']);
    const company = await createCompany(t.api);
    const ok = await t.api.put(policyPath(company.id), document({ rules: [rule({ id: 'low', priority: -1_000_000 }), rule({ id: 'high', priority: 1_000_000 })] }));
    expect(ok.status, ok.text).toBe(200);
  });

  it('effect, subject and actions are required; actions at least one, unique, from the list', async () => {
    expect(messageAt(await invalid(document({ rules: [rule({ effect: 'block' })] })), ['rules', 0, 'effect'])).toEqual(["Invalid enum value. Expected 'allow' | 'deny'"]);
    expect(messageAt(await invalid(document({ rules: [{ ...rule(), subject: undefined }] })), ['rules', 0, 'subject'])).toEqual(['Required']);
    expect(messageAt(await invalid(document({ rules: [rule({ actions: [] })] })), ['rules', 0, 'actions'])).toEqual(['Array must contain at least 1 element(s)']);
    expect(messageAt(await invalid(document({ rules: [rule({ actions: ['skills.import', 'skills.import'] })] })), ['rules', 0, 'actions', 1])).toEqual(['Actions must be unique']);
    expect(messageAt(await invalid(document({ rules: [rule({ actions: ['skills.publish'] })] })), ['rules', 0, 'actions', 0])).toHaveLength(1);
    expect(messageAt(await invalid(document({ rules: [{ ...rule(), actions: undefined }] })), ['rules', 0, 'actions'])).toEqual(['Required']);
    const company = await createCompany(t.api);
    const all = ['skills.create', 'skills.import', 'skills.install', 'skills.edit', 'skills.update', 'skills.test', 'skills.reset', 'skills.remove'];
    expect((await t.api.put(policyPath(company.id), document({ rules: [rule({ actions: all })] }))).status).toBe(200);
  });

  it('subjects are tagged by type, with 1-500 unique agent ids or roles', async () => {
    expect(messageAt(await invalid(document({ rules: [rule({ subject: { type: 'everyone' } })] })), ['rules', 0, 'subject', 'type'])).toHaveLength(1);
    expect(messageAt(await invalid(document({ rules: [rule({ subject: {} })] })), ['rules', 0, 'subject', 'type'])).toEqual(['Required']);
    expect(messageAt(await invalid(document({ rules: [rule({ subject: { type: 'agents' } })] })), ['rules', 0, 'subject', 'agentIds'])).toEqual(['Required']);
    expect(messageAt(await invalid(document({ rules: [rule({ subject: { type: 'agents', agentIds: [] } })] })), ['rules', 0, 'subject', 'agentIds'])).toEqual(['Array must contain at least 1 element(s)']);
    expect(messageAt(await invalid(document({ rules: [rule({ subject: { type: 'agents', agentIds: ['nope'] } })] })), ['rules', 0, 'subject', 'agentIds', 0])).toEqual(['Invalid uuid']);
    const id = randomUUID();
    expect(messageAt(await invalid(document({ rules: [rule({ subject: { type: 'agents', agentIds: [id, id.toUpperCase()] } })] })), ['rules', 0, 'subject', 'agentIds', 1])).toEqual(['Values must be unique']);
    const ids = Array.from({ length: 501 }, () => randomUUID());
    expect(messageAt(await invalid(document({ rules: [rule({ subject: { type: 'agents', agentIds: ids } })] })), ['rules', 0, 'subject', 'agentIds'])).toEqual(['Array must contain at most 500 element(s)']);
    expect(messageAt(await invalid(document({ rules: [rule({ subject: { type: 'roles', roles: [] } })] })), ['rules', 0, 'subject', 'roles'])).toEqual(['Array must contain at least 1 element(s)']);
    expect(messageAt(await invalid(document({ rules: [rule({ subject: { type: 'roles', roles: ['cto', ' cto '] } })] })), ['rules', 0, 'subject', 'roles', 1])).toEqual(['Values must be unique']);
    expect(messageAt(await invalid(document({ rules: [rule({ subject: { type: 'roles', roles: ['  '] } })] })), ['rules', 0, 'subject', 'roles', 0])).toEqual(['String must contain at least 1 character(s)']);
    const roles = Array.from({ length: 501 }, (_, i) => `role-${i}`);
    expect(messageAt(await invalid(document({ rules: [rule({ subject: { type: 'roles', roles } })] })), ['rules', 0, 'subject', 'roles'])).toEqual(['Array must contain at most 500 element(s)']);
    const company = await createCompany(t.api);
    const ok = await t.api.put(policyPath(company.id), document({ rules: [rule({ subject: { type: 'agents', agentIds: ids.slice(0, 500) } }), rule({ id: 'r2', subject: { type: 'roles', roles: roles.slice(0, 500) } })] }));
    expect(ok.status, ok.text.slice(0, 300)).toBe(200);
  });

  it('resource selectors: at least one key, unknown keys rejected, each list within its limits', async () => {
    expect(messageAt(await invalid(document({ rules: [rule({ resources: {} })] })), ['rules', 0, 'resources'])).toEqual(['At least one resource selector is required']);
    expect(messageAt(await invalid(document({ rules: [rule({ resources: [] })] })), ['rules', 0, 'resources'])).toEqual(['Expected object']);
    expect(messageAt(await invalid(document({ rules: [rule({ resources: { skillIds: ['x'] } })] })), ['rules', 0, 'resources', 'skillIds', 0])).toEqual(['Invalid uuid']);
    expect(messageAt(await invalid(document({ rules: [rule({ resources: { skillIds: [] } })] })), ['rules', 0, 'resources', 'skillIds'])).toEqual(['Array must contain at least 1 element(s)']);
    expect(messageAt(await invalid(document({ rules: [rule({ resources: { skillKeys: ['a'.repeat(513)] } })] })), ['rules', 0, 'resources', 'skillKeys', 0])).toEqual(['String must contain at most 512 character(s)']);
    expect(messageAt(await invalid(document({ rules: [rule({ resources: { skillKeys: [''] } })] })), ['rules', 0, 'resources', 'skillKeys', 0])).toEqual(['String must contain at least 1 character(s)']);
    expect(messageAt(await invalid(document({ rules: [rule({ resources: { skillKeys: ['a', 'a'] } })] })), ['rules', 0, 'resources', 'skillKeys', 1])).toEqual(['Values must be unique']);
    const keys = Array.from({ length: 501 }, (_, i) => `key-${i}`);
    expect(messageAt(await invalid(document({ rules: [rule({ resources: { skillKeys: keys } })] })), ['rules', 0, 'resources', 'skillKeys'])).toEqual(['Array must contain at most 500 element(s)']);
    expect(messageAt(await invalid(document({ rules: [rule({ resources: { sourceTypes: ['ftp'] } })] })), ['rules', 0, 'resources', 'sourceTypes', 0])).toHaveLength(1);
    expect(messageAt(await invalid(document({ rules: [rule({ resources: { sourceTypes: ['git', 'git'] } })] })), ['rules', 0, 'resources', 'sourceTypes', 1])).toEqual(['Source types must be unique']);
    expect(messageAt(await invalid(document({ rules: [rule({ resources: { sourceLocators: ['x'.repeat(2049)] } })] })), ['rules', 0, 'resources', 'sourceLocators', 0])).toEqual(['String must contain at most 2048 character(s)']);
    expect(messageAt(await invalid(document({ rules: [rule({ resources: { sourceLocators: [] } })] })), ['rules', 0, 'resources', 'sourceLocators'])).toEqual(['Array must contain at least 1 element(s)']);
    const locators = Array.from({ length: 501 }, (_, i) => `https://github.com/acme/repo-${i}`);
    expect(messageAt(await invalid(document({ rules: [rule({ resources: { sourceLocators: locators } })] })), ['rules', 0, 'resources', 'sourceLocators'])).toEqual(['Array must contain at most 500 element(s)']);
    const company = await createCompany(t.api);
    const ok = await t.api.put(policyPath(company.id), document({ rules: [rule({ resources: {
      skillIds: [randomUUID()], skillKeys: ['a'.repeat(512), ...keys.slice(0, 499)], sourceTypes: ['workspace', 'catalog', 'git', 'external_package', 'generated', 'unknown'],
      sourceLocators: [`https://example.com/${'x'.repeat(2048 - 20)}`, ...locators.slice(0, 499)],
    } })] }));
    expect(ok.status, ok.text.slice(0, 300)).toBe(200);
  });

  it('reports every issue of a document at once', async () => {
    const issues = await invalid(document({ schemaVersion: 2, defaultEffect: 'x', rules: [rule({ id: '' }), rule({ priority: 2_000_000 })] }));
    expect(issues.map((issue) => JSON.stringify(issue.path)).sort()).toEqual(['["defaultEffect"]', '["rules",0,"id"]', '["rules",1,"priority"]', '["schemaVersion"]']);
  });
});
