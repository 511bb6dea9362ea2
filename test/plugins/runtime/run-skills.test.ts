import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestKernel } from '../../support/harness.ts';
import { processAgent, runWhen, startRuntimeWorld, wakeOk } from './helpers.ts';

/** An agent's desired skills reach its process runs: materialised under .keel/skills/<runtimeName>/, binary assets byte for byte. */
let t: TestKernel;
let company: any;
let scripts: string;
let source: string;
const PNG = Buffer.from([137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 255, 0, 128]);
const sha = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

beforeAll(async () => {
  ({ t, company, scripts } = await startRuntimeWorld('Run Skills Co'));
  source = await mkdtemp(join(tmpdir(), 'keel-run-skills-'));
  await mkdir(join(source, 'assets'), { recursive: true });
  await writeFile(join(source, 'SKILL.md'), '---\nname: Release Notes\ndescription: Writes release notes\n---\n# Release notes\n');
  await writeFile(join(source, 'references.md'), 'Keep a changelog.');
  await writeFile(join(source, 'assets', 'logo.png'), PNG);
}, 120_000);
afterAll(async () => {
  await t?.stop();
  if (source) await rm(source, { recursive: true, force: true });
});

describe('skills in process runs', () => {
  it('materialises the desired skills and the required base skill, text and binary files alike', async () => {
    const imported = await t.api.post(`/api/companies/${company.id}/skills/import`, { source });
    expect(imported.status, imported.text).toBe(201);
    const skill = imported.body.imported[0];
    const agent = await processAgent(t.api, company.id, join(scripts, 'skills.cjs'), { timeoutSec: 30 });
    const synced = await t.api.post(`/api/agents/${agent.id}/skills/sync`, { desiredSkills: [skill.key] });
    expect(synced.status, synced.text).toBe(200);
    const runtimeName = synced.body.entries.find((entry: any) => entry.key === skill.key).runtimeName;

    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    expect(run.status, JSON.stringify(run)).toBe('succeeded');
    const { dir, files } = run.resultJson;
    expect(dir).toBe('.keel/skills');
    expect(files[`${runtimeName}/SKILL.md`]).toBe(sha('---\nname: Release Notes\ndescription: Writes release notes\n---\n# Release notes\n'));
    expect(files[`${runtimeName}/references.md`]).toBe(sha('Keep a changelog.'));
    expect(files[`${runtimeName}/assets/logo.png`]).toBe(sha(PNG));
    // The required base skill comes along without being asked for.
    expect(Object.keys(files).some((path) => path.startsWith('service/') && path.endsWith('SKILL.md'))).toBe(true);

    const started = (await t.sql.query(`select details from activity_log where action = 'run.started' and entity_id = $1`, [run.id])).rows[0];
    expect(started.details.skills.materialised).toEqual(expect.arrayContaining([skill.key, 'keel/catalog/service']));
    expect(started.details.skills.omitted).toEqual([]);
  });

  it('names a desired skill the company no longer has, and still runs with the rest', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'keel-run-skills-gone-'));
    await writeFile(join(folder, 'SKILL.md'), '---\nname: Short Lived\ndescription: Soon gone\n---\n# Gone\n');
    const imported = (await t.api.post(`/api/companies/${company.id}/skills/import`, { source: folder })).body.imported[0];
    const agent = await processAgent(t.api, company.id, join(scripts, 'skills.cjs'), { timeoutSec: 30 });
    expect((await t.api.post(`/api/agents/${agent.id}/skills/sync`, { desiredSkills: [imported.key] })).status).toBe(200);
    await t.sql.query('delete from plugin_skills.company_skills where id = $1', [imported.id]);
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    expect(run.status).toBe('succeeded');
    expect(Object.keys(run.resultJson.files).some((path) => path.startsWith('short-lived/'))).toBe(false);
    const started = (await t.sql.query(`select details from activity_log where action = 'run.started' and entity_id = $1`, [run.id])).rows[0];
    expect(started.details.skills.omitted).toEqual([{ key: imported.key, reason: 'not installed in the company' }]);
    await rm(folder, { recursive: true, force: true });
  });
});
