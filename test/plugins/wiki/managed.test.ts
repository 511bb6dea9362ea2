import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { base, eventually, installWiki, mountWiki, WIKI } from './helpers.ts';

/**
 * The wiki's managed resources: the maintainer agent (wiki-maintainer, role
 * knowledge-maintainer) is made in a company when its board bootstraps the wiki, never in one
 * that does not, and the wiki then has the work plugin make its llm-wiki project, the skills
 * plugin its skills and the runtime plugin its routines, once per company.
 */
let t: TestKernel;
let before: any;
let namesake: any;
let squatted: any;
const SLUGS = ['index-refresh', 'service-distill', 'wiki-ingest', 'wiki-lint', 'wiki-maintainer', 'wiki-query'];

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  before = await createCompany(t.api);
  // A project of the board's with the wiki's project name: never taken for the managed one.
  const res = await t.api.post(`/api/companies/${before.id}/projects`, { name: 'LLM Wiki' });
  expect(res.status, res.text).toBe(201);
  namesake = res.body;
  // A company whose skill already holds one of the wiki's keys (as an import could): never overwritten.
  squatted = await createCompany(t.api);
  await t.sql.query(
    `insert into plugin_skills.company_skills (company_id, key, slug, name, markdown, source_type, trust_level, metadata)
     values ($1, 'plugin/llm-wiki/wiki-query', 'wiki-query', 'Mine', '# Mine', 'url', 'markdown_only', '{}')`, [squatted.id]);
  await installWiki(t);
  for (const company of [before, squatted]) await bootstrap(company.id);
}, 120_000);

async function bootstrap(companyId: string) {
  await mountWiki(t, companyId);
  const res = await t.api.post(`${base}/bootstrap`, { companyId });
  expect(res.status, res.text).toBe(200);
  return res.body;
}
afterAll(async () => { await t?.stop(); });

const maintainers = async (companyId: string) => (await t.sql.query(
  'select id, name, role, status from agents where company_id = $1 and managed_by_plugin = $2 and managed_key = $3', [companyId, WIKI, 'wiki-maintainer'])).rows;
const wikiSkills = async (companyId: string) => (await t.sql.query(
  "select slug, name, editable, metadata, markdown from plugin_skills.company_skills where company_id = $1 and key like 'plugin/llm-wiki/%' order by slug", [companyId])).rows;
const wikiProjects = async (companyId: string) => (await t.sql.query(
  'select id, name from plugin_work.projects where company_id = $1 and managed_by_plugin = $2 and managed_key = $3', [companyId, WIKI, 'llm-wiki'])).rows;

describe('the wiki\'s managed resources', () => {
  it('makes the maintainer in a company when its board bootstraps the wiki, and then its project', async () => {
    // Paused until the board approves (or writes) its configuration.
    expect(await maintainers(before.id)).toEqual([{ id: expect.any(String), name: 'Wiki Maintainer', role: 'knowledge-maintainer', status: 'paused' }]);
    const [project] = await eventually(() => wikiProjects(before.id), (rows) => rows.length > 0);
    expect(project.id).not.toBe(namesake.id);
    const view = await t.api.get(`/api/projects/${project.id}`);
    expect(view.status, view.text).toBe(200);
    expect(view.body).toMatchObject({ name: 'LLM Wiki', companyId: before.id, managedBy: { plugin: WIKI, key: 'llm-wiki' } });
    expect((await t.api.get(`/api/projects/${namesake.id}`)).body.managedBy).toBeNull();
  });

  it('installs the skills the wiki ships, read-only and marked managedBy, and never one whose key the company holds already', async () => {
    const skills = await eventually(() => wikiSkills(before.id), (rows) => rows.length === SLUGS.length);
    expect(skills.map((skill: any) => skill.slug)).toEqual(SLUGS);
    for (const skill of skills) {
      expect(skill).toMatchObject({ editable: false, metadata: { sourceKind: 'service_bundled', managedBy: { plugin: WIKI, key: skill.slug } } });
      expect(skill.markdown).toContain(`slug: ${skill.slug}`);
    }
    const listed = await t.api.get(`/api/companies/${before.id}/skills`);
    expect(listed.status, listed.text).toBe(200);
    const others = await eventually(() => wikiSkills(squatted.id), (rows) => rows.length === SLUGS.length);
    expect(others.find((skill: any) => skill.slug === 'wiki-query')).toMatchObject({ name: 'Mine', markdown: '# Mine', metadata: {} });
    expect(others.filter((skill: any) => skill.metadata.managedBy).map((skill: any) => skill.slug)).toEqual(SLUGS.filter((slug) => slug !== 'wiki-query'));
  });

  it('makes the three routines of the maintainer, paused; the board resumes and pauses them', async () => {
    const [maintainer] = await maintainers(before.id);
    const listed = await eventually(async () => (await t.api.get(`/api/companies/${before.id}/routines`)).body.routines ?? [], (rows: any[]) => rows.length === 3);
    expect(listed.map((routine: any) => routine.key).sort()).toEqual(['cursor-window-processing', 'index-refresh', 'nightly-wiki-lint']);
    for (const routine of listed) expect(routine).toMatchObject({ companyId: before.id, agentId: maintainer.id, status: 'paused', managedBy: { plugin: WIKI, key: routine.key } });
    const lint = listed.find((routine: any) => routine.key === 'nightly-wiki-lint');
    expect(lint.intervalSec).toBe(86400);
    const resumed = await t.api.patch(`/api/routines/${lint.id}`, { status: 'active' });
    expect(resumed.status, resumed.text).toBe(200);
    expect(resumed.body).toMatchObject({ id: lint.id, status: 'active' });
    // Its next slot is queued once (a singleton per routine, interval and slot), in the routine's company.
    const queue = await t.api.get('/api/plugins/runtime/job-queue');
    expect(queue.status, queue.text).toBe(200);
    const jobs = (queue.body.jobs ?? queue.body).filter((job: any) => job.jobKey === 'routine' && job.payload?.routineId === lint.id);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({ companyId: before.id, state: 'queued' });
    const again = await t.api.patch(`/api/routines/${lint.id}`, { status: 'active' });
    expect(again.body.status).toBe('active');
    const paused = await t.api.patch(`/api/routines/${lint.id}`, { status: 'paused' });
    expect(paused.body.status).toBe('paused');
  });

  it('refuses routine changes that are not the company board\'s, with the JSON error, and changes nothing', async () => {
    const [routine] = (await t.api.get(`/api/companies/${before.id}/routines`)).body.routines;
    const outsider = await createCompany(t.api);
    const foreignKey = await createAgentKey(t.api, (await createAgent(t.api, outsider.id)).id);
    const foreign = await t.api.as(foreignKey).patch(`/api/routines/${routine.id}`, { status: 'active' });
    expect(foreign.status).toBe(403);
    expect((await t.api.as(foreignKey).get(`/api/companies/${before.id}/routines`)).status).toBe(403);
    const ownKey = await createAgentKey(t.api, (await createAgent(t.api, before.id)).id);
    const byAgent = await t.api.as(ownKey).patch(`/api/routines/${routine.id}`, { status: 'active' });
    expect([byAgent.status, byAgent.body.code]).toEqual([403, 'board_only']);
    const unknown = await t.api.patch('/api/routines/00000000-0000-4000-8000-000000000000', { status: 'active' });
    expect(unknown.status).toBe(404);
    expect((await t.api.patch(`/api/routines/${routine.id}`, { status: 'running' })).status).toBe(400);
    expect((await t.api.patch(`/api/routines/${routine.id}`, {})).status).toBe(400);
    const now = (await t.api.get(`/api/companies/${before.id}/routines`)).body.routines.find((r: any) => r.id === routine.id);
    expect(now.status).toBe('paused');
  });

  it('makes nothing in a company that has not bootstrapped its wiki; its bootstrap makes each once', async () => {
    const later = await createCompany(t.api);
    expect(await maintainers(later.id)).toEqual([]);
    expect(await wikiProjects(later.id)).toEqual([]);
    const first = await bootstrap(later.id);
    const again = await t.api.post(`${base}/bootstrap`, { companyId: later.id });
    expect(again.status, again.text).toBe(200);
    expect(again.body.maintainerAgentId).toBe(first.maintainerAgentId);
    expect((await maintainers(later.id)).map((row) => row.id)).toEqual([first.maintainerAgentId]);
    const [project] = await eventually(() => wikiProjects(later.id), (rows) => rows.length > 0);
    expect((await t.api.get(`/api/projects/${project.id}`)).body.companyId).toBe(later.id);
    // Disabling and enabling again makes nothing twice, and moves only the plugin's own hold.
    expect((await t.api.post(`/api/agents/${first.maintainerAgentId}/approve`, {})).status).toBe(200);
    expect((await maintainers(later.id))[0].status).toBe('idle');
    expect((await t.api.post(`/api/plugins/${WIKI}/disable`, {})).status).toBe(200);
    expect((await maintainers(later.id))[0].status).toBe('paused');
    expect((await t.api.post(`/api/plugins/${WIKI}/enable`, {})).status).toBe(200);
    expect((await maintainers(later.id))[0].status).toBe('idle');
    expect(await maintainers(later.id)).toHaveLength(1);
    expect(await wikiProjects(later.id)).toHaveLength(1);
    expect(await wikiProjects(before.id)).toHaveLength(1);
    expect(await eventually(() => wikiSkills(later.id), (rows) => rows.length === SLUGS.length)).toHaveLength(SLUGS.length);
    const routines = await eventually(async () => (await t.api.get(`/api/companies/${later.id}/routines`)).body.routines ?? [], (rows: any[]) => rows.length === 3);
    expect(routines.every((routine: any) => routine.companyId === later.id && routine.status === 'paused')).toBe(true);
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
