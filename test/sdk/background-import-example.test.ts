import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';

const FOLDER = fileURLToPath(new URL('../../examples/background-import', import.meta.url));
let t: TestKernel;

beforeAll(async () => { t = await startTestKernel(); });
afterAll(async () => { await t?.stop(); });

describe('background-import example in a real kernel', () => {
  it('installs, enables, imports in the background and shows progress on the job', async () => {
    const installed = await t.api.post('/api/plugins/install', { localPath: FOLDER });
    expect(installed.status, installed.text).toBe(201);
    expect((await t.api.post('/api/plugins/background-import/enable', {})).status).toBe(200);
    const company = await createCompany(t.api);
    const lines = Array.from({ length: 250 }, (_, i) => `line ${i}`);
    const started = await t.api.post(`/api/plugins/background-import/companies/${company.id}/imports`, { name: 'contacts', lines });
    expect(started.status, started.text).toBe(202);
    const { id, jobId } = started.body;
    let job: any;
    for (let i = 0; i < 150; i++) {
      job = (await t.api.get(`/api/plugins/background-import/job-queue/${jobId}`)).body;
      if (job.state === 'succeeded' || job.state === 'failed') break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(job).toMatchObject({ jobKey: 'import', companyId: company.id, state: 'succeeded', payload: { importId: id }, progress: { done: 250, total: 250 } });
    const shown = await t.api.get(`/api/plugins/background-import/companies/${company.id}/imports/${id}`);
    expect(shown.body).toMatchObject({ id, total: 250, imported: 250, status: 'done', jobId });
    expect((await t.sql.query('select count(*)::int as n from plugin_background_import.imported_lines')).rows[0].n).toBe(250);
    // Another company does not see the import.
    const other = await createCompany(t.api);
    expect((await t.api.get(`/api/plugins/background-import/companies/${other.id}/imports/${id}`)).status).toBe(404);
  });
});
