import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestKernel } from '../../support/harness.ts';
import { startWorkWorld } from './artifact-helpers.ts';

/**
 * Resource memberships of projects the work plugin keeps: the kernel's membership routes find
 * them in the plugin's table (its declared `project` entity), in the company of the path only.
 */
let t: TestKernel;
let company: any;
let other: any;
beforeAll(async () => { ({ t, company, other } = await startWorkWorld('Members Co', 'Planner')); });
afterAll(async () => { await t?.stop(); });

const base = (companyId: string) => `/api/companies/${companyId}/resource-memberships/me`;

async function project(companyId: string, name: string): Promise<string> {
  const res = await t.api.post(`/api/companies/${companyId}/projects`, { name });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

async function written(): Promise<{ rows: string; activity: number }> {
  return {
    rows: JSON.stringify((await t.sql.query('select * from resource_memberships order by resource_id')).rows),
    activity: (await t.sql.query("select count(*)::int as n from activity_log where action like 'resource_membership.%'")).rows[0].n,
  };
}

describe('resource memberships of work plugin projects', () => {
  it('joins and leaves a project created through the work plugin, and lists it', async () => {
    const projectId = await project(company.id, 'Roadmap');
    const left = await t.api.put(`${base(company.id)}/projects/${projectId}`, { state: 'left' });
    expect(left.status, left.text).toBe(200);
    expect(left.body).toEqual({ resourceType: 'project', resourceId: projectId, state: 'left', updatedAt: expect.any(String) });
    expect((await t.api.get(base(company.id))).body).toEqual({ projectMemberships: { [projectId]: 'left' }, agentMemberships: {}, updatedAt: left.body.updatedAt });

    const joined = await t.api.put(`${base(company.id)}/projects/${projectId}`, { state: 'joined' });
    expect(joined.status).toBe(200);
    expect(joined.body).toMatchObject({ resourceType: 'project', resourceId: projectId, state: 'joined' });
    expect((await t.api.get(base(company.id))).body.projectMemberships).toEqual({ [projectId]: 'joined' });
    const actions = (await t.sql.query('select action, company_id from activity_log where entity_id = $1 and entity_type = $2 order by seq',
      [projectId, 'resource_membership'])).rows;
    expect(actions).toEqual([
      { action: 'resource_membership.left', company_id: company.id },
      { action: 'resource_membership.joined', company_id: company.id },
    ]);
  });

  it("answers 404 for another company's project and an unknown id, writing nothing", async () => {
    const theirs = await project(other.id, 'Their project');
    const before = await written();
    for (const [companyId, projectId] of [[company.id, theirs], [company.id, randomUUID()], [company.id, 'not-a-uuid']] as const) {
      const res = await t.api.put(`${base(companyId)}/projects/${projectId}`, { state: 'left' });
      expect(res.status, projectId).toBe(404);
      expect(res.body).toMatchObject({ error: 'Project not found', code: 'not_found' });
    }
    expect(await written()).toEqual(before);
    // In its own company the same project is found.
    expect((await t.api.put(`${base(other.id)}/projects/${theirs}`, { state: 'left' })).status).toBe(200);
  });
});
