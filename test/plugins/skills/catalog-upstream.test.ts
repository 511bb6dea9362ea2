import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestKernel } from '../../support/harness.ts';
import { createCompany } from '../../support/fixtures.ts';
import { GithubFixture } from './github-fixture.ts';
import { startSkillsWorld } from './world.ts';

/** update-status of repository imports, against a local server speaking the GitHub REST API. */
const SHA_ONE = '1'.repeat(40);
const SHA_TWO = '2'.repeat(40);
const fixture = new GithubFixture({
  'acme/kit': {
    defaultBranch: 'main',
    refs: { main: SHA_ONE, 'release/v1': SHA_ONE },
    files: { 'skills/lint/SKILL.md': '---\nname: Lint\ndescription: Lints.\n---\nBody\n' },
  },
}, { 'acme/kit/main/skills/lint/SKILL.md': '---\nname: Raw Lint\n---\nraw\n' });

let t: TestKernel;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  const port = await fixture.start();
  ({ t, cleanup } = await startSkillsWorld(port));
}, 120_000);
afterAll(async () => { await cleanup?.(); fixture.stop(); });

async function importSkill(companyId: string, source: string): Promise<any> {
  const res = await t.api.post(`/api/companies/${companyId}/skills/import`, { source });
  expect(res.status, res.text).toBe(201);
  return res.body.imported[0];
}

describe('GET .../skills/{skillId}/update-status of a repository import', () => {
  it('compares the pinned commit with the commit the tracking ref names now (refs with / too)', async () => {
    const company = await createCompany(t.api);
    const onMain = await importSkill(company.id, 'https://github.com/acme/kit');
    const onRelease = await importSkill((await createCompany(t.api)).id, 'https://github.com/acme/kit/tree/release/v1/skills/lint');
    const status = (skill: any) => t.api.get(`/api/companies/${skill.companyId}/skills/${skill.id}/update-status`);
    const current = await status(onMain);
    expect(current.status, current.text).toBe(200);
    expect(current.body).toEqual({
      skillId: onMain.id, key: 'acme/kit/lint', sourceType: 'github', supported: true, trackingRef: 'main',
      pinnedCommit: SHA_ONE, latestCommit: SHA_ONE, updateAvailable: false, status: 'up_to_date', remediation: null,
    });
    fixture.repos['acme/kit']!.refs.main = SHA_TWO;
    const behind = await status(onMain);
    expect(behind.body).toMatchObject({ pinnedCommit: SHA_ONE, latestCommit: SHA_TWO, updateAvailable: true, status: 'update_available' });
    expect(behind.body.remediation).toContain(SHA_TWO);
    expect((await status(onRelease)).body).toMatchObject({ trackingRef: 'release/v1', latestCommit: SHA_ONE, updateAvailable: false });
  });

  it('answers supported: false for a raw URL import, which has no repository to ask', async () => {
    const company = await createCompany(t.api);
    const raw = await importSkill(company.id, `http://localhost:${fixture.port}/raw/acme/kit/main/skills/lint/SKILL.md`);
    const res = await t.api.get(`/api/companies/${company.id}/skills/${raw.id}/update-status`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ skillId: raw.id, sourceType: 'url', supported: false });
  });
});
