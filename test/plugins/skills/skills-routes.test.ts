import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestKernel } from '../../support/harness.ts';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { GithubFixture } from './github-fixture.ts';
import { startSkillsWorld } from './world.ts';

const SHA_MAIN = 'a'.repeat(40);
const SHA_FEATURE = 'b'.repeat(40);
const PNG = Buffer.from([137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13]);
const fixture = new GithubFixture({
  'acme/tools': {
    defaultBranch: 'main',
    refs: { main: SHA_MAIN, 'feature/x': SHA_FEATURE },
    files: {
      'README.md': '# tools',
      'skills/pdf/SKILL.md': '---\nname: PDF Tools\ndescription: |\n  Read PDFs.\n  Write PDFs.\nmetadata:\n  owner: docs-team\n---\n# PDF\n',
      'skills/pdf/scripts/run.sh': '#!/bin/sh\necho hi\n',
      'skills/pdf/assets/logo.png': PNG,
      'skills/pdf/references/big.md': 'x'.repeat(1024 * 1024 + 1),
      'skills/notes/SKILL.md': '---\nname: Notes\ndescription: >\n  Take\n  notes.\n---\nBody\n',
      'skills/notes/references/guide.md': 'guide',
      'skills/notes/references/blob.md': Buffer.from([0, 1, 2, 255]),
    },
  },
}, { 'acme/tools/main/skills/raw/SKILL.md': '---\nname: Raw One\n---\nraw body\n' });

let t: TestKernel;
let cleanup: () => Promise<void>;
let company: any;
let other: any;
let base: string;

beforeAll(async () => {
  const port = await fixture.start();
  ({ t, cleanup } = await startSkillsWorld(port));
  company = await t.api.post('/api/companies', { name: 'Skills Co' }).then((res) => res.body);
  other = await createCompany(t.api, { name: 'Other Co' });
  base = `/api/companies/${company.id}/skills`;
}, 120_000);
afterAll(async () => { await cleanup?.(); fixture.stop(); });

const activities = async (action: string) => (await t.sql.query('select * from activity_log where company_id = $1 and action = $2 order by created_at', [company.id, action])).rows;
const skillCount = async (companyId: string) => Number((await t.sql.query('select count(*)::int as n from plugin_skills.company_skills where company_id = $1', [companyId])).rows[0].n);

describe('managed skills: create, read, edit, delete', () => {
  let skill: any;
  it('creates an empty editable skill keyed company/<companyId>/<slug>', async () => {
    const res = await t.api.post(base, { name: 'Release Notes', description: 'Writes release notes' });
    expect(res.status, res.text).toBe(201);
    skill = res.body;
    expect(skill).toMatchObject({
      companyId: company.id, key: `company/${company.id}/release-notes`, slug: 'release-notes', name: 'Release Notes',
      description: 'Writes release notes', sourceType: 'local_path', trustLevel: 'markdown_only', editable: true, editableReason: null,
      metadata: { sourceKind: 'managed_local' },
    });
    expect(skill.fileInventory).toEqual([expect.objectContaining({ path: 'SKILL.md', kind: 'skill' })]);
    expect((await activities('company.skill_created')).length).toBe(1);
  });
  it('refuses a second skill with the same key (409) and a name without letters (422)', async () => {
    const again = await t.api.post(base, { name: 'release notes' });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('skill_exists');
    const empty = await t.api.post(base, { name: '!!!' });
    expect(empty.status).toBe(422);
    expect((await t.api.post(base, {})).status).toBe(400);
  });
  it('lists, shows with usage and reads SKILL.md by default', async () => {
    const list = await t.api.get(base);
    expect(list.status).toBe(200);
    expect(list.body.map((s: any) => s.id)).toContain(skill.id);
    const detail = await t.api.get(`${base}/${skill.id}`);
    expect(detail.body).toMatchObject({ id: skill.id, usedByAgents: [], attachedAgentCount: 0 });
    expect(detail.body.markdown).toContain('name: "Release Notes"');
    const file = await t.api.get(`${base}/${skill.id}/files`);
    expect(file.body).toMatchObject({ path: 'SKILL.md', kind: 'skill', encoding: 'utf8', markdown: true, editable: true });
  });
  it('edits SKILL.md (name follows the frontmatter, key stays) and adds a reference', async () => {
    const res = await t.api.patch(`${base}/${skill.id}/files`, { path: 'SKILL.md', content: '---\nname: Notes Writer\ndescription: |\n  Block\n  text\n---\nBody' });
    expect(res.status, res.text).toBe(200);
    const detail = await t.api.get(`${base}/${skill.id}`);
    expect(detail.body).toMatchObject({ name: 'Notes Writer', description: 'Block\ntext', key: `company/${company.id}/release-notes` });
    const ref = await t.api.patch(`${base}/${skill.id}/files`, { path: 'scripts/go.sh', content: 'echo hi' });
    expect(ref.status).toBe(200);
    expect((await t.api.get(`${base}/${skill.id}`)).body.trustLevel).toBe('scripts_executables');
    expect((await t.api.get(`${base}/${skill.id}/files?path=scripts/go.sh`)).body.content).toBe('echo hi');
  });
  it('refuses path traversal in edits and reads, and unknown files', async () => {
    for (const path of ['../x.md', '/etc/passwd', 'a//b', 'a\\b']) {
      const res = await t.api.patch(`${base}/${skill.id}/files`, { path, content: 'x' });
      expect(res.status, path).toBe(400);
      expect(res.body.code).toBe('invalid_skill_path');
    }
    expect((await t.api.get(`${base}/${skill.id}/files?path=../../etc/passwd`)).status).toBe(400);
    expect((await t.api.get(`${base}/${skill.id}/files?path=nope.md`)).status).toBe(404);
  });
  it('refuses oversized and binary edits', async () => {
    const big = await t.api.patch(`${base}/${skill.id}/files`, { path: 'references/big.md', content: 'x'.repeat(1024 * 1024 + 1) });
    expect(big.status).toBe(413);
    const binary = await t.api.patch(`${base}/${skill.id}/files`, { path: 'references/b.md', content: 'a\u0000b' });
    expect(binary.status).toBe(400);
  });
  it('deletes, then the skill is not found', async () => {
    const res = await t.api.delete(`${base}/${skill.id}`);
    expect(res.status).toBe(200);
    expect((await t.api.get(`${base}/${skill.id}`)).status).toBe(404);
    expect((await activities('company.skill_deleted')).length).toBe(1);
  });
});

describe('imports from a repository (fixture GitHub API)', () => {
  it('imports every skill of a repository URL pinned to the default branch commit', async () => {
    const res = await t.api.post(`${base}/import`, { source: 'https://github.com/acme/tools' });
    expect(res.status, res.text).toBe(201);
    expect(res.body.source).toMatchObject({ type: 'github', owner: 'acme', repo: 'tools', ref: 'main', commit: SHA_MAIN, locator: `https://localhost:${fixture.port}/acme/tools`, hostname: `localhost:${fixture.port}` });
    const byKey = Object.fromEntries(res.body.imported.map((s: any) => [s.key, s]));
    expect(Object.keys(byKey).sort()).toEqual(['acme/tools/notes', 'acme/tools/pdf-tools']);
    expect(byKey['acme/tools/pdf-tools']).toMatchObject({ name: 'PDF Tools', description: 'Read PDFs.\nWrite PDFs.', trustLevel: 'scripts_executables', sourceType: 'github', sourceCommit: SHA_MAIN, editable: false });
    expect(byKey['acme/tools/pdf-tools'].metadata).toMatchObject({ owner: 'acme', repo: 'tools', commit: SHA_MAIN, sourceKind: 'github' });
    expect(byKey['acme/tools/pdf-tools'].fileInventory.map((f: any) => f.path)).toEqual(['SKILL.md', 'assets/logo.png', 'scripts/run.sh']);
    expect(byKey['acme/tools/notes']).toMatchObject({ description: 'Take notes.', trustLevel: 'markdown_only' });
    expect(res.body.warnings.join('\n')).toMatch(/references\/big.md is larger than 1048576 bytes/);
    expect(res.body.warnings.join('\n')).toMatch(/references\/blob.md is not a text file/);
    const asset = await t.api.get(`${base}/${byKey['acme/tools/pdf-tools'].id}/files?path=assets/logo.png`);
    expect(asset.body).toMatchObject({ encoding: 'base64', content: PNG.toString('base64'), sizeBytes: PNG.length });
    // The company's skill list also re-imported the bundled base skill (sourceType catalog).
    const [entry] = (await activities('company.skills_imported')).filter((candidate: any) => candidate.details.sourceType !== 'catalog');
    expect(entry).toMatchObject({ entity_type: 'company', entity_id: company.id });
    expect(entry.details).toMatchObject({ count: 2, sourceType: 'github' });
  });
  it('resolves a tree URL whose ref contains a slash (longest ref first)', async () => {
    const res = await t.api.post(`${base}/import`, { source: 'https://github.com/acme/tools/tree/feature/x/skills/notes' });
    expect(res.status, res.text).toBe(201);
    expect(res.body.source).toMatchObject({ ref: 'feature/x', commit: SHA_FEATURE, path: 'skills/notes' });
    expect(res.body.imported.map((s: any) => s.key)).toEqual(['acme/tools/notes']);
    expect(res.body.imported[0].sourceRef).toBe('feature/x');
  });
  it('imports a blob URL, owner/repo/skill, a skill-directory URL and its install command', async () => {
    const blob = await t.api.post(`${base}/import`, { source: 'https://github.com/acme/tools/blob/main/skills/pdf/SKILL.md' });
    expect(blob.body.imported.map((s: any) => s.key)).toEqual(['acme/tools/pdf-tools']);
    const short = await t.api.post(`${base}/import`, { source: 'acme/tools/notes' });
    expect(short.body.imported.map((s: any) => s.key)).toEqual(['acme/tools/notes']);
    const site = await t.api.post(`${base}/import`, { source: 'https://skills.sh/acme/tools/pdf' });
    expect(site.status, site.text).toBe(201);
    expect(site.body.imported[0]).toMatchObject({ key: 'acme/tools/pdf-tools', sourceType: 'skills_sh', sourceLocator: 'https://skills.sh/acme/tools/pdf' });
    const command = await t.api.post(`${base}/import`, { source: 'npx skills add acme/tools --skill notes' });
    expect(command.body.imported[0]).toMatchObject({ key: 'acme/tools/notes', sourceType: 'skills_sh', sourceLocator: 'npx skills add acme/tools --skill notes' });
    expect(command.body.source).toMatchObject({ type: 'skills_sh', owner: 'acme', repo: 'tools', commit: SHA_MAIN });
  });
  it('imports a raw SKILL.md address', async () => {
    const url = `http://localhost:${fixture.port}/raw/acme/tools/main/skills/raw/SKILL.md`;
    const res = await t.api.post(`${base}/import`, { source: url });
    expect(res.status, res.text).toBe(201);
    expect(res.body.imported[0]).toMatchObject({ key: `company/${company.id}/raw-one`, name: 'Raw One', sourceType: 'url', sourceLocator: url });
  });
  it('imported skills are read-only', async () => {
    const list = await t.api.get(base);
    const imported = list.body.find((s: any) => s.key === 'acme/tools/pdf-tools');
    const res = await t.api.patch(`${base}/${imported.id}/files`, { path: 'SKILL.md', content: 'x' });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ code: 'skill_read_only' });
  });
  it('answers 422 for unknown repositories, refs, skills and unreadable sources, writing nothing', async () => {
    const before = await skillCount(company.id);
    const cases: Array<[string, string]> = [
      ['acme/missing', 'skill_source_not_found'],
      ['https://github.com/acme/tools/tree/no-such-ref', 'skill_source_not_found'],
      ['https://github.com/acme/tools/blob/main/README.md', 'skill_source_invalid'],
      ['not a source', 'invalid_skill_source'],
      ['https://example.com/page.html', 'invalid_skill_source'],
      ['/etc', 'skill_source_not_allowed'],
    ];
    for (const [source, code] of cases) {
      const res = await t.api.post(`${base}/import`, { source });
      expect(res.status, source).toBe(422);
      expect(res.body.code, source).toBe(code);
    }
    expect(await skillCount(company.id)).toBe(before);
  });
});

describe('who may change skills', () => {
  it('an agent without agents:create gets 403; with canCreateAgents it may', async () => {
    const agent = await createAgent(t.api, company.id, { name: 'Worker' });
    const key = await createAgentKey(t.api, agent.id);
    const denied = await t.api.as(key).post(base, { name: 'Agent Skill' });
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe('permission_denied');
    expect((await t.api.as(key).get(base)).status).toBe(200);
    await t.api.patch(`/api/agents/${agent.id}/permissions`, { canCreateAgents: true });
    const allowed = await t.api.as(key).post(base, { name: 'Agent Skill' });
    expect(allowed.status, allowed.text).toBe(201);
  });
  it('another company gets 403 on the routes and 404 for a skill id of this company under its own path', async () => {
    const stranger = await createAgent(t.api, other.id, { name: 'Stranger' });
    const key = await createAgentKey(t.api, stranger.id);
    expect((await t.api.as(key).get(base)).status).toBe(403);
    const [skill] = (await t.api.get(base)).body;
    expect((await t.api.get(`/api/companies/${other.id}/skills/${skill.id}`)).status).toBe(404);
    expect((await t.api.delete(`/api/companies/${other.id}/skills/${skill.id}`)).status).toBe(404);
    expect((await t.api.get(`${base}/not-a-uuid`)).status).toBe(404);
  });
  it('a denying skill policy answers 403 skill_policy_denied with the decision, and nothing is written', async () => {
    const policy = await t.api.get(`/api/companies/${company.id}/skill-policy`);
    const put = await t.api.put(`/api/companies/${company.id}/skill-policy`, {
      schemaVersion: 1, defaultEffect: 'allow', expectedRevision: policy.body.revision,
      rules: [{ id: 'no-imports', priority: 0, effect: 'deny', subject: { type: 'all_agents' }, actions: ['skills.create'] }],
    });
    expect(put.status, put.text).toBe(200);
    const agent = await createAgent(t.api, company.id, { name: 'Lead', role: 'ceo' });
    const key = await createAgentKey(t.api, agent.id);
    const before = await skillCount(company.id);
    const res = await t.api.as(key).post(base, { name: 'Blocked' });
    expect(res.status, res.text).toBe(403);
    expect(res.body).toMatchObject({ error: 'Skill policy denies skills.create', code: 'skill_policy_denied', details: { decision: { allowed: false, action: 'skills.create', matchedRuleId: 'no-imports' } } });
    expect(await skillCount(company.id)).toBe(before);
  });
});

describe('POST /api/companies/{companyId}/skills with an Idempotency-Key', () => {
  it('a retry and a concurrent pair each make one skill and answer it; without the key a repeat is 409 skill_exists', async () => {
    const fresh = await createCompany(t.api, { name: 'Keyed Skills Co' });
    const path = `/api/companies/${fresh.id}/skills`;
    const keyed = (body: unknown, key: string) => t.api.post(path, body, { headers: { 'Idempotency-Key': key } });
    const first = await keyed({ name: 'Keyed Skill' }, 'skill-1');
    expect(first.status, first.text).toBe(201);
    const retry = await keyed({ name: 'Keyed Skill' }, 'skill-1');
    expect([retry.status, retry.headers.get('x-idempotent-replayed'), retry.body.id, retry.body.markdown]).toEqual([200, 'true', first.body.id, first.body.markdown]);
    expect((await t.api.post(path, { name: 'Keyed Skill' })).body.code).toBe('skill_exists');
    const pair = await Promise.all([0, 1].map(() => keyed({ name: 'Raced Skill' }, 'skill-2')));
    expect(pair.map((res) => res.status).sort(), pair.map((res) => res.text).join('\n')).toEqual([200, 201]);
    expect(pair[0]!.body.id).toBe(pair[1]!.body.id);
    const { rows } = await t.sql.query('select count(*)::int as n from plugin_skills.company_skills where company_id = $1', [fresh.id]);
    expect(rows[0].n).toBe(2);
  });
});
