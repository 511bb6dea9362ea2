import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type Api, type TestKernel } from '../support/harness.ts';
import { addMember, createAgent, createAgentKey, createCompany, insertUser } from '../support/fixtures.ts';
import { waitFor } from '../plugins/runtime/helpers.ts';
import { mountWorkspacesFolder } from '../plugins/environments/helpers.ts';
import { startConsoleBrowser, type ConsoleBrowser, openConsolePage, unexpectedErrors, poll, seriousViolationsOfPages, settled } from './browser.ts';

const UI_TIMEOUT = 20_000;

/**
 * The console's pages for project workspaces, execution workspaces and environments, an agent's
 * skill sync, an issue's work products and feedback votes, the company's feedback traces and
 * members' permission grants, in a real browser (Debian's Chromium, headless) against a real
 * kernel with the first-party plugins, as the local board. Every change is checked through the
 * API, not only on the page.
 */
describe('console: workspaces, agent skills, work products, feedback and member grants in a browser', () => {
  let t: TestKernel;
  let ui: ConsoleBrowser;
  let page: Page;
  let consoleErrors: string[] = [];
  let mount = '';
  let companyId = '';
  let agent: { id: string; name: string };
  let agentApi: Api;
  let projectId = '';
  let issueId = '';

  beforeAll(async () => {
    t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
    companyId = (await createCompany(t.api, { name: 'Workspace Works' })).id;
    agent = await createAgent(t.api, companyId, { name: 'Builder', adapterType: 'process', adapterConfig: { command: 'node' } });
    agentApi = t.api.as(await createAgentKey(t.api, agent.id));
    projectId = (await t.api.post(`/api/companies/${companyId}/projects`, { name: 'App' })).body.id;
    issueId = (await t.api.post(`/api/companies/${companyId}/issues`, { title: 'Ship the app', projectId })).body.id;
    // A folder the operator mounted for the company, where a local environment may have its root.
    mount = await realpath(await mkdtemp(`${tmpdir()}/keel-console-envs-`));
    await mountWorkspacesFolder(t, companyId, mount);
    ({ page, errors: consoleErrors } = ui = await startConsoleBrowser({ timeout: UI_TIMEOUT }));
  });
  afterAll(async () => {
    await ui?.close();
    await t?.stop();
    if (mount) await rm(mount, { recursive: true, force: true });
  });

  const workspacesOf = async () => (await t.api.get(`/api/projects/${projectId}/workspaces`)).body;

  it("creates, edits, makes primary and removes a project's workspaces, showing the API's refusals", async () => {
    await page.goto(`${t.url}/companies/${companyId}/projects/${projectId}`);
    await poll(() => page.getByText("No workspaces: say where the project's code lives.").count()).toBe(1);
    await page.locator('summary', { hasText: 'New workspace' }).click();
    const form = page.getByRole('form', { name: 'New workspace' });
    await form.getByLabel('Name').fill('main');
    await form.getByLabel(/^Working directory/).fill(`${mount}/app`);
    await form.getByLabel('Repository URL').fill('https://git.example.com/acme/app');
    await form.getByLabel('Repository ref').fill('main');
    await form.getByRole('button', { name: 'Add workspace' }).click();
    const list = page.getByRole('list', { name: 'Project workspaces' });
    await poll(() => list.textContent()).toContain('main');
    expect(await list.textContent()).toMatch(/mainprimary/);
    expect(await workspacesOf()).toMatchObject([{ name: 'main', cwd: `${mount}/app`, repoUrl: 'https://git.example.com/acme/app', repoRef: 'main', isPrimary: true, metadata: null }]);

    // The API's own words: a relative directory (schema) and credentials in the repository URL (422).
    await form.getByLabel('Name').fill('docs');
    await form.getByLabel(/^Working directory/).fill('relative/docs');
    await form.getByRole('button', { name: 'Add workspace' }).click();
    await poll(() => form.getByRole('alert').textContent()).toMatch(/^Invalid request body: cwd must match pattern/);
    await form.getByLabel(/^Working directory/).fill('');
    await form.getByLabel('Repository URL').fill('https://bob:hunter2@git.example.com/acme/docs');
    await form.getByRole('button', { name: 'Add workspace' }).click();
    await poll(() => form.getByRole('alert').textContent()).toBe('repoUrl must not contain a user name or password; use a secret for credentials');
    expect(await workspacesOf()).toHaveLength(1);

    await form.getByLabel('Repository URL').fill('https://git.example.com/acme/docs');
    await form.getByLabel('Metadata (JSON, optional)').fill('{"team": "docs"}');
    await form.getByRole('button', { name: 'Add workspace' }).click();
    await poll(() => list.textContent()).toContain('docs');
    const [main, docs] = await workspacesOf();
    expect(docs).toMatchObject({ name: 'docs', cwd: null, repoUrl: 'https://git.example.com/acme/docs', repoRef: null, isPrimary: false, metadata: { team: 'docs' } });

    await list.getByRole('button', { name: 'Make primary: docs' }).click();
    await waitFor(async () => (await workspacesOf()).find((ws: any) => ws.id === docs.id).isPrimary === true, 'docs to become primary');
    expect((await workspacesOf()).find((ws: any) => ws.id === main.id).isPrimary).toBe(false);

    await list.locator('summary', { hasText: 'Edit main' }).click();
    const edit = page.getByRole('form', { name: 'Edit workspace main' });
    await edit.getByLabel('Repository ref').fill('release');
    await edit.getByLabel('Repository URL').fill('');
    await edit.getByRole('button', { name: 'Save workspace' }).click();
    await waitFor(async () => (await workspacesOf()).find((ws: any) => ws.id === main.id).repoRef === 'release', 'the edit of main');
    // The emptied repository URL was cleared; the directory it kept stays.
    expect((await workspacesOf()).find((ws: any) => ws.id === main.id)).toMatchObject({ repoUrl: null, cwd: `${mount}/app`, repoRef: 'release' });

    await list.getByRole('button', { name: 'Remove workspace docs' }).click();
    await waitFor(async () => (await workspacesOf()).length === 1, 'the removal of docs');
    // The oldest remaining workspace became primary again.
    expect(await workspacesOf()).toMatchObject([{ id: main.id, isPrimary: true }]);
    await poll(() => list.textContent()).not.toContain('docs');
  }, 90_000);

  it('pages a project with many workspaces 50 at a time', async () => {
    const many = (await t.api.post(`/api/companies/${companyId}/projects`, { name: 'Monorepo' })).body.id;
    for (let index = 1; index <= 120; index++) {
      const res = await t.api.post(`/api/projects/${many}/workspaces`, { name: `pkg-${String(index).padStart(3, '0')}`, cwd: `/srv/mono/pkg-${index}` });
      expect(res.status, res.text).toBe(201);
    }
    await page.goto(`${t.url}/companies/${companyId}/projects/${many}`);
    const pager = page.getByRole('navigation', { name: 'Project workspaces pages' });
    await poll(() => pager.textContent()).toContain('Page 1 of 3 (120)');
    const list = page.getByRole('list', { name: 'Project workspaces' });
    expect(await list.locator(':scope > li').count()).toBe(50);
    await pager.getByRole('button', { name: 'Next' }).click();
    await pager.getByRole('button', { name: 'Next' }).click();
    await poll(() => pager.textContent()).toContain('Page 3 of 3 (120)');
    expect(await list.locator(':scope > li').count()).toBe(20);
    expect(await list.textContent()).toContain('pkg-120');
  }, 120_000);

  it("lists execution workspaces and environments, shows close readiness, and shows the API's refusal to close one that is not ready", async () => {
    const [primary] = await workspacesOf();
    const env = await t.api.post(`/api/companies/${companyId}/environments`, { name: 'Local runs', driver: 'local', config: { root: mount } });
    expect(env.status, env.text).toBe(201);
    const ready = await t.api.post(`/api/companies/${companyId}/execution-workspaces`, { projectWorkspaceId: primary.id, name: 'ready-copy' });
    expect(ready.status, ready.text).toBe(201);
    // A worktree outside the mounted folder cannot be read, so Keel refuses to close over it.
    const unread = await t.api.post(`/api/companies/${companyId}/execution-workspaces`, { projectWorkspaceId: primary.id, mode: 'git_worktree', cwd: '/srv/not-mounted', branch: 'feature/x', name: 'unread-tree' });
    expect(unread.status, unread.text).toBe(201);

    await page.goto(`${t.url}/companies/${companyId}/workspaces`);
    const list = page.getByRole('list', { name: 'Execution workspaces' });
    await poll(() => list.textContent()).toContain('unread-tree');
    expect(await list.textContent()).toMatch(/ready-copy\s*active\s*project primary · project App/);
    expect(await page.getByRole('list', { name: 'Environments' }).textContent()).toMatch(/Local runs\s*active\s*local · .*keel-console-envs-.* · at most 10 leases/);

    await list.getByRole('button', { name: 'Check readiness of unread-tree' }).click();
    const checks = page.getByRole('list', { name: 'Close readiness of unread-tree' });
    await poll(() => checks.textContent()).toMatch(/passed\s*no_active_leases/);
    expect(await checks.textContent()).toMatch(/failed\s*git_clean/);

    await list.getByRole('button', { name: 'Close unread-tree' }).click();
    const refusal = page.getByRole('list', { name: 'Why unread-tree cannot close' });
    await poll(() => refusal.textContent()).toMatch(/failed\s*git_clean/);
    expect(await list.getByRole('alert').first().textContent()).toBe('The execution workspace is not ready to close');
    expect((await t.api.get(`/api/execution-workspaces/${unread.body.id}`)).body.status).toBe('active');

    await list.getByRole('button', { name: 'Close ready-copy' }).click();
    await waitFor(async () => (await t.api.get(`/api/execution-workspaces/${ready.body.id}`)).body.status === 'closed', 'the close of ready-copy');
    await poll(() => list.textContent()).toMatch(/ready-copy\s*closed/);
    expect(await list.getByRole('button', { name: 'Close ready-copy' }).count()).toBe(0);

    await page.getByLabel('Status').selectOption('closed');
    await poll(() => list.textContent()).not.toContain('unread-tree');
    expect(await list.textContent()).toContain('ready-copy');
  }, 90_000);

  it("syncs an agent's skills with progress and result, and shows the API's refusal of a skill removed meanwhile", async () => {
    for (const name of ['Release notes', 'Triage']) {
      const res = await t.api.post(`/api/companies/${companyId}/skills`, { name });
      expect(res.status, res.text).toBe(201);
    }
    const skillsOf = async () => (await t.api.get(`/api/agents/${agent.id}/skills`)).body;
    const releaseKey = (await skillsOf()).entries.find((entry: any) => entry.runtimeName === 'release-notes').key;
    await page.goto(`${t.url}/companies/${companyId}/agents/${agent.id}`);
    const skills = page.getByRole('form', { name: 'Agent skills' });
    await poll(() => skills.getByRole('list', { name: 'Skills of the agent' }).textContent()).toContain('release-notes');
    expect(await skills.getByLabel('release-notes').isChecked()).toBe(false);
    await skills.getByLabel('release-notes').check();
    await skills.getByRole('button', { name: 'Sync skills' }).click();
    await poll(() => skills.getByRole('status').textContent()).toMatch(new RegExp(`^Synced: \\d+ desired skill\\(s\\); added .*${releaseKey}.*; removed none\\.$`));
    expect((await skillsOf()).desiredSkills).toContain(releaseKey);
    await poll(() => skills.getByLabel('release-notes').isChecked()).toBe(true);
    await poll(() => skills.getByRole('list', { name: 'Skills of the agent' }).textContent()).toMatch(/release-notes\s*installed/);

    // Triage is chosen on the page, then removed from the company before the sync reaches the API.
    await skills.getByLabel('triage').check();
    const triage = (await t.api.get(`/api/companies/${companyId}/skills`)).body.find((skill: any) => skill.slug === 'triage');
    expect((await t.api.delete(`/api/companies/${companyId}/skills/${triage.id}`)).status).toBe(200);
    await skills.getByRole('button', { name: 'Sync skills' }).click();
    await poll(() => skills.getByRole('alert').textContent()).toMatch(/^Invalid company skill selection \(.*triage.*\)$/);
    expect((await skillsOf()).desiredSkills).toContain(releaseKey);

    await skills.getByLabel('release-notes').uncheck();
    await skills.getByLabel('triage').uncheck();
    await skills.getByRole('button', { name: 'Sync skills' }).click();
    await poll(() => skills.getByRole('status').textContent()).toMatch(new RegExp(`removed .*${releaseKey}`));
    expect((await skillsOf()).desiredSkills).not.toContain(releaseKey);
  }, 90_000);

  it("records and edits an issue's work products, showing the API's refusal of a bad URL", async () => {
    const productsOf = async () => (await t.api.get(`/api/issues/${issueId}/work-products`)).body;
    await page.goto(`${t.url}/companies/${companyId}/issues/${issueId}`);
    await poll(() => page.getByText('No work products yet.').count()).toBe(1);
    await page.locator('summary', { hasText: 'New work product' }).click();
    const form = page.getByRole('form', { name: 'New work product' });
    await form.getByLabel('Type').selectOption('pull_request');
    await form.getByLabel('Title').fill('PR 42: the app');
    await form.getByLabel('Status').selectOption('ready_for_review');
    await form.getByLabel('Review state').selectOption('needs_board_review');
    await form.getByRole('textbox', { name: 'URL', exact: true }).fill('git.example.com/pr/42');
    await form.getByRole('button', { name: 'Record work product' }).click();
    await poll(() => form.getByRole('alert').textContent()).toMatch(/^Invalid request body: url must match pattern/);
    expect(await productsOf()).toEqual([]);

    await form.getByRole('textbox', { name: 'URL', exact: true }).fill('https://git.example.com/pr/42');
    await form.getByLabel('External id').fill('42');
    await form.getByLabel('Primary work product of the issue').check();
    await form.getByRole('button', { name: 'Record work product' }).click();
    const list = page.getByRole('list', { name: 'Work products' });
    await poll(() => list.textContent()).toContain('PR 42: the app');
    expect(await list.textContent()).toMatch(/pull request\s*ready for review\s*review: needs board review · primary/);
    const [product] = await productsOf();
    expect(product).toMatchObject({ type: 'pull_request', title: 'PR 42: the app', status: 'ready_for_review', reviewState: 'needs_board_review', url: 'https://git.example.com/pr/42', externalId: '42', isPrimary: true });

    await list.locator('summary', { hasText: 'Edit PR 42: the app' }).click();
    const edit = page.getByRole('form', { name: 'Edit work product PR 42: the app' });
    await edit.getByLabel('Status').selectOption('merged');
    await edit.getByLabel('Review state').selectOption('approved');
    await edit.getByRole('button', { name: 'Save work product' }).click();
    await waitFor(async () => (await productsOf())[0].status === 'merged', 'the work product edit');
    expect((await productsOf())[0]).toMatchObject({ reviewState: 'approved', url: 'https://git.example.com/pr/42', isPrimary: true });
    await poll(() => list.textContent()).toMatch(/merged\s*review: approved/);
  }, 90_000);

  it('votes on agent comments and document revisions with a reason and sharing, changes and withdraws a vote, and lists the traces with filters', async () => {
    const tracesOf = async (query = '') => (await t.api.get(`/api/companies/${companyId}/feedback-traces?includePayload=true${query}`)).body.traces;
    const agentComment = (await agentApi.post(`/api/issues/${issueId}/comments`, { body: 'I opened the pull request.' })).body;
    await t.api.post(`/api/issues/${issueId}/comments`, { body: 'A board note, not agent output.' });
    const doc = await agentApi.put(`/api/issues/${issueId}/documents/plan`, { title: 'Plan', format: 'markdown', body: '# Plan\n\nShip it.' });
    expect(doc.status, doc.text).toBe(201);

    await page.goto(`${t.url}/companies/${companyId}/issues/${issueId}`);
    const votes = page.getByRole('group', { name: /^Feedback on comment/ });
    await poll(() => votes.count()).toBe(1);
    await votes.locator('summary', { hasText: 'Reason and sharing' }).click();
    await votes.getByLabel('Reason (optional)').fill('Clear and linked.');
    await votes.getByLabel('Allow this feedback to be shared').check();
    await votes.getByRole('button', { name: 'Thumbs up' }).click();
    await poll(() => votes.textContent()).toContain('your vote: up · pending');
    expect(await votes.getByRole('button', { name: 'Thumbs up' }).getAttribute('aria-pressed')).toBe('true');
    expect(await tracesOf()).toMatchObject([{ targetType: 'comment', targetId: agentComment.id, vote: 'up', reason: 'Clear and linked.', shareable: true, status: 'pending', authorAgentId: agent.id }]);

    await votes.getByLabel('Allow this feedback to be shared').uncheck();
    await votes.getByRole('button', { name: 'Thumbs down' }).click();
    await poll(() => votes.textContent()).toContain('your vote: down · local');
    expect(await tracesOf()).toMatchObject([{ targetId: agentComment.id, vote: 'down', shareable: false, status: 'local', reason: 'Clear and linked.' }]);

    await page.getByRole('button', { name: 'Plan' }).click();
    await page.locator('summary', { hasText: '1 revisions' }).click();
    const revisionVotes = page.getByRole('group', { name: 'Feedback on plan revision 1' });
    await revisionVotes.getByRole('button', { name: 'Thumbs up' }).click();
    await poll(() => revisionVotes.textContent()).toContain('your vote: up · local');
    expect((await tracesOf('&targetType=document_revision'))).toMatchObject([{ vote: 'up', payload: { documentKey: 'plan', revisionNumber: 1, body: '# Plan\n\nShip it.' } }]);

    // The company's traces, newest first, with their filters and the API's refusal of a bad range.
    await page.goto(`${t.url}/companies/${companyId}/feedback`);
    const list = page.getByRole('list', { name: 'Feedback traces' });
    await poll(() => list.locator(':scope > li').count()).toBe(2);
    expect(await list.locator(':scope > li').first().textContent()).toMatch(/thumbs up.*document plan revision 1/);
    expect(await list.textContent()).toContain('Reason: Clear and linked.');
    await page.locator('summary', { hasText: 'Filters' }).click();
    const filters = page.getByRole('form', { name: 'Feedback filters' });
    await filters.getByLabel('Vote').selectOption('down');
    await filters.getByRole('button', { name: 'Apply filters' }).click();
    await poll(() => list.locator(':scope > li').count()).toBe(1);
    expect(await list.textContent()).toContain('I opened the pull request.');
    await filters.getByLabel('Vote').selectOption('');
    await filters.getByLabel('From (day, UTC)').fill('2026-02-01');
    await filters.getByLabel('Before (day, UTC)').fill('2026-01-01');
    await filters.getByRole('button', { name: 'Apply filters' }).click();
    await poll(() => page.getByRole('alert').first().textContent()).toBe('from must not be after to');

    await page.goto(`${t.url}/companies/${companyId}/issues/${issueId}`);
    const again = page.getByRole('group', { name: /^Feedback on comment/ });
    await poll(() => again.textContent()).toContain('your vote: down');
    await again.getByRole('button', { name: 'Withdraw vote' }).click();
    await poll(() => again.getByRole('button', { name: 'Withdraw vote' }).count()).toBe(0);
    expect(await tracesOf('&targetType=comment')).toEqual([]);
  }, 120_000);

  it('pages the feedback traces 100 at a time from the server', async () => {
    const busy = (await t.api.post(`/api/companies/${companyId}/issues`, { title: 'Many opinions' })).body.id;
    for (let index = 0; index < 105; index++) {
      const written = await agentApi.post(`/api/issues/${busy}/comments`, { body: `Update ${index}` });
      expect(written.status, written.text).toBe(201);
      const voted = await t.api.post(`/api/issues/${busy}/feedback`, { targetType: 'comment', targetId: written.body.id, vote: index % 2 ? 'up' : 'down' });
      expect(voted.status, voted.text).toBe(201);
    }
    let total = 0;
    for (let cursor: string | null = null, first = true; first || cursor; first = false) {
      const got: any = (await t.api.get(`/api/companies/${companyId}/feedback-traces?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)).body;
      total += got.traces.length;
      cursor = got.nextCursor;
    }
    expect(total).toBeGreaterThan(105);
    await page.goto(`${t.url}/companies/${companyId}/feedback`);
    const list = page.getByRole('list', { name: 'Feedback traces' });
    await poll(() => list.locator(':scope > li').count()).toBe(100);
    // Newest first: the last vote cast heads the list.
    expect(await list.locator(':scope > li').first().textContent()).toContain('Update 104');
    await page.getByRole('button', { name: 'Load 100 more' }).click();
    await poll(() => list.locator(':scope > li').count()).toBe(total);
    expect(await page.getByRole('button', { name: 'Load 100 more' }).count()).toBe(0);
  }, 120_000);

  it("lists the company's members, grants one a permission and revokes it, showing the API's refusal once a member is gone", async () => {
    const memberId = await insertUser(t);
    await addMember(t, companyId, memberId, 'owner');
    const leaverId = await insertUser(t);
    await addMember(t, companyId, leaverId);
    const emailOf = async (id: string) => (await t.sql.query('select email from users where id = $1', [id])).rows[0].email;
    const member = `Test User <${await emailOf(memberId)}>`;
    const leaver = `Test User <${await emailOf(leaverId)}>`;
    const grantsOf = async () => (await t.api.get(`/api/companies/${companyId}/permission-grants?principalType=user`)).body;
    await page.goto(`${t.url}/companies/${companyId}/members`);
    const members = page.getByRole('list', { name: 'Members' });
    await poll(() => members.locator(':scope > li').count()).toBe(2);
    const first = await members.locator(':scope > li').first().textContent();
    expect(first).toContain(member);
    expect(first).toMatch(/owner\s*active\s*no grants/);

    await members.getByRole('button', { name: `Permissions of ${member}` }).click();
    await poll(() => page.getByText(`No grants: ${member}`).count()).toBe(1);
    const form = page.getByRole('form', { name: 'Add a permission grant' });
    await form.getByLabel('Permission').selectOption('users:invite');
    await form.getByRole('button', { name: 'Grant' }).click();
    const grants = page.getByRole('list', { name: 'Permission grants' });
    await poll(() => grants.textContent()).toContain('users:invite');
    expect(await grantsOf()).toMatchObject([{ principalType: 'user', principalId: memberId, permissionKey: 'users:invite', scope: null }]);
    await poll(() => members.locator(':scope > li').first().textContent()).toContain('users:invite · since');

    // The second member leaves the company (their membership is removed) while the page still shows them.
    await members.getByRole('button', { name: `Permissions of ${leaver}` }).click();
    await poll(() => page.getByText(`No grants: ${leaver}`).count()).toBe(1);
    await t.sql.query("delete from company_memberships where company_id = $1 and principal_type = 'user' and principal_id = $2", [companyId, leaverId]);
    await form.getByRole('button', { name: 'Grant' }).click();
    await poll(() => form.getByRole('alert').textContent()).toBe('principalId does not name a member of this company');
    expect(await grantsOf()).toHaveLength(1);

    await members.getByRole('button', { name: `Permissions of ${member}` }).click();
    await grants.getByRole('button', { name: 'Remove users:invite' }).click();
    await poll(() => page.getByText(`No grants: ${member}`).count()).toBe(1);
    expect(await grantsOf()).toEqual([]);
    await poll(() => members.locator(':scope > li').first().textContent()).toContain('no grants');
  }, 90_000);

  const newPages = () => [
    `/companies/${companyId}/projects/${projectId}`, `/companies/${companyId}/workspaces`, `/companies/${companyId}/agents/${agent.id}`,
    `/companies/${companyId}/issues/${issueId}`, `/companies/${companyId}/feedback`, `/companies/${companyId}/members`,
  ];

  it('fits these pages on a 390-wide screen without sideways scrolling', async () => {
    const { context: phoneContext, page: phone } = await openConsolePage(ui.browser, { viewport: { width: 390, height: 844 }, timeout: UI_TIMEOUT });
    try {
      for (const path of newPages()) {
        await phone.goto(t.url + path);
        await phone.getByRole('heading', { level: 1 }).first().waitFor();
        await settled(phone);
        expect({ path, width: await phone.evaluate(() => document.documentElement.scrollWidth) }).toEqual({ path, width: 390 });
      }
    } finally {
      await phoneContext.close();
    }
  }, 90_000);

  it('passes axe-core with no serious violations on the project, workspaces, agent, issue, feedback and members pages', async () => {
    expect(await seriousViolationsOfPages(page, t.url, newPages())).toEqual({});
  }, 90_000);

  it('logged no errors in the browser console', () => {
    // A refused form is an error answer the page shows; the browser logs the failed request itself.
    expect(unexpectedErrors(consoleErrors)).toEqual([]);
  });
});
