import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { createAgent, createCompany } from '../support/fixtures.ts';
import { runCli } from './cli-support.ts';

/** `keel company export|import` run as the real binary against a kernel with the first-party plugins. */
let t: TestKernel;
let work: string;
let companyId: string;
const SECRET = 'sk-live-CLIplantedSECRET987654321';
const keel = (...args: string[]) => runCli([...args, '--api-base', t.url], { timeoutMs: 60_000 });

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  work = await mkdtemp(join(tmpdir(), 'keel-portability-'));
  const company = await createCompany(t.api, { name: 'Cli Co', description: 'Made by the CLI test.' });
  companyId = company.id;
  await createAgent(t.api, companyId, { name: 'Worker', adapterConfig: { env: { API_TOKEN: SECRET } } });
  const issue = await t.api.post(`/api/companies/${companyId}/issues`, { title: 'Carry me', description: 'Across instances.' });
  expect(issue.status, issue.text).toBe(201);
});
afterAll(async () => {
  await t?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('keel company export / import', () => {
  it('exports a folder of keel.json and markdown files, without the secret', async () => {
    const out = join(work, 'pkg');
    const result = await keel('company', 'export', companyId, '--out', out);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain('Exporting company');
    expect(result.stdout).toContain('Exported Cli Co');
    expect(result.stdout).toContain('Inputs the import will need: worker.adapterConfig.env.API_TOKEN');
    const manifest = JSON.parse(await readFile(join(out, 'keel.json'), 'utf8'));
    expect(manifest.format).toBe('keel.company-package');
    expect(await readFile(join(out, 'COMPANY.md'), 'utf8')).toBe('Made by the CLI test.');
    const issuePath = manifest.manifest.parts.work.files[0];
    expect(await readFile(join(out, issuePath), 'utf8')).toBe('Across instances.');
    expect(JSON.stringify(manifest)).not.toContain(SECRET);
  });

  it('previews and imports with --json, naming missing inputs, and imports once per idempotency key', async () => {
    const out = join(work, 'pkg');
    const preview = await keel('company', 'import', out, '--preview', '--json');
    expect(preview.code, preview.stderr).toBe(0);
    expect(JSON.parse(preview.stdout).inputs.missing).toEqual(['worker.adapterConfig.env.API_TOKEN']);
    const refused = await keel('company', 'import', out, '--json');
    expect(refused.code).toBe(1);
    expect(refused.stderr + refused.stdout).toContain('portability_inputs_missing');
    const args = ['company', 'import', out, '--name', 'Cli Copy', '--input', 'worker.adapterConfig.env.API_TOKEN=new-value', '--idempotency-key', 'cli-1', '--json'];
    const imported = await keel(...args);
    expect(imported.code, imported.stderr).toBe(0);
    const answer = JSON.parse(imported.stdout);
    expect(answer.counts.create).toBeGreaterThanOrEqual(3);
    const again = await keel(...args);
    expect(JSON.parse(again.stdout)).toEqual(answer);
    const companies = (await t.api.get('/api/companies')).body.filter((c: any) => c.name === 'Cli Copy');
    expect(companies).toHaveLength(1);
    const issues = (await t.api.get(`/api/companies/${answer.companyId}/issues`)).body;
    expect(issues.map((i: any) => i.title)).toEqual(['Carry me']);
  });

  it('refuses replace on an import into a company with -C', async () => {
    const result = await keel('company', 'import', join(work, 'pkg'), '-C', companyId, '--collision', 'replace', '--json');
    expect(result.code).toBe(1);
    expect(result.stderr + result.stdout).toContain('replace_not_allowed');
  });
});
