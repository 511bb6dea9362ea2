import { mkdtemp, realpath } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { installWiki, WIKI } from '../plugins/wiki/helpers.ts';
import { startConsoleBrowser, type ConsoleBrowser, openConsolePage, poll, seriousViolations, seriousViolationsOfPages, unexpectedErrors } from './browser.ts';

/**
 * Plugins that work from the console, in a real browser against a real kernel with the
 * first-party plugins and the wiki installed by its package name: the Wiki page renders its
 * overview, its folder is chosen through the form drawn from the manifest (a refused path shows
 * the server's problem and saves nothing), the summaries plugin's card says which instance
 * setting its routes need and its switch turns it on (the routes then answer), and the
 * experimental settings are listed with labels and explanations. Checked through the API too.
 */
describe('console: plugin pages, local folders and instance settings', () => {
  let t: TestKernel;
  let ui: ConsoleBrowser;
  let page: Page;
  let consoleErrors: string[] = [];
  let companyId = '';

  beforeAll(async () => {
    t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
    companyId = (await createCompany(t.api, { name: 'Archive Works' })).id;
    await installWiki(t);
    ({ page, errors: consoleErrors } = ui = await startConsoleBrowser({ keep: (text) => !/status of 4\d\d/.test(text) }));
  });
  afterAll(async () => {
    await ui?.close();
    await t?.stop();
  });

  const wikiFrame = () => page.frameLocator(`iframe[data-plugin="${WIKI}"]`);
  const folderUrl = () => `/api/plugins/${WIKI}/companies/${companyId}/local-folders`;

  it('renders the wiki page, and after a folder is chosen through the form, the mounted wiki', async () => {
    await page.goto(`${t.url}/companies/${companyId}/pages/${WIKI}/wiki`);
    await poll(() => wikiFrame().locator('#folder-state').textContent()).toContain('No folder is mounted as wiki-root for this company');
    expect(await page.locator('.slot .error').count()).toBe(0);
    expect(await wikiFrame().getByRole('table').count()).toBe(1);

    await page.goto(`${t.url}/plugins/${WIKI}`);
    const form = page.getByRole('form', { name: 'Folder wiki-root' });
    // A path the server refuses: its problem under the form, nothing stored.
    await form.getByLabel('Absolute path on the server').fill('/etc');
    await form.getByRole('button', { name: 'Save folder' }).click();
    await poll(() => form.getByRole('alert').textContent()).toMatch(/^Local folder path refused: /);
    expect((await t.api.get(folderUrl())).body.folders[0]).toMatchObject({ folderKey: 'wiki-root', configured: false, path: null });

    const root = await realpath(await mkdtemp(join(tmpdir(), 'keel-console-wiki-')));
    await form.getByLabel('Absolute path on the server').fill(root);
    await form.getByRole('button', { name: 'Check path' }).click();
    await poll(() => page.getByRole('status').filter({ hasText: 'The path can be used' }).count()).toBe(1);
    expect((await t.api.get(folderUrl())).body.folders[0].configured).toBe(false);
    await form.getByRole('button', { name: 'Save folder' }).click();
    await poll(() => page.getByTestId('folder-path-wiki-root').textContent()).toBe(root);
    expect((await t.api.get(folderUrl())).body.folders[0]).toMatchObject({ folderKey: 'wiki-root', configured: true, path: root });
    expect(await seriousViolations(page)).toEqual([]);

    await page.goto(`${t.url}/companies/${companyId}/pages/${WIKI}/wiki`);
    await poll(() => wikiFrame().locator('#folder-state').textContent()).toBe('The wiki folder is mounted but not laid out yet: the board lays it out with POST /api/plugins/llm-wiki/bootstrap.');
    const bootstrap = await t.api.post(`/api/plugins/${WIKI}/bootstrap`, { companyId });
    expect(bootstrap.status, bootstrap.text).toBe(200);
    await page.reload();
    await poll(() => wikiFrame().locator('#folder-state').textContent()).toBe('The wiki folder is mounted and laid out.');
    await poll(() => wikiFrame().locator('li').first().textContent()).toContain('bootstrap');
    expect(await seriousViolations(page)).toEqual([]);
    expect(unexpectedErrors(consoleErrors)).toEqual([]);
  }, 120_000);

  it("says on the summaries plugin's card which setting its routes need, and its switch turns it on", async () => {
    expect((await t.api.get(`/api/companies/${companyId}/summarizer`)).status).toBe(404);
    await page.goto(`${t.url}/plugins`);
    const needs = page.getByRole('group', { name: 'Instance settings Summaries needs' });
    await poll(() => needs.locator('p').first().textContent()).toBe('Summaries answers 404 on its routes until Summaries is turned on for the instance.');
    const toggle = needs.getByRole('switch', { name: 'Summaries' });
    expect(await toggle.getAttribute('aria-checked')).toBe('false');
    expect(await seriousViolations(page)).toEqual([]);
    await toggle.click();
    await poll(() => toggle.getAttribute('aria-checked')).toBe('true');
    expect((await t.api.get('/api/instance/settings/experimental')).body.enableSummaries).toBe(true);
    const summarizer = await t.api.get(`/api/companies/${companyId}/summarizer`);
    expect(summarizer.status, summarizer.text).toBe(200);
    expect(await needs.locator('p').first().textContent()).toBe('Summaries needs Summaries, which is on.');
  }, 60_000);

  it('lists the experimental settings with labels and a line of explanation each', async () => {
    await page.goto(`${t.url}/settings`);
    const list = page.getByRole('list', { name: 'Experimental settings' });
    await poll(() => list.getByRole('switch').count()).toBe(4);
    const environments = list.getByRole('switch', { name: 'Execution environments' });
    expect(await environments.getAttribute('aria-checked')).toBe('false');
    expect(await list.textContent()).toContain('Environments that runs lease');
    expect(await list.getByRole('switch', { name: 'Summaries' }).getAttribute('aria-checked')).toBe('true');
    await environments.click();
    await poll(() => environments.getAttribute('aria-checked')).toBe('true');
    expect((await t.api.get('/api/instance/settings/experimental')).body.enableEnvironments).toBe(true);
    expect(await seriousViolations(page)).toEqual([]);
  }, 60_000);

  it('has no serious accessibility violation on these pages at 390 px', async () => {
    const narrow = await openConsolePage(ui.browser, { viewport: { width: 390, height: 844 } });
    try {
      expect(await seriousViolationsOfPages(narrow.page, t.url, ['/plugins', `/plugins/${WIKI}`, '/plugins/summaries', '/settings', `/companies/${companyId}/pages/${WIKI}/wiki`])).toEqual({});
    } finally {
      await narrow.context.close();
    }
  }, 90_000);
});
