import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../../support/harness.ts';
import { base, installWiki, mountWiki, WIKI } from './helpers.ts';

/**
 * The console's Wiki page is the answer of the plugin's data handler named by the page's key
 * (`wiki`): before this handler existed the page answered 404 `plugin_handler_not_found`. The
 * document says whether a folder is mounted, lists the spaces, and writes what the wiki holds
 * (names people type) as text, never as markup.
 */
describe('wiki: the console page', () => {
  let t: TestKernel;
  let companyId = '';
  beforeAll(async () => {
    t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
    companyId = (await createCompany(t.api, { name: 'Page Works' })).id;
    await installWiki(t);
  });
  afterAll(async () => { await t?.stop(); });

  const pageHtml = async () => {
    const res = await t.api.post(`/api/plugins/${WIKI}/data/wiki`, { companyId });
    expect(res.status, res.text).toBe(200);
    expect(typeof res.body.html).toBe('string');
    return res.body.html as string;
  };

  it('is declared as a page and answered by the data handler of its key', async () => {
    const contributions = (await t.api.get('/api/plugins/ui-contributions')).body;
    expect(contributions.pages).toContainEqual(expect.objectContaining({ pluginKey: WIKI, key: 'wiki', path: '/wiki' }));
    const html = await pageHtml();
    expect(html).toContain('<p id="folder-state" data-configured="false">No folder is mounted as <code>wiki-root</code> for this company (folder_not_configured).');
  });

  it('shows the mounted folder, the spaces with their page counts, and every name as text', async () => {
    const created = await t.api.post(`${base}/spaces`, { companyId, slug: 'notes', name: '<img src=x onerror=alert(1)>' });
    expect(created.status, created.text).toBe(201);
    await mountWiki(t, companyId, 'page');
    const html = await pageHtml();
    expect(html).toContain('data-configured="true">The wiki folder is mounted but not laid out yet');
    expect(html).toContain('<td>&#60;img src=x onerror=alert(1)&#62;</td><td><code>notes</code></td>');
    expect(html).not.toContain('<img');
  });

  it('answers a company the caller cannot reach with the kernel refusal, not the page', async () => {
    const res = await t.api.post(`/api/plugins/${WIKI}/data/wiki`, { companyId: '00000000-0000-4000-8000-000000000000' });
    expect(res.status).toBe(404);
  });
});
