import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { addMember, agentWithKey, createAgent, expectUnchanged, insertCompany, insertUser, memberToken } from './agents-fixtures.ts';

let t: TestKernel;
let companyId: string;
let otherCompanyId: string;
let agent: any;
let peer: any;

beforeAll(async () => {
  t = await startTestKernel();
  companyId = await insertCompany(t);
  otherCompanyId = await insertCompany(t);
  agent = await createAgent(t, companyId);
  peer = await createAgent(t, companyId);
});
afterAll(async () => { await t?.stop(); });

const grantsPath = (id = companyId) => `/api/companies/${id}/permission-grants`;

describe('permission grants', () => {
  it('upserts a grant (201, then 200), lists and filters it, and records activity', async () => {
    const created = await t.api.put(grantsPath(), { principalType: 'agent', principalId: agent.id, permissionKey: 'agents:create' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ companyId, principalType: 'agent', principalId: agent.id, permissionKey: 'agents:create', scope: null, grantedByUserId: 'local-board' });

    const scoped = { projectIds: [randomUUID()], allow: [`agent:${peer.id}`, `subtree:${agent.id}`] };
    const updated = await t.api.put(grantsPath(), { principalType: 'agent', principalId: agent.id, permissionKey: 'agents:create', scope: scoped });
    expect(updated.status).toBe(200);
    expect(updated.body.id).toBe(created.body.id);
    expect(updated.body.scope).toEqual(scoped);

    await t.api.put(grantsPath(), { principalType: 'agent', principalId: peer.id, permissionKey: 'tasks:assign' });
    const all = await t.api.get(grantsPath());
    expect(all.status).toBe(200);
    expect(all.body).toHaveLength(2);
    const filtered = await t.api.get(`${grantsPath()}?principalType=agent&principalId=${peer.id}`);
    expect(filtered.body.map((g: any) => g.permissionKey)).toEqual(['tasks:assign']);

    const log = await t.sql.query("select action from activity_log where entity_id = $1 order by seq", [created.body.id]);
    expect(log.rows.map((r) => r.action)).toEqual(['permission_grant.upserted', 'permission_grant.upserted']);
    // The grant takes effect: the agent now reads peers' configuration.
    expect((await t.api.get(`/api/agents/${agent.id}`)).body.access.grants.map((g: any) => g.permissionKey)).toEqual(['agents:create']);
  });

  it('validates keys, principals and scopes without changing anything', async () => {
    const cases: Array<[Record<string, unknown>, number, RegExp]> = [
      [{ principalType: 'agent', principalId: agent.id, permissionKey: 'agents:destroy' }, 400, /permissionKey must be one of/],
      [{ principalType: 'robot', principalId: agent.id, permissionKey: 'tasks:assign' }, 400, /principalType/],
      [{ principalType: 'agent', permissionKey: 'tasks:assign' }, 400, /principalId is required/],
      [{ principalType: 'agent', principalId: agent.id, permissionKey: 'tasks:assign_scope' }, 422, /tasks:assign_scope requires a non-empty scope/],
      [{ principalType: 'agent', principalId: agent.id, permissionKey: 'tasks:assign_scope', scope: {} }, 422, /requires a non-empty scope/],
      [{ principalType: 'agent', principalId: agent.id, permissionKey: 'tasks:assign', scope: { projectId: 'p1' } }, 422, /scope\.projectId must be a uuid/],
      [{ principalType: 'agent', principalId: agent.id, permissionKey: 'tasks:assign', scope: { agentIds: [] } }, 422, /scope\.agentIds must be a non-empty array of uuids/],
      [{ principalType: 'agent', principalId: agent.id, permissionKey: 'tasks:assign', scope: { allow: ['team:x'] } }, 422, /project:<id>, agent:<id> or subtree:<id>/],
      [{ principalType: 'agent', principalId: agent.id, permissionKey: 'tasks:assign', scope: { projetId: randomUUID() } }, 422, /Unknown scope key 'projetId'/],
      [{ principalType: 'agent', principalId: agent.id, permissionKey: 'tasks:assign', scope: { agentId: randomUUID() } }, 422, /not an agent of this company/],
      [{ principalType: 'agent', principalId: randomUUID(), permissionKey: 'tasks:assign' }, 422, /does not name an agent of this company/],
      [{ principalType: 'user', principalId: randomUUID(), permissionKey: 'tasks:assign' }, 422, /does not name a member of this company/],
      [{ principalType: 'agent', principalId: agent.id, permissionKey: 'tasks:assign', scope: 'all' }, 400, /scope/],
    ];
    for (const [body, status, error] of cases) await expectUnchanged(t, () => t.api.put(grantsPath(), body), status, error);
    const foreign = await createAgent(t, otherCompanyId);
    await expectUnchanged(t, () => t.api.put(grantsPath(), { principalType: 'agent', principalId: foreign.id, permissionKey: 'tasks:assign' }), 422);
  });

  it('accepts tasks:assign_scope with a scope and grants for member users', async () => {
    const scoped = await t.api.put(grantsPath(), { principalType: 'agent', principalId: peer.id, permissionKey: 'tasks:assign_scope', scope: { managerAgentId: agent.id } });
    expect(scoped.status).toBe(201);
    const userId = await insertUser(t);
    await addMember(t, companyId, userId);
    const forUser = await t.api.put(grantsPath(), { principalType: 'user', principalId: userId, permissionKey: 'users:invite' });
    expect(forUser.status).toBe(201);
    expect(forUser.body.principalId).toBe(userId);
  });

  it('deletes a grant and answers 404 for unknown or foreign grants', async () => {
    const grant = (await t.api.put(grantsPath(), { principalType: 'agent', principalId: peer.id, permissionKey: 'joins:approve' })).body;
    const foreignAgent = await createAgent(t, otherCompanyId);
    const foreignGrant = (await t.api.put(grantsPath(otherCompanyId), { principalType: 'agent', principalId: foreignAgent.id, permissionKey: 'joins:approve' })).body;
    await expectUnchanged(t, () => t.api.delete(`${grantsPath()}/${foreignGrant.id}`), 404, 'Permission grant not found');
    await expectUnchanged(t, () => t.api.delete(`${grantsPath()}/${randomUUID()}`), 404, 'Permission grant not found');
    const res = await t.api.delete(`${grantsPath()}/${grant.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, id: grant.id });
    expect((await t.sql.query('select count(*)::int as n from permission_grants where id = $1', [grant.id])).rows[0].n).toBe(0);
    const log = await t.sql.query("select action from activity_log where entity_id = $1 order by seq", [grant.id]);
    expect(log.rows.map((r) => r.action)).toEqual(['permission_grant.upserted', 'permission_grant.deleted']);
  });

  it('lets owners and holders of users:manage_permissions change grants; plain members only read', async () => {
    const member = await memberToken(t, [companyId]);
    expect((await t.api.get(grantsPath(), { token: member.token })).status).toBe(200);
    const body = { principalType: 'agent', principalId: peer.id, permissionKey: 'environments:manage' };
    await expectUnchanged(t, () => t.api.put(grantsPath(), body, { token: member.token }), 403, /requires users:manage_permissions/);

    await t.sql.query("insert into permission_grants (company_id, principal_type, principal_id, permission_key) values ($1, 'user', $2, 'users:manage_permissions')", [companyId, member.userId]);
    expect((await t.api.put(grantsPath(), body, { token: member.token })).status).toBe(201);

    const owner = await memberToken(t, [companyId], 'owner');
    expect((await t.api.put(grantsPath(), { ...body, permissionKey: 'users:invite' }, { token: owner.token })).status).toBe(201);

    const outsider = await memberToken(t, [otherCompanyId], 'owner');
    await expectUnchanged(t, () => t.api.get(grantsPath(), { token: outsider.token }), 403);
    await expectUnchanged(t, () => t.api.put(grantsPath(), body, { token: outsider.token }), 403);
  });

  it('is closed to agents', async () => {
    const { token } = await agentWithKey(t, companyId, { role: 'ceo' });
    await expectUnchanged(t, () => t.api.get(grantsPath(), { token }), 403, 'Board access required');
    await expectUnchanged(t, () => t.api.put(grantsPath(), { principalType: 'agent', principalId: peer.id, permissionKey: 'tasks:assign' }, { token }), 403, 'Board access required');
  });
});
