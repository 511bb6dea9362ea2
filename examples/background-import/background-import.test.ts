import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestHost, type TestHost } from '@keel/sdk/testing';

const COMPANY = '00000000-0000-4000-8000-000000000001';
let host: TestHost;
const enqueued: Array<{ key: unknown; payload: unknown; options: unknown; companyId: string | null }> = [];
const progress: unknown[] = [];

beforeAll(async () => {
  host = await createTestHost(new URL('.', import.meta.url), { companyId: COMPANY });
  host.kernel.on('jobs.enqueue', ([key, payload, options], invocation) => {
    enqueued.push({ key, payload, options, companyId: invocation.companyId });
    return { jobId: '11111111-1111-4111-8111-111111111111', duplicate: false };
  });
  host.kernel.on('progress.report', ([report]) => { progress.push(report); return { recorded: true }; });
  host.db.on(/^insert into imports/, () => [{ id: '7' }]);
  host.db.on(/^update imports set job_id/, () => []);
  host.db.on(/^select id, name, lines/, () => [{ id: '7', name: 'contacts', lines: Array.from({ length: 250 }, (_, i) => `line ${i}`), imported: 0, status: 'queued', job_id: null }]);
  host.db.on(/^update imports set status/, () => []);
  host.db.on(/^insert into imported_lines/, () => []);
});
afterAll(() => host?.dispose());

describe('background-import (sdk/testing)', () => {
  it('enqueues one import job per import, with a singleton key, in the request company', async () => {
    const res = await host.callRoute('start', { params: { companyId: COMPANY }, body: { name: 'contacts', lines: ['a', 'b'] } });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ id: 7, jobId: '11111111-1111-4111-8111-111111111111', status: 'queued' });
    expect(enqueued).toEqual([{ key: 'import', payload: { importId: 7 }, options: { singletonKey: 'import-7' }, companyId: COMPANY }]);
  });

  it('imports in steps of 100 lines, reporting progress after each', async () => {
    const result = await host.runEnqueuedJob('import', { importId: 7 }, { companyId: COMPANY });
    expect(result).toEqual({ imported: 250 });
    expect(progress.map((p: any) => p.done)).toEqual([100, 200, 250]);
    expect(progress.at(-1)).toEqual({ done: 250, total: 250, message: 'imported 250 of 250 lines' });
  });
});
