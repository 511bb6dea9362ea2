import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { eventually, installWiki, WIKI } from './helpers.ts';

/**
 * The wiki's managed resources: the host makes the maintainer agent (wiki-maintainer, role
 * knowledge-maintainer) in every company when the wiki is enabled and in every company made
 * later, and the wiki then has the work plugin make its llm-wiki project, once per company.
 */
let t: TestKernel;
let before: any;
let namesake: any;

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  before = await createCompany(t.api);
  // A project of the board's with the wiki's project name: never taken for the managed one.
  const res = await t.api.post(`/api/companies/${before.id}/projects`, { name: 'LLM Wiki' });
  expect(res.status, res.text).toBe(201);
  namesake = res.body;
  await installWiki(t);
}, 120_000);
afterAll(async () => { await t?.stop(); });

const maintainers = async (companyId: string) => (await t.sql.query(
  'select id, name, role, status from agents where company_id = $1 and managed_by_plugin = $2 and managed_key = $3', [companyId, WIKI, 'wiki-maintainer'])).rows;
const wikiProjects = async (companyId: string) => (await t.sql.query(
  'select id, name from plugin_work.projects where company_id = $1 and managed_by_plugin = $2 and managed_key = $3', [companyId, WIKI, 'llm-wiki'])).rows;

describe('the wiki\'s managed resources', () => {
  it('makes the maintainer in a company that existed when the wiki was enabled, and then its project', async () => {
    expect(await maintainers(before.id)).toEqual([{ id: expect.any(String), name: 'Wiki Maintainer', role: 'knowledge-maintainer', status: 'idle' }]);
    const [project] = await eventually(() => wikiProjects(before.id), (rows) => rows.length > 0);
    expect(project.id).not.toBe(namesake.id);
    const view = await t.api.get(`/api/projects/${project.id}`);
    expect(view.status, view.text).toBe(200);
    expect(view.body).toMatchObject({ name: 'LLM Wiki', companyId: before.id, managedBy: { plugin: WIKI, key: 'llm-wiki' } });
    expect((await t.api.get(`/api/projects/${namesake.id}`)).body.managedBy).toBeNull();
  });

  it('makes both for a company created later, once each, and none in another company', async () => {
    const later = await createCompany(t.api);
    expect(await maintainers(later.id)).toHaveLength(1);
    const [project] = await eventually(() => wikiProjects(later.id), (rows) => rows.length > 0);
    expect((await t.api.get(`/api/projects/${project.id}`)).body.companyId).toBe(later.id);
    // Disabling and enabling again makes nothing twice.
    expect((await t.api.post(`/api/plugins/${WIKI}/disable`, {})).status).toBe(200);
    expect((await maintainers(later.id))[0].status).toBe('paused');
    expect((await t.api.post(`/api/plugins/${WIKI}/enable`, {})).status).toBe(200);
    expect((await maintainers(later.id))[0].status).toBe('idle');
    expect(await maintainers(later.id)).toHaveLength(1);
    expect(await wikiProjects(later.id)).toHaveLength(1);
    expect(await wikiProjects(before.id)).toHaveLength(1);
  });

  it('leaves the agent and the project in place when the wiki is uninstalled', async () => {
    const [agent] = await maintainers(before.id);
    const [project] = await wikiProjects(before.id);
    const res = await t.api.delete(`/api/plugins/${WIKI}`);
    expect([200, 204]).toContain(res.status);
    expect((await t.api.get(`/api/agents/${agent.id}`)).status).toBe(200);
    expect((await t.api.get(`/api/projects/${project.id}`)).status).toBe(200);
  });
});
