import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../../test/support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../../test/support/harness.ts';
import { installAndEnable } from '../../test/support/plugins.ts';

const FOLDER = fileURLToPath(new URL('.', import.meta.url));
let t: TestKernel;
let companyId: string;

async function notifications(): Promise<Array<{ event_id: string; task_id: string; message: string }>> {
  return (await t.api.get(`/api/plugins/task-assignments/companies/${companyId}/notifications`)).body.notifications;
}

beforeAll(async () => {
  t = await startTestKernel();
  await installAndEnable(t, FOLDER);
  companyId = (await createCompany(t.api)).id;
});
afterAll(async () => { await t?.stop(); });

describe('task-assignments (installed through HTTP)', () => {
  it('publishes an event with each assignment and notifies once per event, in assignment order', async () => {
    const first = await t.api.post(`/api/plugins/task-assignments/companies/${companyId}/tasks/T-1/assign`, { assignee: 'ada' });
    expect(first.status, first.text).toBe(200);
    const second = await t.api.post(`/api/plugins/task-assignments/companies/${companyId}/tasks/T-1/assign`, { assignee: 'grace' });
    const until = Date.now() + 15_000;
    let seen = await notifications();
    while (seen.length < 2 && Date.now() < until) { await new Promise((r) => setTimeout(r, 50)); seen = await notifications(); }
    expect(seen).toEqual([
      { event_id: first.body.eventId, task_id: 'T-1', message: "T-1 is now ada's" },
      { event_id: second.body.eventId, task_id: 'T-1', message: "T-1 is now grace's (was ada's)" },
    ]);
  });
});
