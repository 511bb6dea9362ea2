import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backupFileName } from '../../kernel/backup/retention.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type Api, type TestKernel } from '../support/harness.ts';
import { boardToken, createCompany } from '../support/fixtures.ts';
import { launchChromium, poll, seriousViolationsOfPages, settled, trackRequests, unexpectedErrors } from './browser.ts';

const PAGE_PROBE = fileURLToPath(new URL('./fixtures/page-probe', import.meta.url));
const USAGE_CALLER = fileURLToPath(new URL('../plugins/costs/fixtures/usage-caller', import.meta.url));
const UI_TIMEOUT = 20_000;

/**
 * Plugin pages, the list of past backups, company deletion and budget policy deactivation, in
 * a real browser (Debian's Chromium, headless) against an authenticated instance with the
 * first-party plugins, signed in as an instance admin with a browser session cookie (so a
 * plugin page's attempt to use that cookie is a real one). Every change is checked through the
 * API too.
 */
describe('console: plugin pages, past backups, company deletion and policy deactivation', () => {
  let t: TestKernel;
  let admin: Api;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let backupDir: string;
  let memberCookie = '';
  const consoleErrors: string[] = [];
  let companyId = '';

  const signUp = async (email: string) => {
    const res = await t.api.post('/api/auth/sign-up', { email, password: 'password-123', name: email.split('@')[0] });
    expect(res.status, res.text).toBe(201);
    return { userId: res.body.user.id as string, session: /keel_session=([^;]*)/.exec(res.headers.get('set-cookie') ?? '')![1]! };
  };
  const signedInContext = async (session: string, viewport = { width: 1280, height: 800 }) => {
    const created = await browser.newContext({ viewport });
    created.setDefaultTimeout(UI_TIMEOUT);
    trackRequests(created);
    await created.addCookies([{ name: 'keel_session', value: session, url: t.url, httpOnly: true, sameSite: 'Lax' }]);
    return created;
  };

  beforeAll(async () => {
    backupDir = join(await mkdtemp(join(tmpdir(), 'keel-console-backups-')), 'backups');
    t = await startTestKernel({ deploymentMode: 'authenticated', backups: { directory: backupDir } }, { firstPartyDir: FIRST_PARTY_PLUGINS });
    const operator = await signUp('operator@example.test');
    await t.sql.query('update users set is_instance_admin = true where id = $1', [operator.userId]);
    t.kernel.services.authCache.apply({ type: 'user', id: operator.userId });
    admin = t.api.as(await boardToken(t, operator.userId));
    memberCookie = (await signUp('member@example.test')).session;
    companyId = (await createCompany(admin, { name: 'Harbour Works' })).id;
    browser = await launchChromium();
    context = await signedInContext(operator.session);
    page = await context.newPage();
    page.on('console', (message) => { if (message.type() === 'error') consoleErrors.push(message.text()); });
    page.on('pageerror', (error) => consoleErrors.push(error.message));
  });
  afterAll(async () => {
    await browser?.close();
    await t?.stop();
    if (backupDir) await rm(join(backupDir, '..'), { recursive: true, force: true });
  });

  it("shows an enabled plugin's page in the navigation, in a sandboxed frame that cannot reach the console's document or use the operator's cookie", async () => {
    expect((await admin.post('/api/plugins/install', { localPath: PAGE_PROBE })).status).toBe(201);
    const enabled = await admin.post('/api/plugins/page-probe/enable', {});
    expect(enabled.status, enabled.text).toBe(200);

    await page.goto(`${t.url}/companies/${companyId}/dashboard`);
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Probe report' }).click();
    await page.waitForURL(`${t.url}/companies/${companyId}/pages/page-probe/report`);
    await poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Probe report');
    expect(await nav.getByRole('link', { name: 'Probe report' }).getAttribute('aria-current')).toBe('page');

    const frameElement = page.locator('iframe[data-plugin="page-probe"]');
    expect(await frameElement.getAttribute('sandbox')).toBe('allow-scripts');
    expect(await frameElement.getAttribute('src')).toBe('/plugin-frame.html');
    const frame = page.frameLocator('iframe[data-plugin="page-probe"]');
    await poll(() => frame.locator('#parent').textContent()).toBe('parent: blocked SecurityError');
    await poll(() => frame.locator('#api').textContent()).toBe('api: blocked TypeError');
    // The console itself reaches the API with the same cookie: the frame is what is refused.
    expect(await page.evaluate(() => fetch('/api/companies', { credentials: 'include' }).then((res) => res.status))).toBe(200);
    // Its one way out is the console's bridge, to its own plugin, for the company on screen.
    await poll(() => frame.locator('#bridge').textContent()).toBe(`bridge: ${JSON.stringify({ params: { from: 'page' }, company: companyId })}`);
    const origin = await page.frames().find((f) => f.url().endsWith('/plugin-frame.html'))!.evaluate(() => window.origin);
    expect(origin).toBe('null');
  }, 90_000);

  it("drops a disabled plugin's page from the navigation, and its address shows that nothing is there", async () => {
    expect((await admin.post('/api/plugins/page-probe/disable', {})).status).toBe(200);
    await page.goto(`${t.url}/companies/${companyId}/dashboard`);
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Costs' }).waitFor();
    await settled(page);
    expect(await nav.getByRole('link', { name: 'Probe report' }).count()).toBe(0);
    await page.goto(`${t.url}/companies/${companyId}/pages/page-probe/report`);
    await poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Not found');
    expect(await page.locator('iframe').count()).toBe(0);

    // Enabled again, it is back (the navigation asks again on each page).
    expect((await admin.post('/api/plugins/page-probe/enable', {})).status).toBe(200);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Dashboard' }).click();
    await poll(() => nav.getByRole('link', { name: 'Probe report' }).count()).toBe(1);
  }, 60_000);

  it('lists past backups newest first with size and time, and adds the one taken now', async () => {
    await mkdir(backupDir, { recursive: true });
    const older = backupFileName(new Date(Date.now() - 3 * 86_400_000));
    await writeFile(join(backupDir, older), Buffer.alloc(3 * 1024));
    await page.goto(`${t.url}/settings`);
    const list = page.getByRole('list', { name: 'Past backups' });
    await poll(() => list.getByRole('listitem').count()).toBe(1);
    expect(await list.textContent()).toMatch(new RegExp(`^${older.replace(/\./g, '\\.')} 3 KiB `));

    await page.getByRole('button', { name: 'Back up now' }).click();
    await poll(() => list.getByRole('listitem').count(), { timeout: 60_000 }).toBe(2);
    const listed = (await admin.get('/api/instance/database-backups')).body;
    expect(listed).toHaveLength(2);
    expect(listed[1].file).toBe(older);
    expect(await list.getByRole('listitem').first().textContent()).toContain(listed[0].file);
    await poll(() => page.getByRole('status').filter({ hasText: /^Written .*keel-backup-/ }).count()).toBe(1);
  }, 90_000);

  it("shows a board member who is not an instance admin the API's refusal instead of the backups", async () => {
    const memberContext = await signedInContext(memberCookie);
    try {
      const memberPage = await memberContext.newPage();
      await memberPage.goto(`${t.url}/settings`);
      const backups = memberPage.locator('.card', { has: memberPage.getByRole('heading', { name: 'Backups' }) });
      await poll(() => backups.getByRole('alert').textContent()).toBe('Instance admin access required');
      expect(await backups.getByRole('list', { name: 'Past backups' }).count()).toBe(0);
    } finally {
      await memberContext.close();
    }
  }, 60_000);

  it('deactivates a budget policy from the costs page and activates it again, the list showing which it is', async () => {
    const project = await admin.post(`/api/companies/${companyId}/projects`, { name: 'Dockside' });
    expect(project.status, project.text).toBe(201);
    const policy = await admin.post(`/api/companies/${companyId}/budgets/policies`, { scopeType: 'project', scopeId: project.body.id, amount: 5000 });
    expect(policy.status, policy.text).toBe(201);
    await page.goto(`${t.url}/companies/${companyId}/costs`);
    const list = page.getByRole('list', { name: 'Budget policies' });
    const row = list.getByRole('listitem').filter({ hasText: 'Project Dockside' });
    await poll(() => row.textContent()).toContain('$50.00');
    expect(await row.textContent()).not.toContain('inactive');

    await row.getByRole('button', { name: 'Deactivate the policy of Project Dockside' }).click();
    await poll(() => row.textContent()).toContain('inactive');
    const stored = async () => (await admin.get(`/api/companies/${companyId}/budgets/overview`)).body.policies.find((p: { id: string }) => p.id === policy.body.id);
    expect(await stored()).toMatchObject({ isActive: false, amount: 5000, windowKind: 'lifetime', scopeType: 'project' });

    await row.getByRole('button', { name: 'Activate the policy of Project Dockside' }).click();
    await poll(() => row.textContent()).not.toContain('inactive');
    expect(await stored()).toMatchObject({ isActive: true, amount: 5000 });

    // A refusal is shown in the API's words under the button: here the company went meanwhile.
    const brief = await createCompany(admin, { name: 'Brief Co' });
    const briefProject = await admin.post(`/api/companies/${brief.id}/projects`, { name: 'Pier' });
    expect((await admin.post(`/api/companies/${brief.id}/budgets/policies`, { scopeType: 'project', scopeId: briefProject.body.id, amount: 100 })).status).toBe(201);
    await page.goto(`${t.url}/companies/${brief.id}/costs`);
    const briefRow = page.getByRole('list', { name: 'Budget policies' }).getByRole('listitem').filter({ hasText: 'Project Pier' });
    await briefRow.getByRole('button', { name: 'Deactivate the policy of Project Pier' }).waitFor();
    expect((await admin.delete(`/api/companies/${brief.id}`)).status).toBe(200);
    await briefRow.getByRole('button', { name: 'Deactivate the policy of Project Pier' }).click();
    await poll(() => briefRow.getByRole('alert').textContent()).toBe('Company not found');
  }, 60_000);

  it('shows spend measured by the gateway apart from reported spend, per source and model, on the costs page', async () => {
    expect((await admin.post('/api/plugins/install', { localPath: USAGE_CALLER })).status).toBe(201);
    expect((await admin.post('/api/plugins/usage-caller/enable', {})).status).toBe(200);
    // The fixture stands in for the gateway plugin (costs config gatewayPlugins).
    expect((await admin.post('/api/plugins/costs/config', { config: { gatewayPlugins: ['model-gateway', 'usage-caller'] } })).status).toBe(200);
    const agent = await admin.post(`/api/companies/${companyId}/agents`, { name: 'Meter' });
    expect(agent.status, agent.text).toBe(201);
    const at = '2025-03-03T10:00:00.000Z';
    const posted = await admin.post(`/api/companies/${companyId}/cost-events`, { agentId: agent.body.id, provider: 'alpha', model: 'alpha-large', costCents: 125, occurredAt: at, inputTokens: 40 });
    expect(posted.status, posted.text).toBe(201);
    const measured = await admin.post(`/api/plugins/usage-caller/companies/${companyId}/call/record-usage`, {
      agentId: agent.body.id, runId: randomUUID(), provider: 'Anthropic main', model: 'claude-sonnet', biller: 'anthropic', billingType: 'metered_api',
      inputTokens: 1200, cachedInputTokens: 300, outputTokens: 450, costCents: 987, occurredAt: at, source: 'gateway',
    }, { headers: { 'idempotency-key': randomUUID() } });
    expect(measured.status, measured.text).toBe(200);

    await page.goto(`${t.url}/companies/${companyId}/costs`);
    await poll(() => page.getByTestId('measured-spend').textContent()).toBe('$9.87');
    expect(await page.getByTestId('reported-spend').textContent()).toBe('$1.25');
    const table = page.getByRole('table', { name: 'Spend per source and model' });
    const rows = table.getByRole('row');
    await poll(() => rows.count()).toBe(3);
    expect((await rows.nth(1).getByRole('cell').allTextContents())).toEqual(['Gateway (measured)', 'Anthropic main', 'claude-sonnet', '$9.87', '1200', '300', '450', '1']);
    expect((await rows.nth(2).getByRole('cell').allTextContents())).toEqual(['Self-reported', 'alpha', 'alpha-large', '$1.25', '40', '0', '0', '1']);
  }, 60_000);

  it('passes axe-core with no serious violations on the new pages and fits a 390-wide screen', async () => {
    const paths = [`/companies/${companyId}/pages/page-probe/report`, '/settings', `/companies/${companyId}/dashboard`, `/companies/${companyId}/settings`, `/companies/${companyId}/costs`];
    expect(await seriousViolationsOfPages(page, t.url, paths)).toEqual({});
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      for (const path of paths) {
        await page.goto(t.url + path);
        await page.getByRole('heading', { level: 1 }).first().waitFor();
        await settled(page);
        expect({ path, width: await page.evaluate(() => document.documentElement.scrollWidth) }).toEqual({ path, width: 390 });
      }
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
  }, 120_000);

  it("refuses deletion until the company's name is typed, shows the API's message, and leaves the list without the deleted company", async () => {
    const doomed = await createCompany(admin, { name: 'Doomed Co' });
    const gone = await createCompany(admin, { name: 'Gone Already' });
    // A company deleted behind the page's back: the console shows the API's answer.
    await page.goto(`${t.url}/companies/${gone.id}/settings`);
    const goneForm = page.getByRole('form', { name: 'Delete company' });
    await goneForm.getByLabel(/Type the company's name/).fill('Gone Already');
    expect((await admin.delete(`/api/companies/${gone.id}`)).status).toBe(200);
    await goneForm.getByRole('button', { name: 'Delete company' }).click();
    await poll(() => goneForm.getByRole('alert').textContent()).toBe('Company not found');

    await page.goto(`${t.url}/companies/${doomed.id}/settings`);
    const form = page.getByRole('form', { name: 'Delete company' });
    const button = form.getByRole('button', { name: 'Delete company' });
    expect(await button.isDisabled()).toBe(true);
    await form.getByLabel(/Type the company's name/).fill('Doomed');
    expect(await button.isDisabled()).toBe(true);
    await form.getByLabel(/Type the company's name/).fill('Doomed Co');
    expect(await button.isDisabled()).toBe(false);
    await button.click();
    await page.waitForURL(`${t.url}/companies`);
    const companies = page.getByRole('list', { name: 'Companies' });
    await poll(() => companies.textContent()).toContain('Harbour Works');
    expect(await companies.textContent()).not.toContain('Doomed Co');
    expect(await page.getByLabel('Company', { exact: true }).locator('option').allTextContents()).not.toContain('Doomed Co');
    expect((await admin.get(`/api/companies/${doomed.id}`)).status).toBe(404);
  }, 60_000);

  it('logged no errors in the browser console', () => {
    // A refused request is an error answer the page shows; the browser logs the failed request itself.
    // The probe page's fetch is refused by its frame's CSP on purpose, and the browser says so.
    const probeRefused = (text: string) => /\/api\/companies/.test(text) && /Content Security Policy/.test(text);
    expect(unexpectedErrors(consoleErrors).filter((text) => !probeRefused(text))).toEqual([]);
  });
});
