import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestKernel } from '../../support/harness.ts';
import { createCompany } from '../../support/fixtures.ts';
import { GithubFixture } from './github-fixture.ts';
import { startSkillsWorld } from './world.ts';

const TOKEN = 'ghp_fixtureTokenValue1234567890';
const SHA = 'c'.repeat(40);
const fixture = new GithubFixture({
  'acme/private': { defaultBranch: 'main', refs: { main: SHA }, token: TOKEN, files: { 'skills/secret-sauce/SKILL.md': '---\nname: Secret Sauce\n---\nbody\n' } },
  'acme/public': { defaultBranch: 'main', refs: { main: SHA }, files: { 'skills/open/SKILL.md': '---\nname: Open\n---\nbody\n' } },
});

let t: TestKernel;
let cleanup: () => Promise<void>;
let company: any;
let other: any;

async function secret(companyId: string, value: string): Promise<string> {
  const res = await t.api.post(`/api/companies/${companyId}/secrets`, { name: `gh-${Math.random().toString(36).slice(2, 8)}`, value });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

beforeAll(async () => {
  const port = await fixture.start();
  ({ t, cleanup } = await startSkillsWorld(port));
  company = await createCompany(t.api, { name: 'Token Co' });
  other = await createCompany(t.api, { name: 'No Token Co' });
}, 120_000);
afterAll(async () => { await cleanup?.(); fixture.stop(); });

const configure = async (extra: Record<string, unknown>) => {
  const res = await t.api.post('/api/plugins/skills/config', { config: { githubApiBase: `http://localhost:${fixture.port}`, ...extra } });
  expect(res.status, res.text).toBe(200);
};

describe('a vault-held GitHub token (config githubToken, a secret reference)', () => {
  it('is refused in plain text by the configuration schema', async () => {
    const res = await t.api.post('/api/plugins/skills/config', { config: { githubToken: TOKEN } });
    expect(res.status).toBe(400);
    expect(res.text).not.toContain(TOKEN);
  });

  it("imports a private repository with the company's own secret, and never shows the token", async () => {
    const secretId = await secret(company.id, TOKEN);
    await configure({ githubToken: [{ type: 'secret_ref', secretId }] });
    fixture.authorizations = [];
    const res = await t.api.post(`/api/companies/${company.id}/skills/import`, { source: 'acme/private' });
    expect(res.status, res.text).toBe(201);
    expect(res.body.imported.map((skill: any) => skill.slug)).toEqual(['secret-sauce']);
    expect(fixture.authorizations.length).toBeGreaterThan(0);
    expect(fixture.authorizations.every((header) => header === `Bearer ${TOKEN}`)).toBe(true);
    expect(res.text).not.toContain(TOKEN);
    const config = await t.api.get('/api/plugins/skills/config');
    expect(config.text).not.toContain(TOKEN);
    const activity = await t.sql.query("select details::text as d from activity_log where company_id = $1 and action = 'company.skills_imported'", [company.id]);
    expect(activity.rows.every((row: any) => !row.d.includes(TOKEN))).toBe(true);
    const audit = await t.sql.query("select details from security_audit_log where company_id = $1 and event = 'secret.plugin_config_resolved'", [company.id]);
    expect(audit.rows[0].details).toMatchObject({ plugin: 'skills', field: 'githubToken', secretId });
    expect(JSON.stringify(audit.rows)).not.toContain(TOKEN);
  });

  it("never lends one company's token to another: its imports stay anonymous", async () => {
    fixture.authorizations = [];
    const res = await t.api.post(`/api/companies/${other.id}/skills/import`, { source: 'acme/private' });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('skill_source_not_found');
    expect(fixture.authorizations.every((header) => header === null)).toBe(true);
    const open = await t.api.post(`/api/companies/${other.id}/skills/import`, { source: 'acme/public' });
    expect(open.status, open.text).toBe(201);
  });
});
