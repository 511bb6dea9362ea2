import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type Api, type TestKernel } from '../../support/harness.ts';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { installAndEnable } from '../../support/plugins.ts';
import { evaluatePath, grant, policyPath, putPolicy, rule } from './helpers.ts';

const CONSUMER = fileURLToPath(new URL('./fixtures/decide-consumer', import.meta.url));
const REMEDIATION = 'Contact a company administrator to change the skill policy.';
const CREDENTIALS = 'Source locators must not contain credentials or secret query or fragment parameters';

let t: TestKernel;
beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  await installAndEnable(t, CONSUMER);
});
afterAll(async () => { await t?.stop(); });

/** A company with an engineer agent (and its key) and a manager agent. */
async function world() {
  const company = await createCompany(t.api);
  const engineer = await createAgent(t.api, company.id, { role: 'engineer' });
  const manager = await createAgent(t.api, company.id, { role: 'manager' });
  return { company, engineer, manager, asEngineer: t.api.as(await createAgentKey(t.api, engineer.id)), asManager: t.api.as(await createAgentKey(t.api, manager.id)) };
}

async function evaluate(api: Api, companyId: string, body: Record<string, unknown>): Promise<any> {
  const res = await api.post(evaluatePath(companyId), body);
  expect(res.status, res.text).toBe(200);
  // The decide service answers the same for the same caller.
  const service = await api.post(`/api/plugins/decide-consumer/companies/${companyId}/decide`, { action: body.action, ...(body.resource ? { resource: body.resource } : {}) });
  if (!body.principal) expect(service.body, service.text).toEqual(res.body);
  return res.body;
}

describe('the decision procedure', () => {
  it('no stored policy: allowed, no_policy_default, revision 0', async () => {
    const { company, asEngineer } = await world();
    expect(await evaluate(asEngineer, company.id, { action: 'skills.import' })).toEqual({
      allowed: true, action: 'skills.import', reason: 'no_policy_default', policyRevision: 0, matchedRuleId: null, remediation: null,
    });
    expect((await evaluate(t.api, company.id, { action: 'skills.remove', resource: {} })).reason).toBe('no_policy_default');
  });

  it('no rule matches: the default effect decides (policy_default), with remediation when denied', async () => {
    const { company, asEngineer } = await world();
    await putPolicy(t.api, company.id, { defaultEffect: 'allow', rules: [rule({ actions: ['skills.remove'] })] });
    expect(await evaluate(asEngineer, company.id, { action: 'skills.import' })).toEqual({
      allowed: true, action: 'skills.import', reason: 'policy_default', policyRevision: 1, matchedRuleId: null, remediation: null,
    });
    await putPolicy(t.api, company.id, { defaultEffect: 'deny', rules: [] });
    expect(await evaluate(asEngineer, company.id, { action: 'skills.import' })).toEqual({
      allowed: false, action: 'skills.import', reason: 'policy_default', policyRevision: 2, matchedRuleId: null, remediation: REMEDIATION,
    });
  });

  it('the first matching rule decides, by priority ascending then id; rules of other actions are skipped', async () => {
    const { company, asEngineer } = await world();
    await putPolicy(t.api, company.id, { rules: [
      rule({ id: 'b-allow', priority: 5, effect: 'allow' }),
      rule({ id: 'a-deny', priority: 5, effect: 'deny' }),
      rule({ id: 'late-allow', priority: 6, effect: 'allow' }),
      rule({ id: 'first-other-action', priority: -10, effect: 'allow', actions: ['skills.create'] }),
    ] });
    expect(await evaluate(asEngineer, company.id, { action: 'skills.import' })).toEqual({
      allowed: false, action: 'skills.import', reason: 'explicit_rule', policyRevision: 1, matchedRuleId: 'a-deny', remediation: REMEDIATION,
    });
    expect(await evaluate(asEngineer, company.id, { action: 'skills.create' })).toMatchObject({ allowed: true, reason: 'explicit_rule', matchedRuleId: 'first-other-action', remediation: null });
    await putPolicy(t.api, company.id, { rules: [rule({ id: 'z', priority: -1, effect: 'allow' }), rule({ id: 'a', priority: 0 })] });
    expect((await evaluate(asEngineer, company.id, { action: 'skills.import' })).matchedRuleId).toBe('z');
  });

  it('ties are broken by id in code-unit order (uppercase before lowercase, digits first)', async () => {
    const { company, asEngineer } = await world();
    await putPolicy(t.api, company.id, { rules: [rule({ id: 'b' }), rule({ id: 'B' }), rule({ id: 'a' })] });
    expect((await evaluate(asEngineer, company.id, { action: 'skills.import' })).matchedRuleId).toBe('B');
    await putPolicy(t.api, company.id, { rules: [rule({ id: 'rule-10' }), rule({ id: 'rule-9' }), rule({ id: 'rule-1' })] });
    expect((await evaluate(asEngineer, company.id, { action: 'skills.import' })).matchedRuleId).toBe('rule-1');
  });

  it('subjects: all_agents and agents match agent principals only; roles compare trimmed and case-insensitively; the board has role board', async () => {
    const { company, engineer, asEngineer, asManager } = await world();
    await putPolicy(t.api, company.id, { defaultEffect: 'allow', rules: [
      rule({ id: 'agents', priority: 1, subject: { type: 'agents', agentIds: [engineer.id.toUpperCase()] }, actions: ['skills.create'] }),
      rule({ id: 'all', priority: 1, subject: { type: 'all_agents' }, actions: ['skills.edit'] }),
      rule({ id: 'roles', priority: 1, subject: { type: 'roles', roles: ['  MANAGER ', 'Board'] }, actions: ['skills.remove'] }),
    ] });
    expect((await evaluate(asEngineer, company.id, { action: 'skills.create' })).matchedRuleId).toBe('agents');
    expect((await evaluate(asManager, company.id, { action: 'skills.create' })).reason).toBe('policy_default');
    expect((await evaluate(t.api, company.id, { action: 'skills.create' })).reason).toBe('policy_default');
    expect((await evaluate(asManager, company.id, { action: 'skills.edit' })).matchedRuleId).toBe('all');
    expect((await evaluate(t.api, company.id, { action: 'skills.edit' })).reason).toBe('policy_default');
    expect((await evaluate(asManager, company.id, { action: 'skills.remove' })).matchedRuleId).toBe('roles');
    expect((await evaluate(t.api, company.id, { action: 'skills.remove' })).matchedRuleId).toBe('roles');
    expect((await evaluate(asEngineer, company.id, { action: 'skills.remove' })).reason).toBe('policy_default');
    // An agent's role is read at decision time.
    expect((await t.api.patch(`/api/agents/${engineer.id}`, { role: 'Manager' })).status).toBe(200);
    expect((await evaluate(asEngineer, company.id, { action: 'skills.remove' })).matchedRuleId).toBe('roles');
  });

  it('resources: every listed selector must match; a skillKeys rule never matches an evaluation without a skillKey', async () => {
    const { company, asEngineer } = await world();
    const skillId = randomUUID();
    await putPolicy(t.api, company.id, { defaultEffect: 'allow', rules: [
      rule({ id: 'keys', priority: 1, resources: { skillKeys: ['acme/tools/review'] } }),
      rule({ id: 'both', priority: 2, resources: { sourceTypes: ['git'], sourceLocators: ['https://github.com/acme/tools'] } }),
      rule({ id: 'ids', priority: 3, resources: { skillIds: [skillId.toUpperCase()] } }),
      rule({ id: 'types', priority: 4, resources: { sourceTypes: ['catalog', 'generated'] } }),
    ] });
    const decided = async (resource: Record<string, unknown>) => (await evaluate(asEngineer, company.id, { action: 'skills.import', resource })).matchedRuleId;
    expect(await decided({})).toBe(null);
    expect(await decided({ skillKey: 'acme/tools/review' })).toBe('keys');
    expect(await decided({ skillKey: '  acme/tools/review  ' })).toBe('keys');
    expect(await decided({ skillKey: 'ACME/tools/review' })).toBe(null);
    expect(await decided({ sourceType: 'git' })).toBe(null);
    expect(await decided({ sourceLocator: 'https://github.com/acme/tools' })).toBe(null);
    expect(await decided({ sourceType: 'git', sourceLocator: 'https://github.com/acme/tools' })).toBe('both');
    expect(await decided({ sourceType: 'workspace', sourceLocator: 'https://github.com/acme/tools' })).toBe(null);
    expect(await decided({ skillId })).toBe('ids');
    expect(await decided({ skillId: randomUUID() })).toBe(null);
    expect(await decided({ sourceType: 'generated' })).toBe('types');
    expect(await decided({ sourceType: 'unknown' })).toBe(null);
  });

  it('legacy_compatibility: under default deny, a skills:create or skills:suggest-changes grant allows when no rule matched', async () => {
    const { company, engineer, manager, asEngineer, asManager } = await world();
    const other = await createAgent(t.api, company.id, { role: 'designer' });
    const asOther = t.api.as(await createAgentKey(t.api, other.id));
    await grant(t, company.id, 'agent', engineer.id, 'skills:create');
    await grant(t, company.id, 'agent', manager.id, 'skills:suggest-changes', { projectIds: [randomUUID()] });
    await putPolicy(t.api, company.id, { defaultEffect: 'deny', rules: [rule({ id: 'no-removal', actions: ['skills.remove'] })] });
    expect(await evaluate(asEngineer, company.id, { action: 'skills.import' })).toEqual({
      allowed: true, action: 'skills.import', reason: 'legacy_compatibility', policyRevision: 1, matchedRuleId: null, remediation: null,
    });
    expect((await evaluate(asManager, company.id, { action: 'skills.import' })).reason).toBe('legacy_compatibility');
    expect(await evaluate(asOther, company.id, { action: 'skills.import' })).toMatchObject({ allowed: false, reason: 'policy_default' });
    // Explicit rules come first.
    expect(await evaluate(asEngineer, company.id, { action: 'skills.remove' })).toMatchObject({ allowed: false, reason: 'explicit_rule', matchedRuleId: 'no-removal' });
    // Under default allow the grant plays no part.
    await putPolicy(t.api, company.id, { defaultEffect: 'allow' });
    expect((await evaluate(asEngineer, company.id, { action: 'skills.import' })).reason).toBe('policy_default');
    // Without a policy neither.
    await t.api.delete(policyPath(company.id));
    expect((await evaluate(asEngineer, company.id, { action: 'skills.import' })).reason).toBe('no_policy_default');
  });

  it('decides by the current document after every replace and reset', async () => {
    const { company, asEngineer } = await world();
    await putPolicy(t.api, company.id, { rules: [rule({ id: 'one' })] });
    expect((await evaluate(asEngineer, company.id, { action: 'skills.import' })).matchedRuleId).toBe('one');
    await t.api.delete(policyPath(company.id));
    await putPolicy(t.api, company.id, { rules: [rule({ id: 'two' })] });
    // Revision 1 again, another document.
    expect(await evaluate(asEngineer, company.id, { action: 'skills.import' })).toMatchObject({ policyRevision: 1, matchedRuleId: 'two' });
  });
});

describe('source locators', () => {
  it('are canonicalised when stored', async () => {
    const { company } = await world();
    const stored = await putPolicy(t.api, company.id, { rules: [rule({ resources: { sourceLocators: [
      'https://www.GitHub.com/Acme/Tools.git',
      '  https://GITHUB.com/Acme/Other/tree/Main/Skills/Review  ',
      'https://Raw.GitHubUserContent.com/Acme/Tools/main/SKILL.md',
      'https://Example.com/Owner/Repo.git',
      'acme/tools',
      'https://github.com/Acme/Tools/blob/main/SKILL.md',
    ] } })] });
    expect(stored.rules[0].resources.sourceLocators).toEqual([
      'https://github.com/acme/tools',
      'https://github.com/acme/other/tree/Main/Skills/Review',
      'https://raw.githubusercontent.com/Acme/Tools/main/SKILL.md',
      'https://example.com/owner/repo',
      'acme/tools',
      'https://github.com/Acme/Tools/blob/main/SKILL.md',
    ]);
    expect((await t.api.get(policyPath(company.id))).body.rules[0].resources.sourceLocators[0]).toBe('https://github.com/acme/tools');
  });

  it('two spellings of one repository are one locator', async () => {
    const { company } = await world();
    const res = await t.api.put(policyPath(company.id), { schemaVersion: 1, defaultEffect: 'allow', expectedRevision: 0, rules: [rule({ resources: { sourceLocators: ['https://github.com/acme/tools', 'https://www.github.com/ACME/tools.git'] } })] });
    expect(res.status).toBe(422);
    expect(res.body.details.issues).toEqual([expect.objectContaining({ path: ['rules', 0, 'resources', 'sourceLocators', 1], message: 'Source locators must be unique' })]);
  });

  it('match whichever spelling the rule and the evaluation use', async () => {
    const { company, asEngineer } = await world();
    await putPolicy(t.api, company.id, { rules: [
      rule({ id: 'stored-odd', resources: { sourceLocators: ['https://www.GitHub.com/Acme/Tools.git'] } }),
      rule({ id: 'stored-plain', priority: 1, resources: { sourceLocators: ['https://github.com/beta/kit'] } }),
    ] });
    const matched = async (sourceLocator: string) => (await evaluate(asEngineer, company.id, { action: 'skills.import', resource: { sourceLocator } })).matchedRuleId;
    expect(await matched('https://github.com/acme/tools')).toBe('stored-odd');
    expect(await matched('https://GitHub.com/ACME/TOOLS.git')).toBe('stored-odd');
    expect(await matched('https://www.github.com/Beta/Kit.git')).toBe('stored-plain');
    expect(await matched('https://github.com/beta/kit2')).toBe(null);
    expect(await matched('https://github.com/acme/tools/tree/main')).toBe(null);
  });

  it('with credentials are refused, stored or evaluated, with the message and without echoing the secret', async () => {
    const { company, asEngineer } = await world();
    const secretLocators = [
      'https://user:hunter2@github.com/acme/tools',
      'https://deploy@github.com/acme/tools',
      'https://example.com/skill?token=do-not-store',
      'https://example.com/skill?x=1&access_token=do-not-store',
      'https://example.com/skill?API_KEY=do-not-store',
      'https://example.com/skill?api-key=do-not-store',
      'https://example.com/skill?Authorization=do-not-store',
      'https://example.com/skill?client_secret=do-not-store',
      'https://example.com/skill?password=do-not-store',
      'https://example.com/skill#token=do-not-store',
      'https://example.com/skill#a=1&secret=do-not-store',
      'git+https://bot:do-not-store@example.com/repo.git',
    ];
    for (const locator of secretLocators) {
      const put = await t.api.put(policyPath(company.id), { schemaVersion: 1, defaultEffect: 'allow', expectedRevision: 0, rules: [rule({ resources: { sourceLocators: [locator] } })] });
      expect(put.status, locator).toBe(422);
      expect(put.body.code).toBe('skill_policy_validation_failed');
      expect(put.body.details.issues, locator).toEqual([expect.objectContaining({ path: ['rules', 0, 'resources', 'sourceLocators', 0], message: CREDENTIALS })]);
      expect(put.text).not.toContain('do-not-store');
      expect(put.text).not.toContain('hunter2');
      const evaluated = await asEngineer.post(evaluatePath(company.id), { action: 'skills.import', resource: { sourceLocator: locator } });
      expect(evaluated.status, locator).toBe(422);
      expect(evaluated.body.details.issues).toEqual([expect.objectContaining({ path: ['resource', 'sourceLocator'], message: CREDENTIALS })]);
    }
    expect((await t.api.get(policyPath(company.id))).body.materialized).toBe(false);
    // Names that merely contain no secret word pass.
    const fine = await putPolicy(t.api, company.id, { rules: [rule({ resources: { sourceLocators: ['https://example.com/skill?ref=main', 'https://example.com/skill#readme', 'owner/repo'] } })] });
    expect(fine.rules[0].resources.sourceLocators).toEqual(['https://example.com/skill?ref=main', 'https://example.com/skill#readme', 'owner/repo']);
  });
});

describe('POST evaluate: the request', () => {
  it('422 skill_policy_validation_failed for an unknown action, unknown fields or a bad resource', async () => {
    const { company, asEngineer } = await world();
    const refused = async (body: unknown, path: Array<string | number>) => {
      const res = await asEngineer.post(evaluatePath(company.id), body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body).toMatchObject({ error: 'Invalid skill policy document', code: 'skill_policy_validation_failed' });
      expect(res.body.details.issues.map((issue: any) => issue.path)).toContainEqual(path);
    };
    await refused({ action: 'skills.publish', resource: {} }, ['action']);
    await refused({}, ['action']);
    await refused({ action: 'skills.import', extra: true }, []);
    await refused({ action: 'skills.import', resource: { skillKey: 'a', owner: 'x' } }, ['resource']);
    await refused({ action: 'skills.import', resource: [] }, ['resource']);
    await refused({ action: 'skills.import', resource: { skillId: 'nope' } }, ['resource', 'skillId']);
    await refused({ action: 'skills.import', resource: { skillKey: '' } }, ['resource', 'skillKey']);
    await refused({ action: 'skills.import', resource: { skillKey: 'k'.repeat(513) } }, ['resource', 'skillKey']);
    await refused({ action: 'skills.import', resource: { sourceType: 'ftp' } }, ['resource', 'sourceType']);
    await refused({ action: 'skills.import', resource: { sourceLocator: 'x'.repeat(2049) } }, ['resource', 'sourceLocator']);
    await refused({ action: 'skills.import', principal: {} }, ['principal', 'agentId']);
    await refused({ action: 'skills.import', principal: { agentId: 'nope' } }, ['principal', 'agentId']);
    await refused({ action: 'skills.import', principal: { agentId: randomUUID(), role: 'x' } }, ['principal']);
  });

  it('principal.agentId evaluates as that agent (policy admin); 404 when unknown, 403 skill_company_boundary_denied for another company\'s agent', async () => {
    const { company, engineer, manager } = await world();
    await putPolicy(t.api, company.id, { rules: [rule({ id: 'managers', subject: { type: 'roles', roles: ['manager'] } })] });
    expect(await evaluate(t.api, company.id, { action: 'skills.import', principal: { agentId: manager.id } })).toMatchObject({ allowed: false, matchedRuleId: 'managers' });
    expect(await evaluate(t.api, company.id, { action: 'skills.import', principal: { agentId: engineer.id.toUpperCase() } })).toMatchObject({ allowed: true, reason: 'policy_default' });
    const unknown = await t.api.post(evaluatePath(company.id), { action: 'skills.import', principal: { agentId: randomUUID() } });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: 'Agent not found' });
    const elsewhere = await world();
    const foreign = await t.api.post(evaluatePath(company.id), { action: 'skills.import', principal: { agentId: elsewhere.engineer.id } });
    expect(foreign.status).toBe(403);
    expect(foreign.body).toMatchObject({ code: 'skill_company_boundary_denied' });
  });
});
