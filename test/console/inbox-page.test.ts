import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { createAgent, createCompany } from '../support/fixtures.ts';
import { eventsSettled } from '../support/events.ts';
import { startConsoleBrowser, type ConsoleBrowser, openConsolePage, poll, seriousViolations, seriousViolationsOfPages, settled, unexpectedErrors } from './browser.ts';

const UI_TIMEOUT = 20_000;

/**
 * The board user's inbox in a real browser (Chromium, headless) against a real kernel with the
 * first-party plugins, as the local board (mentioned as `@board`): what needs a human, the
 * unread count in the menu, and read marks the server keeps.
 */
describe('console: the inbox', () => {
  let t: TestKernel;
  let ui: ConsoleBrowser;
  let page: Page;
  let errors: string[] = [];
  let companyId = '';
  const titles = { approval: 'Approval pending: hire agent', blocked: 'is blocked', run: 'Run failed: Worker', mention: 'Mentioned on' };

  beforeAll(async () => {
    t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
    companyId = (await createCompany(t.api, { name: 'Inbox Works', requireBoardApprovalForNewAgents: true })).id;
    const worker = await createAgent(t.api, companyId, { name: 'Worker' });
    expect((await t.api.post(`/api/companies/${companyId}/agent-hires`, { name: 'Applicant' })).status).toBe(201);
    expect((await t.api.post(`/api/companies/${companyId}/issues`, { title: 'Waiting on legal', status: 'blocked' })).status).toBe(201);
    const issue = await t.api.post(`/api/companies/${companyId}/issues`, { title: 'Pricing page' });
    // The mention comes from the agent: the board's own comments are not news to it.
    const key = await t.api.post(`/api/agents/${worker.id}/keys`, { name: 'comments' });
    const mention = await t.api.post(`/api/issues/${issue.body.id}/comments`, { body: '@board which price do we show?' }, { token: key.body.token });
    expect(mention.status, mention.text).toBe(201);
    const { runs, db } = t.kernel.services;
    const opened = await db.transaction((tx) => runs.open(tx, { agentId: worker.id, companyId, invocationSource: 'on_demand' }));
    await db.transaction((tx) => runs.close(tx, opened.run.runId, { status: 'failed' }));
    await eventsSettled(t);
    ({ page, errors } = ui = await startConsoleBrowser({ timeout: UI_TIMEOUT }));
  });
  afterAll(async () => {
    await ui?.close();
    await t?.stop();
  });

  const menuCount = () => page.getByRole('navigation', { name: 'Main' }).getByTestId('inbox-unread').textContent();

  it('lists the pending approval, the blocked issue, the failed run and the mention, with the unread count in the menu', async () => {
    await page.goto(`${t.url}/companies/${companyId}/inbox`);
    const list = page.getByRole('list', { name: 'Inbox' });
    for (const title of Object.values(titles)) await poll(() => list.textContent()).toContain(title);
    await poll(menuCount).toBe('4 unread');
    await poll(() => page.getByRole('status').filter({ hasText: 'unread of' }).textContent()).toBe('4 unread of 4.');
    // Each item links to where it is handled.
    expect(await list.getByRole('link', { name: titles.approval }).getAttribute('href')).toBe(`/companies/${companyId}/approvals`);
    expect(await list.getByRole('link', { name: titles.run }).getAttribute('href')).toMatch(new RegExp(`^/companies/${companyId}/runs/[0-9a-f-]{36}$`));
    // The count is in the menu on every page.
    await page.goto(`${t.url}/companies/${companyId}/issues`);
    await poll(menuCount).toBe('4 unread');
  }, 60_000);

  it('marks one read: the count drops, and it stays read after a reload and in another browser', async () => {
    await page.goto(`${t.url}/companies/${companyId}/inbox`);
    const list = page.getByRole('list', { name: 'Inbox' });
    await poll(() => list.textContent()).toContain(titles.approval);
    await list.getByRole('button', { name: `Mark read: ${titles.approval}` }).click();
    await poll(menuCount).toBe('3 unread');
    await poll(() => list.getByRole('button', { name: /^Mark read: / }).count()).toBe(3);
    const stored = await t.api.get(`/api/companies/${companyId}/inbox`);
    expect(stored.body.counts.unread).toBe(3);
    expect(stored.body.items.filter((item: any) => item.read).map((item: any) => item.kind)).toEqual(['approval']);
    await page.reload();
    await poll(() => page.getByRole('list', { name: 'Inbox' }).textContent()).toContain(titles.approval);
    await poll(menuCount).toBe('3 unread');
    expect(await page.getByRole('list', { name: 'Inbox' }).getByRole('button', { name: `Mark read: ${titles.approval}` }).count()).toBe(0);
    // Another browser context (no shared storage) sees the same marks: they are the server's.
    const other = await openConsolePage(ui.browser, { timeout: UI_TIMEOUT });
    await other.page.goto(`${t.url}/companies/${companyId}/inbox`);
    await poll(() => other.page.getByRole('navigation', { name: 'Main' }).getByTestId('inbox-unread').textContent()).toBe('3 unread');
    await other.context.close();
  }, 60_000);

  it('marks all read: the menu count disappears', async () => {
    await page.goto(`${t.url}/companies/${companyId}/inbox`);
    await page.getByRole('button', { name: 'Mark all read' }).click();
    await poll(() => page.getByRole('status').filter({ hasText: 'Everything is read.' }).count()).toBe(1);
    await poll(() => page.getByTestId('inbox-unread').count()).toBe(0);
    expect((await t.api.get(`/api/companies/${companyId}/inbox`)).body.counts.unread).toBe(0);
  }, 60_000);

  it('updates the menu count live, without navigating: a new blocked issue shows, and marks made elsewhere clear it', async () => {
    await page.goto(`${t.url}/companies/${companyId}/issues`);
    await page.getByRole('heading', { level: 1 }).waitFor();
    await settled(page);
    expect(await page.getByTestId('inbox-unread').count()).toBe(0);
    // A mark on the document: a navigation or a reload would lose it.
    await page.evaluate(() => { (window as unknown as { stayed: boolean }).stayed = true; });
    const url = page.url();
    const blocked = await t.api.post(`/api/companies/${companyId}/issues`, { title: 'Waiting on the printer', status: 'blocked' });
    expect(blocked.status, blocked.text).toBe(201);
    await poll(menuCount).toBe('1 unread');
    // Read in another tab (here: the API, as another browser would): the count goes away here too.
    expect((await t.api.post(`/api/companies/${companyId}/inbox/read-all`, {})).status).toBe(200);
    await poll(() => page.getByTestId('inbox-unread').count()).toBe(0);
    expect(page.url()).toBe(url);
    expect(await page.evaluate(() => (window as unknown as { stayed?: boolean }).stayed)).toBe(true);
  }, 60_000);

  it('has no serious accessibility violation at 1280 and 390 px', async () => {
    // One unread item again, so that both the read and the unread rows are checked.
    await t.api.post(`/api/companies/${companyId}/issues`, { title: 'Another wait', status: 'blocked' });
    expect(await seriousViolationsOfPages(page, t.url, [`/companies/${companyId}/inbox`])).toEqual({});
    const narrow = await openConsolePage(ui.browser, { viewport: { width: 390, height: 844 }, timeout: UI_TIMEOUT });
    expect(await seriousViolationsOfPages(narrow.page, t.url, [`/companies/${companyId}/inbox`])).toEqual({});
    // The menu (closed at 390 px) shows the count once opened.
    await narrow.page.getByRole('button', { name: 'Menu' }).click();
    await poll(() => narrow.page.getByTestId('inbox-unread').textContent()).toBe('1 unread');
    expect(await seriousViolations(narrow.page)).toEqual([]);
    await narrow.context.close();
    expect(unexpectedErrors(errors)).toEqual([]);
  }, 90_000);
});
