import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable, installPlugin } from '../support/plugins.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/point-fx', import.meta.url));
let t: TestKernel;
let company: any;

beforeAll(async () => {
  t = await startTestKernel();
  company = await createCompany(t.api, { name: 'Points' });
}, 120_000);
afterAll(async () => { await t?.stop(); });

const agents = async () => (await t.sql.query('select count(*)::int as n from agents where company_id = $1', [company.id])).rows[0].n;
const create = (desiredSkills: string[]) => t.api.post(`/api/companies/${company.id}/agents`, { name: 'Pointed', desiredSkills });

describe('kernel points', () => {
  it('are not consulted while no plugin answers them: the kernel stores what it was given', async () => {
    const res = await create(['a']);
    expect(res.status).toBe(201);
    expect(res.body.desiredSkills).toEqual(['a']);
  });

  it('are not consulted for a plugin installed without the kernel.points grant', async () => {
    await installPlugin(t, FIXTURE);
    const enabled = await t.api.post('/api/plugins/point-fx/enable', { grant: ['services.provide'] });
    // Enabling without a capability the manifest declares is refused or leaves the point unanswered; either way nothing is rewritten.
    if (enabled.status === 200) {
      expect((await create(['b'])).body.desiredSkills).toEqual(['b']);
      await t.api.post('/api/plugins/point-fx/disable', {});
    }
  });

  it("store the plugin's answer, asked with caller kernel, the request's actor and company", async () => {
    const enabled = await t.api.post('/api/plugins/point-fx/enable', {});
    expect(enabled.status, enabled.text).toBe(200);
    expect((await create(['x', 'y'])).body.desiredSkills).toEqual(['fx/x', 'fx/y']);
    expect((await create(['who'])).body.desiredSkills).toEqual([`kernel:user:${company.id}`]);
  });

  it("answer the plugin's refusal with its status, code, message and details, and create nothing", async () => {
    const before = await agents();
    const refused = await create(['refuse']);
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ error: 'refused by the fixture', code: 'fx_refused', details: { why: 'asked to', plugin: 'point-fx', point: 'agent.desired-skills' } });
    const odd = await create(['odd-code']);
    // The SDK already answers a code that is not one as plugin_error; the host would make it plugin_point_refused.
    expect(odd.status, odd.text).toBe(403);
    expect(odd.body).toMatchObject({ error: 'refused with an odd code', code: 'plugin_error' });
    expect(await agents()).toBe(before);
  });

  it('fail closed (503 plugin_point_failed) on a 5xx, an answer outside the schema and a timeout', async () => {
    const before = await agents();
    for (const reference of ['server-error', 'bad-answer', 'slow']) {
      const res = await create([reference]);
      expect(res.status, reference).toBe(503);
      expect(res.body).toMatchObject({ error: 'Point fixture (point-fx) could not answer agent.desired-skills', code: 'plugin_point_failed', details: { plugin: 'point-fx', point: 'agent.desired-skills' } });
    }
    expect(await agents()).toBe(before);
  });

  it('are refused in a manifest naming a service the plugin does not provide, or an unknown point', async () => {
    const manifest = JSON.parse(await import('node:fs/promises').then((fs) => fs.readFile(`${FIXTURE}/plugin.json`, 'utf8')));
    const { validateManifest } = await import('../../sdk/manifest/validate-manifest.ts');
    expect(() => validateManifest({ ...manifest, kernelPoints: [{ point: 'agent.desired-skills', service: 'missing' }] })).toThrow(/kernelPoints.0.service/);
    expect(() => validateManifest({ ...manifest, kernelPoints: [{ point: 'company.anything', service: 'answer' }] })).toThrow(/kernelPoints/);
    expect(() => validateManifest({ ...manifest, capabilities: manifest.capabilities.filter((c: any) => c.id !== 'kernel.points') })).toThrow(/kernel.points/);
  });

  it('stop answering when the plugin is disabled', async () => {
    expect((await t.api.post('/api/plugins/point-fx/disable', {})).status).toBe(200);
    expect((await create(['z'])).body.desiredSkills).toEqual(['z']);
  });
});
