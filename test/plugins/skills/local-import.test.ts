import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYRING_FILE } from '../../../kernel/vault/keyring.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { outsideTmp } from './world.ts';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';

/**
 * Local-path imports through local.import. The kernel runs in local_trusted mode with its
 * default roots (the instance's temporary directory and <dataDir>/skills), the data directory
 * itself (keyring, secrets) living inside the temporary directory as in these tests.
 */
let t: TestKernel;
let company: any;
let base: string;
let work: string;
let outside: string;

async function skillFolder(dir: string, name: string, extra: Record<string, string | Buffer> = {}): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'SKILL.md'), `---\nname: ${name}\ndescription: ${name} things\n---\n# ${name}\n`);
  for (const [path, content] of Object.entries(extra)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), content);
  }
}

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  company = await createCompany(t.api, { name: 'Local Imports' });
  base = `/api/companies/${company.id}/skills`;
  work = await mkdtemp(join(tmpdir(), 'keel-local-skills-'));
  // A directory with a skill outside every root, standing in for "elsewhere on the server".
  outside = await mkdtemp(join(outsideTmp(), 'keel-outside-skills-'));
  await skillFolder(join(outside, 'elsewhere'), 'Elsewhere');
  await skillFolder(join(work, 'single'), 'Single', { 'references/guide.md': 'guide', 'assets/logo.png': Buffer.from([137, 80, 78, 71, 0, 1]), 'scripts/bin.sh': Buffer.from([0, 1, 2]) });
  await skillFolder(join(work, 'many', 'alpha'), 'Alpha');
  await skillFolder(join(work, 'many', 'beta'), 'Beta');
  await skillFolder(join(work, 'many', 'beta', 'inner'), 'Inner');
  await writeFile(join(work, 'many', 'beta', 'notes.md'), 'beta notes');
  await skillFolder(join(work, 'big'), 'Big', { 'references/huge.md': 'x'.repeat(1024 * 1024 + 10) });
  await mkdir(join(work, 'escape'), { recursive: true });
  await symlink(outside, join(work, 'escape', 'link'));
  await skillFolder(join(work, 'leaky'), 'Leaky');
  await symlink(join(t.dataDir, KEYRING_FILE), join(work, 'leaky', 'references-keyring.md'));
  await mkdir(join(work, 'leaky', 'references'), { recursive: true });
  await symlink('/etc/passwd', join(work, 'leaky', 'references', 'passwd.md'));
  await symlink(outside, join(work, 'outlink'));
}, 120_000);
afterAll(async () => {
  await t?.stop();
  await rm(work, { recursive: true, force: true });
  if (outside) await rm(outside, { recursive: true, force: true });
});


const count = async () => Number((await t.sql.query('select count(*)::int as n from plugin_skills.company_skills where company_id = $1', [company.id])).rows[0].n);

describe('imports from a local path', () => {
  it('imports a folder with one SKILL.md: text files, assets as base64, binary scripts left out with a warning', async () => {
    const res = await t.api.post(`${base}/import`, { source: join(work, 'single') });
    expect(res.status, res.text).toBe(201);
    expect(res.body.imported).toHaveLength(1);
    const skill = res.body.imported[0];
    expect(skill).toMatchObject({ key: `company/${company.id}/single`, slug: 'single', name: 'Single', sourceType: 'local_path', trustLevel: 'assets', editable: false });
    expect(skill.fileInventory.map((file: any) => file.path).sort()).toEqual(['SKILL.md', 'assets/logo.png', 'references/guide.md']);
    expect(res.body.warnings.some((warning: string) => warning.includes('scripts/bin.sh is not a text file'))).toBe(true);
    expect(res.body.source).toMatchObject({ type: 'local_path' });
    const logo = await t.api.get(`${base}/${skill.id}/files?path=assets/logo.png`);
    expect(logo.body).toMatchObject({ encoding: 'base64', content: Buffer.from([137, 80, 78, 71, 0, 1]).toString('base64') });
  });

  it('imports a SKILL.md path as its folder, and a folder of many with nested skills as their own', async () => {
    const one = await t.api.post(`${base}/import`, { source: join(work, 'many', 'alpha', 'SKILL.md') });
    expect(one.status, one.text).toBe(201);
    expect(one.body.imported.map((skill: any) => skill.slug)).toEqual(['alpha']);
    const many = await t.api.post(`${base}/import`, { source: `file://${join(work, 'many')}` });
    expect(many.status, many.text).toBe(201);
    expect(many.body.imported.map((skill: any) => skill.slug).sort()).toEqual(['alpha', 'beta', 'inner']);
    const beta = many.body.imported.find((skill: any) => skill.slug === 'beta');
    expect(beta.fileInventory.map((file: any) => file.path).sort()).toEqual(['SKILL.md', 'notes.md']);
  });

  it('leaves out files over 1 MiB with a warning', async () => {
    const res = await t.api.post(`${base}/import`, { source: join(work, 'big') });
    expect(res.status, res.text).toBe(201);
    expect(res.body.imported[0].fileInventory.map((file: any) => file.path)).toEqual(['SKILL.md']);
    expect(res.body.warnings.some((warning: string) => warning.includes('huge.md is larger than'))).toBe(true);
  });

  it('does not follow links out of the roots: the keyring and /etc/passwd are left out, never read', async () => {
    const res = await t.api.post(`${base}/import`, { source: join(work, 'leaky') });
    expect(res.status, res.text).toBe(201);
    expect(res.body.imported[0].fileInventory.map((file: any) => file.path)).toEqual(['SKILL.md']);
    expect(res.body.warnings).toEqual(expect.arrayContaining([
      'references-keyring.md: a link leading outside the allowed paths', 'references/passwd.md: a link leading outside the allowed paths',
    ]));
    const stored = await t.sql.query("select count(*)::int as n from plugin_skills.skill_files where company_id = $1 and content like '%root:%'", [company.id]);
    expect(stored.rows[0].n).toBe(0);
  });

  it('refuses paths outside the roots, .., /proc, the data directory and its keyring, links escaping, writing nothing', async () => {
    const before = await count();
    const cases: Array<[string, string]> = [
      ['/etc', 'skill_source_not_allowed'],
      ['/etc/passwd', 'skill_source_not_allowed'],
      ['/proc/self', 'skill_source_not_allowed'],
      ['/proc/self/environ', 'skill_source_not_allowed'],
      [outside, 'skill_source_not_allowed'],
      ['/usr/share', 'skill_source_not_allowed'],
      [t.dataDir, 'skill_source_not_allowed'],
      [join(t.dataDir, KEYRING_FILE), 'skill_source_not_allowed'],
      [join(work, 'outlink'), 'skill_source_not_allowed'],
      [join(work, 'escape', 'link'), 'skill_source_not_allowed'],
      [`${join(work, 'single')}/../../../etc`, 'invalid_skill_source'],
      [`${join(work, 'single')}/../many`, 'invalid_skill_source'],
      ['/nonexistent-root/skill', 'skill_source_not_allowed'],
      [join(work, 'no-such-folder'), 'skill_source_not_found'],
      [join(work, 'escape'), 'skill_source_empty'],
    ];
    for (const [source, code] of cases) {
      const res = await t.api.post(`${base}/import`, { source });
      expect(res.status, `${source}: ${res.text}`).toBe(422);
      expect(res.body.code, source).toBe(code);
      expect(res.text).not.toContain('root:x:0');
    }
    expect(await count()).toBe(before);
  });

  it('reads <dataDir>/skills, the one part of the data directory allowed', async () => {
    await skillFolder(join(t.dataDir, 'skills', 'kept'), 'Kept');
    const res = await t.api.post(`${base}/import`, { source: join(t.dataDir, 'skills', 'kept') });
    expect(res.status, res.text).toBe(201);
    expect(res.body.imported[0].slug).toBe('kept');
  });

  it('refuses agent callers unless an operator allows them', async () => {
    const agent = await createAgent(t.api, company.id, { role: 'ceo' });
    const key = await createAgentKey(t.api, agent.id);
    const res = await t.api.as(key).post(`${base}/import`, { source: join(work, 'single') });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ code: 'skill_source_not_allowed' });
    expect(res.body.error).toMatch(/board users only/);
  });
});

describe('with roots an operator configured', () => {
  let t2: TestKernel;
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'keel-import-root-'));
    await skillFolder(join(root, 'ok'), 'Ok');
    t2 = await startTestKernel({ plugins: { localImport: { roots: [root], allowAgents: true } } }, { firstPartyDir: FIRST_PARTY_PLUGINS });
  }, 120_000);
  afterAll(async () => { await t2?.stop(); await rm(root, { recursive: true, force: true }); });

  it('reads only inside them (the temporary directory is no longer a root) and lets agents import', async () => {
    const other = await createCompany(t2.api, { name: 'Configured' });
    const agent = await createAgent(t2.api, other.id, { role: 'ceo' });
    const key = await createAgentKey(t2.api, agent.id);
    const ok = await t2.api.as(key).post(`/api/companies/${other.id}/skills/import`, { source: join(root, 'ok') });
    expect(ok.status, ok.text).toBe(201);
    const refused = await t2.api.post(`/api/companies/${other.id}/skills/import`, { source: join(work, 'single') });
    expect(refused.status).toBe(422);
    expect(refused.body.code).toBe('skill_source_not_allowed');
  });
});
