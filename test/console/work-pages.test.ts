import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { createAgent, createCompany } from '../support/fixtures.ts';
import { waitFor } from '../plugins/runtime/helpers.ts';
import { startConsoleBrowser, type ConsoleBrowser, unexpectedErrors, poll, seriousViolationsOfPages } from './browser.ts';

const UI_TIMEOUT = 20_000;

/**
 * The console's pages for projects, goals, an agent's permission grants and project budgets, in
 * a real browser (Debian's Chromium, headless) against a real kernel with the first-party
 * plugins, as the local board. Every change is checked through the API, not only on the page.
 */
describe('console: projects, goals, grants and project budgets in a browser', () => {
  let t: TestKernel;
  let ui: ConsoleBrowser;
  let page: Page;
  let consoleErrors: string[] = [];
  let companyId = '';
  let lead: { id: string; name: string };
  let projectId = '';

  beforeAll(async () => {
    t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
    companyId = (await createCompany(t.api, { name: 'Project Works' })).id;
    lead = await createAgent(t.api, companyId, { name: 'Lead' });
    ({ page, errors: consoleErrors } = ui = await startConsoleBrowser({ timeout: UI_TIMEOUT }));
  });
  afterAll(async () => {
    await ui?.close();
    await t?.stop();
  });

  it('creates a project through the form and lists it with its status, lead and target date', async () => {
    await page.goto(`${t.url}/companies/${companyId}/projects`);
    await poll(() => page.getByText('No projects yet.').count()).toBe(1);
    await page.locator('summary', { hasText: 'New project' }).click();
    const form = page.getByRole('form', { name: 'New project' });
    await form.getByLabel('Name').fill('Launch site');
    await form.getByLabel('Description').fill('The public site for the launch.');
    await form.getByLabel('Status').selectOption('planned');
    await form.getByLabel('Lead agent').selectOption({ label: 'Lead' });
    await form.getByLabel('Target date').fill('2027-03-31');
    await form.getByLabel(/^Color/).fill('#3366cc');
    await form.getByRole('button', { name: 'Create project' }).click();
    const list = page.getByRole('list', { name: 'Projects' });
    await poll(() => list.textContent()).toContain('Launch site');
    expect(await list.textContent()).toMatch(/planned.*lead Lead · target 2027-03-31/);
    const stored = (await t.api.get(`/api/companies/${companyId}/projects`)).body;
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ name: 'Launch site', description: 'The public site for the launch.', status: 'planned', leadAgentId: lead.id, targetDate: '2027-03-31', color: '#3366cc' });
    projectId = stored[0].id;
  }, 60_000);

  it("shows the API's message when the project form is refused, and creates nothing", async () => {
    await page.goto(`${t.url}/companies/${companyId}/projects`);
    await page.locator('summary', { hasText: 'New project' }).click();
    const form = page.getByRole('form', { name: 'New project' });
    await form.getByLabel('Name').fill('Off colour');
    await form.getByLabel(/^Color/).fill('blue');
    await form.getByRole('button', { name: 'Create project' }).click();
    await poll(() => form.getByRole('alert').textContent()).toMatch(/^Invalid request body: color must match pattern/);
    // A name of spaces only reaches the API empty, and is refused there.
    await form.getByLabel(/^Color/).fill('');
    await form.getByLabel('Name').fill('   ');
    await form.getByRole('button', { name: 'Create project' }).click();
    await poll(() => form.getByRole('alert').textContent()).toMatch(/^Invalid request body: name must NOT have fewer than 1 characters/);
    expect((await t.api.get(`/api/companies/${companyId}/projects`)).body).toHaveLength(1);
    // An unknown project shows the API's answer.
    await page.goto(`${t.url}/companies/${companyId}/projects/00000000-0000-4000-8000-000000000000`);
    await poll(() => page.getByRole('alert').textContent()).toBe('Project not found');
  }, 60_000);

  it("opens the project, changes its status (kept by the API), archives and unarchives it, and lists the project's issues", async () => {
    const issue = await t.api.post(`/api/companies/${companyId}/issues`, { title: 'Write the landing copy', projectId });
    expect(issue.status, issue.text).toBe(201);
    await t.api.post(`/api/companies/${companyId}/issues`, { title: 'Not in the project' });
    await page.goto(`${t.url}/companies/${companyId}/projects`);
    await page.getByRole('link', { name: 'Launch site' }).click();
    await page.waitForURL(new RegExp(`/projects/${projectId}$`));
    await poll(() => page.getByRole('heading', { level: 1 }).textContent()).toContain('Launch site');
    const issues = page.getByRole('list', { name: 'Project issues' });
    await poll(() => issues.textContent()).toContain('Write the landing copy');
    expect(await issues.textContent()).not.toContain('Not in the project');

    const edit = page.getByRole('form', { name: 'Edit project' });
    await edit.getByLabel('Status').selectOption('in_progress');
    await edit.getByRole('button', { name: 'Save project' }).click();
    await waitFor(async () => (await t.api.get(`/api/projects/${projectId}`)).body.status === 'in_progress', 'the status change');
    await poll(() => page.locator('.title-row .badge').first().textContent()).toBe('in progress');
    // The other fields were sent as they were, so they are unchanged.
    expect((await t.api.get(`/api/projects/${projectId}`)).body).toMatchObject({ leadAgentId: lead.id, targetDate: '2027-03-31', color: '#3366cc' });

    await page.getByRole('button', { name: 'Archive' }).click();
    await waitFor(async () => (await t.api.get(`/api/projects/${projectId}`)).body.archivedAt !== null, 'the archive');
    await page.getByRole('button', { name: 'Unarchive' }).click();
    await waitFor(async () => (await t.api.get(`/api/projects/${projectId}`)).body.archivedAt === null, 'the unarchive');

    // An issue opened from the project page is the project's.
    await issues.getByRole('link', { name: /Write the landing copy/ }).click();
    await page.waitForURL(new RegExp(`/issues/${issue.body.id}$`));
  }, 60_000);

  it('creates a goal, changes its status, and shows the refusal of a goal placed under itself', async () => {
    await page.goto(`${t.url}/companies/${companyId}/goals`);
    await page.locator('summary', { hasText: 'New goal' }).click();
    const form = page.getByRole('form', { name: 'New goal' });
    await form.getByLabel('Title').fill('Ship the launch');
    await form.getByLabel('Level').selectOption('company');
    await form.getByLabel('Owner agent').selectOption({ label: 'Lead' });
    await form.getByRole('button', { name: 'Create goal' }).click();
    const list = page.getByRole('list', { name: 'Goals' });
    await poll(() => list.textContent()).toContain('Ship the launch');
    const goal = (await t.api.get(`/api/companies/${companyId}/goals`)).body[0];
    expect(goal).toMatchObject({ title: 'Ship the launch', level: 'company', status: 'planned', ownerAgentId: lead.id });

    await list.getByLabel('Status of Ship the launch').selectOption('active');
    await waitFor(async () => (await t.api.get(`/api/goals/${goal.id}`)).body.status === 'active', 'the goal status change');

    await list.locator('summary', { hasText: 'Edit Ship the launch' }).click();
    const edit = page.getByRole('form', { name: 'Edit goal Ship the launch' });
    await edit.getByLabel('Title').fill('Ship the launch well');
    await edit.getByLabel('Parent goal').selectOption({ label: 'Ship the launch' });
    await edit.getByRole('button', { name: 'Save goal' }).click();
    await poll(() => edit.getByRole('alert').textContent()).toMatch(/goal/i);
    expect((await t.api.get(`/api/goals/${goal.id}`)).body).toMatchObject({ title: 'Ship the launch', parentId: null });

    await edit.getByLabel('Parent goal').selectOption('');
    await edit.getByRole('button', { name: 'Save goal' }).click();
    await waitFor(async () => (await t.api.get(`/api/goals/${goal.id}`)).body.title === 'Ship the launch well', 'the goal title change');
    await poll(() => list.textContent()).toContain('Ship the launch well');
  }, 60_000);

  it("adds a permission grant to an agent and removes it, showing the API's refusal of a scoped grant without a scope", async () => {
    const grantsOf = async () => (await t.api.get(`/api/companies/${companyId}/permission-grants?principalType=agent&principalId=${lead.id}`)).body;
    await page.goto(`${t.url}/companies/${companyId}/agents/${lead.id}`);
    await poll(() => page.getByText('No grants: Lead').count()).toBe(1);
    const form = page.getByRole('form', { name: 'Add a permission grant' });
    await form.getByLabel('Permission').selectOption('tasks:assign');
    await form.getByRole('button', { name: 'Grant' }).click();
    const list = page.getByRole('list', { name: 'Permission grants' });
    await poll(() => list.textContent()).toContain('tasks:assign');
    expect(await grantsOf()).toMatchObject([{ principalType: 'agent', principalId: lead.id, permissionKey: 'tasks:assign', scope: null }]);

    await form.getByLabel('Permission').selectOption('tasks:assign_scope');
    await form.getByRole('button', { name: 'Grant' }).click();
    await poll(() => form.getByRole('alert').textContent()).toBe('tasks:assign_scope requires a non-empty scope');
    expect(await grantsOf()).toHaveLength(1);

    await list.getByRole('button', { name: 'Remove tasks:assign' }).click();
    await poll(() => page.getByText('No grants: Lead').count()).toBe(1);
    expect(await grantsOf()).toEqual([]);
  }, 60_000);

  it('creates a project budget policy on the costs page and lists it by the project\'s name', async () => {
    await page.goto(`${t.url}/companies/${companyId}/costs`);
    const form = page.getByRole('form', { name: 'Project budget' });
    await form.getByLabel(/^Project/).selectOption({ label: 'Launch site' });
    await form.getByLabel('Budget in dollars').fill('25');
    await form.getByLabel('Warn at percent').fill('60');
    await form.getByRole('button', { name: 'Set project budget' }).click();
    const list = page.getByRole('list', { name: 'Budget policies' });
    await poll(() => list.textContent()).toContain('Project Launch site');
    expect(await list.textContent()).toMatch(/Project Launch site\s*\$0\.00 of \$25\.00 \(0%\)lifetime · warn at 60% · hard stop/);
    const { policies } = (await t.api.get(`/api/companies/${companyId}/budgets/overview`)).body;
    expect(policies.filter((policy: any) => policy.scopeType === 'project')).toMatchObject([
      { scopeId: projectId, amount: 2500, windowKind: 'lifetime', warnPercent: 60, hardStopEnabled: true, isActive: true },
    ]);
  }, 60_000);

  it('passes axe-core with no serious violations on the projects, project, goals, agent and costs pages', async () => {
    const paths = [`/companies/${companyId}/projects`, `/companies/${companyId}/projects/${projectId}`, `/companies/${companyId}/goals`, `/companies/${companyId}/agents/${lead.id}`, `/companies/${companyId}/costs`];
    expect(await seriousViolationsOfPages(page, t.url, paths)).toEqual({});
  }, 60_000);

  it('logged no errors in the browser console', () => {
    // A refused form is an error answer the page shows; the browser logs the failed request itself.
    expect(unexpectedErrors(consoleErrors)).toEqual([]);
  });
});
