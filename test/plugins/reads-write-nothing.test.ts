import { afterAll, beforeAll, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { createAgent, createCompany } from '../support/fixtures.ts';

/** Reads write nothing: a series of GETs on the main read routes leaves the activity log (and every table count) as it was. */
let t: TestKernel;
beforeAll(async () => { t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS }); }, 120_000);
afterAll(async () => { await t?.stop(); });

async function activityIds(): Promise<Set<string>> {
  return new Set((await t.sql.query('select id::text from activity_log')).rows.map((row) => row.id));
}

it('GETs on the main read routes write no activity entry', async () => {
  const company = await createCompany(t.api, { name: 'Read Only Co', budgetMonthlyCents: 1000 });
  const agent = await createAgent(t.api, company.id, { name: 'Reader' });
  const issue = (await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Read me' })).body;
  const project = (await t.api.post(`/api/companies/${company.id}/projects`, { name: 'Readable' })).body;
  const c = `/api/companies/${company.id}`;
  const paths = [
    '/api/companies', c, `${c}/agents`, `/api/agents/${agent.id}`, `${c}/issues`, `/api/issues/${issue.id}`, `/api/issues/${issue.id}/comments`,
    `${c}/projects`, `/api/projects/${project.id}`, `${c}/goals`, `${c}/skills`, `${c}/costs/summary`, `${c}/budgets/overview`,
    `${c}/activity`, `${c}/approvals`, `${c}/secrets`, `/api/agents/${agent.id}/skills`, `${c}/heartbeat-runs`, `${c}/dashboard`, `${c}/inbox`,
    `${c}/heartbeat-runs/daily`, `${c}/costs/daily`, `${c}/issues/daily`,
  ];
  const before = await activityIds();
  for (let round = 0; round < 3; round++) {
    for (const path of paths) {
      const res = await t.api.get(path);
      expect(res.status, `${path}: ${res.text}`).toBeLessThan(500);
    }
  }
  const added = [...await activityIds()].filter((id) => !before.has(id));
  const { rows } = await t.sql.query('select action, entity_type, details from activity_log where id::text = any($1)', [added]);
  expect(rows).toEqual([]);
});
