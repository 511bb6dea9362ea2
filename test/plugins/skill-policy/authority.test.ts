import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type Api, type TestKernel } from '../../support/harness.ts';
import { addMember, boardToken, createAgent, createAgentKey, createCompany, insertUser } from '../../support/fixtures.ts';
import { activities, document, evaluatePath, grant, policyPath, putPolicy, rule, storedRows } from './helpers.ts';

/** Authenticated mode: callers are who their credentials say, and anonymous callers exist. */
let t: TestKernel;
let admin: Api;
beforeAll(async () => {
  t = await startTestKernel({ deploymentMode: 'authenticated' }, { firstPartyDir: FIRST_PARTY_PLUGINS });
  admin = t.api.as(await boardToken(t, await insertUser(t, { admin: true })));
});
afterAll(async () => { await t?.stop(); });

async function memberOf(companyId: string): Promise<{ userId: string; api: Api }> {
  const userId = await insertUser(t);
  await addMember(t, companyId, userId, 'owner');
  return { userId, api: t.api.as(await boardToken(t, userId)) };
}

async function agentOf(companyId: string, role = 'engineer'): Promise<{ agent: any; api: Api }> {
  const agent = await createAgent(admin, companyId, { role });
  return { agent, api: t.api.as(await createAgentKey(admin, agent.id)) };
}

const ADMIN_REQUIRED = {
  error: 'Skill policy administration authority required',
  code: 'skill_policy_admin_required',
  details: { remediation: 'Ask a company administrator to manage the skill policy.' },
};

/** The four routes, each with a body it would accept. */
const calls = (companyId: string): Array<[string, (api: Api) => ReturnType<Api['get']>]> => [
  ['GET', (api) => api.get(policyPath(companyId))],
  ['PUT', (api) => api.put(policyPath(companyId), document())],
  ['DELETE', (api) => api.delete(policyPath(companyId))],
  ['POST evaluate', (api) => api.post(evaluatePath(companyId), { action: 'skills.import' })],
];

describe('who may call the skill policy routes', () => {
  it('401 skill_authentication_required for an unauthenticated caller, on every route', async () => {
    const company = await createCompany(admin);
    for (const [name, call] of calls(company.id)) {
      const res = await call(t.api);
      expect(res.status, name).toBe(401);
      expect(res.body, name).toEqual({ error: 'Authentication required', code: 'skill_authentication_required' });
    }
    // An unknown or malformed company does not change the answer.
    expect((await t.api.get(policyPath(randomUUID()))).body.code).toBe('skill_authentication_required');
    expect((await t.api.as('svc_board_not-a-real-key').get(policyPath(company.id))).body.code).toBe('skill_authentication_required');
  });

  it('403 skill_company_boundary_denied for an agent key of another company, on every route; nothing written', async () => {
    const company = await createCompany(admin);
    const elsewhere = await createCompany(admin);
    const { api } = await agentOf(elsewhere.id);
    await grant(t, elsewhere.id, 'agent', (await agentOf(elsewhere.id)).agent.id, 'users:manage_permissions');
    for (const [name, call] of calls(company.id)) {
      const res = await call(api);
      expect(res.status, name).toBe(403);
      expect(res.body, name).toEqual({ error: 'Agent key cannot access another company', code: 'skill_company_boundary_denied' });
    }
    expect(await storedRows(t, company.id)).toEqual([]);
  });

  it('403 for a board user who is not a member of the company', async () => {
    const company = await createCompany(admin);
    const outsider = t.api.as(await boardToken(t, await insertUser(t)));
    for (const [name, call] of calls(company.id)) expect((await call(outsider)).status, name).toBe(403);
  });

  it('company access reads the policy and evaluates for oneself; changes need authority (403 skill_policy_admin_required, nothing written)', async () => {
    const company = await createCompany(admin);
    await putPolicy(admin, company.id, { rules: [rule({ id: 'boards', subject: { type: 'roles', roles: ['board'] }, actions: ['skills.edit'] })] });
    const member = await memberOf(company.id);
    const { agent, api: agentApi } = await agentOf(company.id);
    for (const api of [member.api, agentApi]) {
      expect((await api.get(policyPath(company.id))).body).toMatchObject({ revision: 1, materialized: true });
      expect((await api.post(evaluatePath(company.id), { action: 'skills.import' })).status).toBe(200);
      for (const res of [
        await api.put(policyPath(company.id), document({ expectedRevision: 1 })),
        await api.delete(policyPath(company.id)),
        await api.post(evaluatePath(company.id), { action: 'skills.import', principal: { agentId: agent.id } }),
      ]) {
        expect(res.status).toBe(403);
        expect(res.body).toEqual(ADMIN_REQUIRED);
      }
    }
    expect((await member.api.post(evaluatePath(company.id), { action: 'skills.edit' })).body).toMatchObject({ allowed: false, matchedRuleId: 'boards' });
    expect((await agentApi.post(evaluatePath(company.id), { action: 'skills.edit' })).body).toMatchObject({ allowed: true, reason: 'policy_default' });
    expect((await admin.get(policyPath(company.id))).body.revision).toBe(1);
    expect(await activities(t, company.id, 'company.skill_policy_reset')).toEqual([]);
    expect(await activities(t, company.id, 'company.skill_policy_replaced')).toHaveLength(1);
  });

  it('authority: a board user or an agent holding users:manage_permissions company-wide in the company', async () => {
    const company = await createCompany(admin);
    const member = await memberOf(company.id);
    const { agent, api: agentApi } = await agentOf(company.id);
    const target = await agentOf(company.id, 'designer');
    await grant(t, company.id, 'user', member.userId, 'users:manage_permissions');
    await grant(t, company.id, 'agent', agent.id, 'users:manage_permissions');
    expect((await member.api.put(policyPath(company.id), document())).body.revision).toBe(1);
    expect((await agentApi.put(policyPath(company.id), document({ expectedRevision: 1 }))).body.revision).toBe(2);
    const asTarget = await agentApi.post(evaluatePath(company.id), { action: 'skills.import', principal: { agentId: target.agent.id } });
    expect(asTarget.status, asTarget.text).toBe(200);
    expect((await member.api.delete(policyPath(company.id))).body.materialized).toBe(false);
    const entries = await activities(t, company.id, 'company.skill_policy_replaced');
    expect(entries.map((entry) => [entry.actor_type, entry.actor_id])).toEqual([['user', member.userId], ['agent', agent.id]]);
    const [reset] = await activities(t, company.id, 'company.skill_policy_reset');
    expect([reset.actor_type, reset.actor_id]).toEqual(['user', member.userId]);
  });

  it('no authority from a scoped grant, another company\'s grant, another key or a role', async () => {
    const company = await createCompany(admin);
    const elsewhere = await createCompany(admin);
    const scoped = await memberOf(company.id);
    await grant(t, company.id, 'user', scoped.userId, 'users:manage_permissions', { projectIds: [randomUUID()] });
    const foreignGrant = await memberOf(company.id);
    await addMember(t, elsewhere.id, foreignGrant.userId, 'owner');
    await grant(t, elsewhere.id, 'user', foreignGrant.userId, 'users:manage_permissions');
    const otherKey = await memberOf(company.id);
    await grant(t, company.id, 'user', otherKey.userId, 'users:invite');
    const ceo = await agentOf(company.id, 'ceo');
    for (const api of [scoped.api, foreignGrant.api, otherKey.api, ceo.api]) {
      const res = await api.put(policyPath(company.id), document());
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('skill_policy_admin_required');
    }
    expect(await storedRows(t, company.id)).toEqual([]);
  });

  it('instance admins and the local board\'s keys hold authority without membership', async () => {
    const company = await createCompany(admin);
    expect((await admin.put(policyPath(company.id), document())).status).toBe(200);
    const localBoard = t.api.as(await boardToken(t, null));
    expect((await localBoard.put(policyPath(company.id), document({ expectedRevision: 1 }))).body.revision).toBe(2);
  });

  it('a board user holding a legacy skill grant is allowed under default deny (legacy_compatibility)', async () => {
    const company = await createCompany(admin);
    const member = await memberOf(company.id);
    const plain = await memberOf(company.id);
    await grant(t, company.id, 'user', member.userId, 'skills:suggest-changes');
    await putPolicy(admin, company.id, { defaultEffect: 'deny' });
    expect((await member.api.post(evaluatePath(company.id), { action: 'skills.install' })).body).toMatchObject({ allowed: true, reason: 'legacy_compatibility' });
    expect((await plain.api.post(evaluatePath(company.id), { action: 'skills.install' })).body).toMatchObject({ allowed: false, reason: 'policy_default' });
  });
});
