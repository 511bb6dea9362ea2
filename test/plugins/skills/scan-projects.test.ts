import { realpathSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { outsideTmp } from './world.ts';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';

/**
 * POST /api/companies/{companyId}/skills/scan-projects: SKILL.md files in project workspaces,
 * read through local.import (local_trusted roots: the temporary directory and <dataDir>/skills).
 */
let t: TestKernel;
let company: any;
let other: any;
let project: any;
let secondProject: any;
let repo: string;
let second: string;
let outside: string;
const scan = (body: Record<string, unknown> = {}, companyId = company.id) => t.api.post(`/api/companies/${companyId}/skills/scan-projects`, body);

async function skill(dir: string, name: string, body = `# ${name}\n`): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'SKILL.md'), `---\nname: ${name}\ndescription: ${name} things\n---\n${body}`);
}

async function workspace(projectId: string, fields: Record<string, unknown>): Promise<any> {
  const res = await t.api.post(`/api/projects/${projectId}/workspaces`, fields);
  expect(res.status, res.text).toBe(201);
  return res.body;
}


const keys = (skills: any[]) => skills.map((s) => s.key).sort();

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  company = await createCompany(t.api, { name: 'Scanning Co' });
  other = await createCompany(t.api, { name: 'Other Co' });
  project = (await t.api.post(`/api/companies/${company.id}/projects`, { name: 'App' })).body;
  secondProject = (await t.api.post(`/api/companies/${company.id}/projects`, { name: 'Tools' })).body;
  repo = await mkdtemp(join(tmpdir(), 'keel-scan-repo-'));
  second = await mkdtemp(join(tmpdir(), 'keel-scan-second-'));
  outside = await mkdtemp(join(outsideTmp(), 'keel-scan-outside-'));
  await skill(repo, 'Root Skill');
  await writeFile(join(repo, 'README.md'), 'the project, not a skill');
  await skill(join(repo, 'skills', 'deploy'), 'Deploy');
  await writeFile(join(repo, 'skills', 'deploy', 'checklist.md'), '1. build\n2. ship\n');
  await skill(join(repo, 'skills', 'curated', 'review'), 'Review');
  await skill(join(repo, '.claude', 'skills', 'triage'), 'Triage');
  await skill(join(repo, 'src', 'nested', 'hidden'), 'Not Scanned');
  await skill(join(second, 'skills', 'deploy'), 'Deploy', '# another deploy\n');
  await skill(join(second, '.agents', 'skills', 'lint'), 'Lint');
  await skill(join(outside, 'skills', 'secret'), 'Secret');
  await workspace(project.id, { name: 'main', cwd: repo, isPrimary: true });
  await workspace(project.id, { name: 'no path', repoUrl: 'https://example.com/app.git' });
}, 120_000);
afterAll(async () => {
  await t?.stop();
  for (const dir of [repo, second, outside]) if (dir) await rm(dir, { recursive: true, force: true });
});

describe('scan-projects', () => {
  it('imports the skills of skills/, its curated folders, the tools\' skills folders and the root, and nothing deeper', async () => {
    const res = await scan();
    expect(res.status, res.text).toBe(200);
    const prefix = `company/${company.id}/`;
    expect(keys(res.body.imported)).toEqual([`${prefix}deploy`, `${prefix}review`, `${prefix}root-skill`, `${prefix}triage`]);
    expect(res.body).toMatchObject({ updated: [], skipped: [], conflicts: [] });
    expect(res.body.warnings.some((w: string) => w.includes('no path') && w.includes('no working directory'))).toBe(true);
    const deploy = res.body.imported.find((s: any) => s.key.endsWith('/deploy'));
    expect(deploy).toMatchObject({ sourceType: 'local_path', sourceLocator: join(realpathSync(repo), 'skills', 'deploy') });
    expect(deploy.fileInventory.map((f: any) => f.path).sort()).toEqual(['SKILL.md', 'checklist.md']);
    // The root skill is SKILL.md alone: the project's other files are not the skill's.
    const root = res.body.imported.find((s: any) => s.key.endsWith('/root-skill'));
    expect(root.fileInventory.map((f: any) => f.path)).toEqual(['SKILL.md']);
    const activity = (await t.sql.query("select details from activity_log where action = 'company.skills_scanned' and company_id = $1", [company.id])).rows;
    expect(activity).toHaveLength(1);
    expect(activity[0].details.imported).toHaveLength(4);
  });

  it('skips what did not change and updates what changed at the same path', async () => {
    await writeFile(join(repo, 'skills', 'deploy', 'checklist.md'), '1. build\n2. test\n3. ship\n');
    const res = await scan({ projectIds: [project.id] });
    expect(res.status, res.text).toBe(200);
    expect(res.body.imported).toEqual([]);
    expect(keys(res.body.updated)).toEqual([`company/${company.id}/deploy`]);
    expect(res.body.skipped.map((s: any) => s.reason)).toEqual(['unchanged', 'unchanged', 'unchanged']);
    const file = await t.api.get(`/api/companies/${company.id}/skills/${res.body.updated[0].id}/files?path=checklist.md`);
    expect(file.body.content).toContain('3. ship');
    const again = await scan({ projectIds: [project.id] });
    expect([again.body.imported.length, again.body.updated.length, again.body.skipped.length]).toEqual([0, 0, 4]);
  });

  it('reports a key another skill holds as a conflict and leaves that skill as it is', async () => {
    const ws = await workspace(secondProject.id, { name: 'tools', cwd: second });
    const created = await t.api.post(`/api/companies/${company.id}/skills`, { name: 'Lint', slug: 'lint' });
    expect(created.status, created.text).toBe(201);
    const before = (await t.api.get(`/api/companies/${company.id}/skills/${created.body.id}`)).body;
    const res = await scan({ workspaceIds: [ws.id] });
    expect(res.status, res.text).toBe(200);
    expect(res.body.imported).toEqual([]);
    expect(res.body.conflicts.map((c: any) => [c.key, c.workspaceId, c.projectId]).sort()).toEqual([
      [`company/${company.id}/deploy`, ws.id, secondProject.id],
      [`company/${company.id}/lint`, ws.id, secondProject.id],
    ]);
    expect(res.body.conflicts.find((c: any) => c.key.endsWith('/lint')).existingSkillId).toBe(created.body.id);
    const after = (await t.api.get(`/api/companies/${company.id}/skills/${created.body.id}`)).body;
    expect(after.markdown).toBe(before.markdown);
    const deploy = await t.api.get(`/api/companies/${company.id}/skills/${res.body.conflicts.find((c: any) => c.key.endsWith('/deploy')).existingSkillId}/files`);
    expect(deploy.body.content).not.toContain('another deploy');
  });

  it('reads nothing outside the paths the operator allows, and says so', async () => {
    const elsewhere = (await t.api.post(`/api/companies/${company.id}/projects`, { name: 'Elsewhere' })).body;
    await workspace(elsewhere.id, { name: 'outside', cwd: outside });
    const res = await scan({ projectIds: [elsewhere.id] });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ imported: [], updated: [], skipped: [], conflicts: [] });
    expect(res.body.warnings.some((w: string) => w.includes('outside the paths this server allows'))).toBe(true);
    expect(JSON.stringify(res.body)).not.toContain('Secret things');
  });

  it('names requested projects and workspaces that are not this company\'s, and scans none of another company\'s', async () => {
    const theirs = (await t.api.post(`/api/companies/${other.id}/projects`, { name: 'Theirs' })).body;
    const theirWorkspace = await workspace(theirs.id, { name: 'theirs', cwd: second });
    const res = await scan({ projectIds: [theirs.id], workspaceIds: [theirWorkspace.id] });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ imported: [], updated: [], skipped: [], conflicts: [] });
    expect(res.body.warnings).toEqual([`project ${theirs.id}: no workspace of this company`, `workspace ${theirWorkspace.id}: not found in this company`]);
    expect((await t.sql.query('select count(*)::int as n from plugin_skills.company_skills where company_id = $1', [other.id])).rows[0].n).toBeLessThanOrEqual(1);
  });

  it('refuses bad bodies, agents without agents:create, and other companies\' agents, writing nothing', async () => {
    const count = async () => Number((await t.sql.query('select count(*)::int as n from plugin_skills.company_skills where company_id = $1', [company.id])).rows[0].n);
    const before = await count();
    for (const body of [{ projectIds: ['nope'] }, { workspaceIds: 'x' }, { extra: true }, { projectIds: Array.from({ length: 501 }, () => project.id) }]) {
      const res = await scan(body);
      expect([res.status, res.body.code], JSON.stringify(body).slice(0, 80)).toEqual([400, 'validation_failed']);
    }
    expect(await count()).toBe(before);
    // (An agent's create installs the required bundled skill: counted from after it.)
    const agent = await createAgent(t.api, company.id);
    const key = await createAgentKey(t.api, agent.id);
    const afterAgent = await count();
    const denied = await t.api.as(key).post(`/api/companies/${company.id}/skills/scan-projects`, {});
    expect([denied.status, denied.body.code]).toEqual([403, 'permission_denied']);
    const outsider = await createAgentKey(t.api, (await createAgent(t.api, other.id)).id);
    const foreign = await t.api.as(outsider).post(`/api/companies/${company.id}/skills/scan-projects`, {});
    expect(foreign.status).toBe(403);
    expect(await count()).toBe(afterAgent);
  });
});
