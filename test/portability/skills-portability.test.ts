import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { createCompany } from '../support/fixtures.ts';

/**
 * The skills plugin's part of a company package: company skills with their files exported,
 * imported into a new or an existing company (company-local keys re-keyed, collisions by key,
 * the skill policy asked for each), and a package that lies about its skills.
 */
let t: TestKernel;
let sourceId: string;
let skill: any;

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  sourceId = (await createCompany(t.api, { name: 'Skilled Co' })).id;
  const created = await t.api.post(`/api/companies/${sourceId}/skills`, { name: 'Release Notes', description: 'Writes release notes.' });
  expect(created.status, created.text).toBe(201);
  skill = created.body;
  const file = await t.api.patch(`/api/companies/${sourceId}/skills/${skill.id}/files`, { path: 'references/style.md', content: '# Style\nShort sentences.' });
  expect(file.status, file.text).toBeLessThan(300);
});
afterAll(async () => { await t?.stop(); });

const exported = async () => {
  const res = await t.api.post(`/api/companies/${sourceId}/exports`, {});
  expect(res.status, res.text).toBe(200);
  return res.body;
};
const skillsOf = async (companyId: string) => (await t.sql.query('select key, slug, name, markdown, trust_level, metadata from plugin_skills.company_skills where company_id = $1 order by key', [companyId])).rows;
const filesOf = async (companyId: string) => (await t.sql.query('select path, kind, content from plugin_skills.skill_files where company_id = $1 order by path', [companyId])).rows;

describe('company skills in packages', () => {
  it('exports the company skills with their files as package files', async () => {
    const pkg = await exported();
    const part = pkg.manifest.parts.skills;
    expect(part.data.skills).toHaveLength(1);
    const [carried] = part.data.skills;
    expect(carried).toMatchObject({ key: `company/${sourceId}/release-notes`, local: true, slug: 'release-notes', name: 'Release Notes', description: 'Writes release notes.' });
    expect(pkg.files[carried.markdownPath]).toBe((await skillsOf(sourceId))[0].markdown);
    const style = carried.files.find((file: any) => file.path === 'references/style.md');
    expect(pkg.files[style.filePath]).toBe('# Style\nShort sentences.');
    expect(part.files).toEqual(expect.arrayContaining([carried.markdownPath, style.filePath]));
  });

  it('imports into a new company, re-keying company-local skills to it', async () => {
    const pkg = await exported();
    const preview = await t.api.post('/api/companies/import/preview', { package: pkg, target: { mode: 'new_company', name: 'Skilled Copy' } });
    expect(preview.status, preview.text).toBe(200);
    expect(preview.body.plan).toContainEqual(expect.objectContaining({ kind: 'skills.skill', name: 'Release Notes', action: 'create' }));
    const res = await t.api.post('/api/companies/import', { package: pkg, target: { mode: 'new_company', name: 'Skilled Copy' } });
    expect(res.status, res.text).toBe(201);
    const copyId = res.body.companyId;
    const skills = await skillsOf(copyId);
    expect(skills).toEqual([expect.objectContaining({ key: `company/${copyId}/release-notes`, name: 'Release Notes', markdown: (await skillsOf(sourceId))[0].markdown })]);
    expect((await filesOf(copyId)).map((file: any) => [file.path, file.content])).toEqual((await filesOf(sourceId)).map((file: any) => [file.path, file.content]));
    const listed = await t.api.get(`/api/companies/${copyId}/skills`);
    expect(listed.body.map((entry: any) => entry.key)).toContain(`company/${copyId}/release-notes`);
    const activity = await t.sql.query("select details from activity_log where company_id = $1 and action = 'skills.imported'", [copyId]);
    expect(activity.rows[0].details).toMatchObject({ created: 1, updated: 0, skipped: 0 });
  });

  it('matches skills by key in an existing company: skip keeps, replace updates', async () => {
    const pkg = await exported();
    const target = await createCompany(t.api, { name: 'Existing' });
    expect((await t.api.post(`/api/companies/${target.id}/imports/apply`, { package: pkg })).status).toBe(201);
    await t.sql.query("update plugin_skills.company_skills set markdown = 'changed here' where company_id = $1", [target.id]);
    const again = await t.api.post(`/api/companies/${target.id}/imports/apply`, { package: pkg, collisionStrategy: 'rename' });
    expect(again.status, again.text).toBe(201);
    expect(again.body.plan).toContainEqual(expect.objectContaining({ kind: 'skills.skill', action: 'skip', reason: expect.stringContaining('cannot be renamed') }));
    expect((await skillsOf(target.id)).map((row: any) => row.markdown)).toEqual(['changed here']);
    const replaced = await t.api.post('/api/companies/import', { package: pkg, target: { mode: 'existing_company', companyId: target.id }, collisionStrategy: 'replace' });
    expect(replaced.status, replaced.text).toBe(201);
    expect(replaced.body.plan).toContainEqual(expect.objectContaining({ kind: 'skills.skill', action: 'update' }));
    expect((await skillsOf(target.id)).map((row: any) => row.markdown)).toEqual([(await skillsOf(sourceId))[0].markdown]);
  });

  it('asks the skill policy of the target company: a denied skill is skipped with the reason', async () => {
    const pkg = await exported();
    const target = await createCompany(t.api, { name: 'Gated' });
    const current = await t.api.get(`/api/companies/${target.id}/skill-policy`);
    const policy = await t.api.put(`/api/companies/${target.id}/skill-policy`, { schemaVersion: 1, defaultEffect: 'deny', rules: [], expectedRevision: current.body.revision });
    expect(policy.status, policy.text).toBe(200);
    const res = await t.api.post(`/api/companies/${target.id}/imports/apply`, { package: pkg });
    expect(res.status, res.text).toBe(201);
    expect(res.body.plan).toContainEqual(expect.objectContaining({ kind: 'skills.skill', action: 'skip', reason: expect.stringMatching(/policy denies skills.import/) }));
    expect(await skillsOf(target.id)).toEqual([]);
  });

  it('computes the trust level from the files, and refuses a malformed part writing nothing', async () => {
    const pkg = await exported();
    const carried = pkg.manifest.parts.skills.data.skills[0];
    carried.trustLevel = 'markdown_only';
    carried.files.push({ path: 'scripts/run.sh', kind: 'script', filePath: 'skills/run.sh' });
    pkg.files['skills/run.sh'] = '#!/bin/sh\necho hi\n';
    pkg.manifest.parts.skills.files.push('skills/run.sh');
    const target = await createCompany(t.api, { name: 'Scripted' });
    const res = await t.api.post(`/api/companies/${target.id}/imports/apply`, { package: pkg });
    expect(res.status, res.text).toBe(201);
    expect((await skillsOf(target.id))[0].trust_level).toBe('scripts_executables');

    const broken = await exported();
    broken.manifest.parts.skills.data.skills[0].slug = '../etc';
    const other = await createCompany(t.api, { name: 'Broken' });
    const refused = await t.api.post(`/api/companies/${other.id}/imports/preview`, { package: broken });
    expect(refused.status, refused.text).toBeGreaterThanOrEqual(400);
    expect(refused.status).toBeLessThan(600);
    expect(JSON.stringify(refused.body)).toContain('slug');
    expect(await skillsOf(other.id)).toEqual([]);
  });
});
