import { afterAll, beforeAll, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { createAgentKey, createCompany } from '../support/fixtures.ts';

/**
 * What a create's answer says it created is readable from the very next request, also where a
 * plugin keeps state derived from it: no wait between the create and the read.
 */
let t: TestKernel;
beforeAll(async () => { t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS }); }, 120_000);
afterAll(async () => { await t?.stop(); });

it('an agent created with desired skills counts in the skill list, and has its runtime state and the bundled skills, at once', async () => {
  const company = await createCompany(t.api, { name: 'Skilled Co' });
  const skill = (await t.api.post(`/api/companies/${company.id}/skills`, { name: 'Release Notes' })).body;
  for (let i = 0; i < 5; i++) {
    const created = await t.api.post(`/api/companies/${company.id}/agents`, { name: `Writer ${i}`, desiredSkills: [skill.key] });
    expect(created.status, created.text).toBe(201);
    const listed = (await t.api.get(`/api/companies/${company.id}/skills`)).body as any[];
    expect(listed.find((entry) => entry.key === skill.key)?.attachedAgentCount).toBe(i + 1);
    expect(listed.map((entry) => entry.key)).toContain('keel/catalog/service');
    const state = await t.api.get(`/api/agents/${created.body.id}/runtime-state`);
    expect(state.status, state.text).toBe(200);
  }
});

it('an issue assigned at create is in the assignee\'s inbox at once', async () => {
  const company = await createCompany(t.api, { name: 'Inbox Co' });
  const agent = (await t.api.post(`/api/companies/${company.id}/agents`, { name: 'Assignee' })).body;
  const as = t.api.as(await createAgentKey(t.api, agent.id));
  for (let i = 0; i < 5; i++) {
    const issue = (await t.api.post(`/api/companies/${company.id}/issues`, { title: `Task ${i}`, assigneeAgentId: agent.id })).body;
    const inbox = await as.get('/api/agents/me/inbox-lite');
    expect(inbox.status, inbox.text).toBe(200);
    expect((inbox.body as any[]).map((item) => item.id)).toContain(issue.id);
  }
});
