import { createServer, type Server } from 'node:http';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { createCompany } from '../support/fixtures.ts';
import { waitFor } from '../plugins/runtime/helpers.ts';
import { startConsoleBrowser, type ConsoleBrowser, openConsolePage, poll, seriousViolationsOfPages, settled, unexpectedErrors } from './browser.ts';

const UI_TIMEOUT = 20_000;

/**
 * The company's Model providers page in a real browser (Debian's Chromium, headless) against a
 * real kernel with the first-party plugins (model-gateway among them), as the local board: add a
 * provider with its key typed once (stored in the vault, never shown again) and its price table,
 * the API's refusals shown under the field they name, test it against a scripted provider in this
 * process, edit it onto a secret reference, make another the default, delete after confirming,
 * and set the gateway limits. Every change is checked through the API.
 */
describe('console: model providers', () => {
  let t: TestKernel;
  let ui: ConsoleBrowser;
  let page: Page;
  let consoleErrors: string[] = [];
  let companyId = '';
  let provider: Server;
  let providerUrl = '';
  const keysSeen: Array<string | undefined> = [];
  const typedKey = 'sk-ant-typed-in-the-console-91c2';

  beforeAll(async () => {
    provider = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        keysSeen.push(req.headers['x-api-key'] as string | undefined);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-test', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 3, output_tokens: 1 } }));
      });
    });
    await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
    providerUrl = `http://127.0.0.1:${(provider.address() as { port: number }).port}`;
    t = await startTestKernel({ llm: { privateNetworkHosts: ['127.0.0.1'] } }, { firstPartyDir: FIRST_PARTY_PLUGINS });
    companyId = (await createCompany(t.api, { name: 'Provider Works' })).id;
    ({ page, errors: consoleErrors } = ui = await startConsoleBrowser({ timeout: UI_TIMEOUT }));
  });
  afterAll(async () => {
    await ui?.close();
    await t?.stop();
    await new Promise((resolve) => provider?.close(resolve));
  });

  const providers = async () => (await t.api.get(`/api/companies/${companyId}/model-providers`)).body as any[];
  const secretIdOf = (p: any): string | undefined => p.apiKeySecretId ?? p.apiKey?.secretId;
  /** The message right under a field: the alert that comes next after the label holding the field. */
  const alertUnder = (form: ReturnType<Page['getByRole']>, labelText: string) =>
    form.getByLabel(labelText, { exact: true }).locator('xpath=ancestor::label[1]/following-sibling::*[1][@role="alert"]');

  it('adds a provider from the navigation, showing refusals under the field they name, and never shows the key again', async () => {
    await page.goto(`${t.url}/companies/${companyId}/dashboard`);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Model providers' }).click();
    await poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Model providers');
    await poll(() => page.getByText('No model providers yet').count()).toBe(1);

    await page.locator('summary', { hasText: 'New model provider' }).click();
    const form = page.getByRole('form', { name: 'New model provider' });
    await form.getByLabel('Name (unique in the company)').fill('claude');
    await form.getByRole('combobox', { name: /^Kind/ }).selectOption('anthropic');
    const baseUrlLabel = "Base URL (the provider's origin, plus any prefix before its versioned paths)";
    await form.getByLabel(baseUrlLabel).fill('http://203.0.113.7');
    await form.getByLabel('API key (write-only)').fill(typedKey);
    const price = form.getByRole('group', { name: 'Price 1' });
    await price.getByLabel('Model', { exact: true }).fill('claude-sonnet-4*');
    await price.getByLabel('Input', { exact: true }).fill('300');
    await price.getByLabel('Cached input').fill('30');
    await price.getByLabel('Cache write').fill('375');
    await price.getByLabel('Output', { exact: true }).fill('1500');
    await form.getByRole('button', { name: 'Add price' }).click();
    const second = form.getByRole('group', { name: 'Price 2' });
    await second.getByLabel('Model', { exact: true }).fill('claude-haiku-4');
    await second.getByLabel('Input', { exact: true }).fill('80');
    await second.getByLabel('Output', { exact: true }).fill('400.5');
    await form.getByLabel('Default provider of its kind (replaces the current default)').check();
    await form.getByRole('button', { name: 'Add provider' }).click();

    // The same body through the API: its own message, which the page shows under the base URL.
    const refused = await t.api.post(`/api/companies/${companyId}/model-providers`, { name: 'claude', kind: 'anthropic', baseUrl: 'http://203.0.113.7', apiKey: 'sk-x', models: [] });
    expect(refused.status).toBeGreaterThanOrEqual(400);
    await poll(() => alertUnder(form, baseUrlLabel).count()).toBe(1);
    expect(await alertUnder(form, baseUrlLabel).textContent()).toContain(refused.body.issues?.[0]?.message ?? refused.body.error);
    expect(await providers()).toEqual([]);

    await form.getByLabel(baseUrlLabel).fill(providerUrl);
    await form.getByRole('button', { name: 'Add provider' }).click();
    await waitFor(async () => (await providers()).length === 1, 'the new provider');
    const [created] = await providers();
    expect(created).toMatchObject({
      name: 'claude', kind: 'anthropic', baseUrl: providerUrl, isDefault: true, allowUnpricedModels: false,
      models: [
        { model: 'claude-sonnet-4*', inputCentsPerMTok: 300, cachedInputCentsPerMTok: 30, cacheWriteCentsPerMTok: 375, outputCentsPerMTok: 1500 },
        { model: 'claude-haiku-4', inputCentsPerMTok: 80, cachedInputCentsPerMTok: 0, cacheWriteCentsPerMTok: 0, outputCentsPerMTok: 400.5 },
      ],
    });
    expect(secretIdOf(created)).toBeTruthy();
    const list = page.getByRole('list', { name: 'Model providers' });
    await poll(() => list.textContent()).toMatch(/claude\s*anthropic\s*default/);
    expect(await list.textContent()).toContain('2 priced models');
    expect(await list.textContent()).toMatch(/key: stored in the vault/);
    // The key crossed once: not in the page, not in the form, not in any answer since.
    expect(await page.content()).not.toContain(typedKey);
    expect(await form.getByLabel('API key (write-only)').inputValue()).toBe('');
  }, 120_000);

  it('shows a name the company already uses as refused, under the name', async () => {
    const form = page.getByRole('form', { name: 'New model provider' });
    await form.getByLabel('Name (unique in the company)').fill('claude');
    await form.getByLabel("Base URL (the provider's origin, plus any prefix before its versioned paths)").fill(providerUrl);
    await form.getByLabel('API key (write-only)').fill('sk-second');
    await form.getByRole('button', { name: 'Add provider' }).click();
    await poll(() => alertUnder(form, 'Name (unique in the company)').count()).toBe(1);
    expect((await providers()).length).toBe(1);
    await form.getByLabel('Name (unique in the company)').fill('');
    await form.getByRole('button', { name: 'Add provider' }).click();
    await poll(() => alertUnder(form, 'Name (unique in the company)').textContent()).toMatch(/name/);
  }, 60_000);

  it("tests the provider: the latency, and the scripted provider saw the company's key", async () => {
    keysSeen.length = 0;
    const list = page.getByRole('list', { name: 'Model providers' });
    await list.getByRole('button', { name: 'Test claude' }).click();
    await poll(() => list.getByRole('status').textContent()).toMatch(/^Test passed: \d+ ms \(HTTP 200\)$/);
    expect(keysSeen).toContain(typedKey);
  }, 60_000);

  it('edits the provider onto a secret of the company, adds another and makes it the default, and deletes after confirming', async () => {
    const secret = await t.api.post(`/api/companies/${companyId}/secrets`, { name: 'ANTHROPIC_TEAM_KEY', value: 'sk-ant-team' });
    expect(secret.status, secret.text).toBe(201);
    await page.reload();
    const list = page.getByRole('list', { name: 'Model providers' });
    await list.locator('summary', { hasText: 'Edit claude' }).click();
    const edit = page.getByRole('form', { name: 'Edit claude' });
    expect(await edit.textContent()).toContain('Stored in the vault');
    await edit.getByRole('combobox', { name: /^Key source/ }).selectOption('secret');
    await edit.getByRole('combobox', { name: /^Secret/ }).selectOption({ label: 'ANTHROPIC_TEAM_KEY' });
    // A model priced twice: the API names the row, and the message sits in that row.
    await edit.getByRole('group', { name: 'Price 2' }).getByLabel('Model', { exact: true }).fill('claude-sonnet-4*');
    await edit.getByRole('button', { name: 'Save provider' }).click();
    await poll(() => edit.getByRole('group', { name: 'Price 2' }).getByRole('alert').textContent()).toBe('models.1.model: "claude-sonnet-4*" is priced twice');
    expect(await edit.getByRole('group', { name: 'Price 1' }).getByRole('alert').count()).toBe(0);
    expect(secretIdOf((await providers())[0])).not.toBe(secret.body.id);
    await edit.getByRole('button', { name: 'Remove price 2' }).click();
    await edit.getByRole('button', { name: 'Save provider' }).click();
    await waitFor(async () => secretIdOf((await providers())[0]) === secret.body.id, 'the key reference to change');
    expect((await providers())[0].models.map((m: any) => m.model)).toEqual(['claude-sonnet-4*']);
    await poll(() => list.textContent()).toContain('key: stored in the vault (secret ANTHROPIC_TEAM_KEY)');
    expect(await list.textContent()).toContain('1 priced model ');

    const created = await t.api.post(`/api/companies/${companyId}/model-providers`, { name: 'claude-backup', kind: 'anthropic', baseUrl: providerUrl, apiKey: { type: 'secret_ref', secretId: secret.body.id }, models: [] });
    expect(created.status, created.text).toBe(201);
    await page.reload();
    await list.getByRole('button', { name: 'Make default: claude-backup' }).click();
    await waitFor(async () => (await providers()).find((p) => p.name === 'claude-backup')?.isDefault === true, 'the new default');
    expect((await providers()).find((p) => p.name === 'claude')?.isDefault).toBe(false);

    await list.getByRole('button', { name: 'Delete claude-backup' }).click();
    const confirm = list.getByRole('group', { name: 'Confirm deleting claude-backup' });
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    expect(await confirm.count()).toBe(0);
    expect((await providers()).length).toBe(2);
    await list.getByRole('button', { name: 'Delete claude-backup' }).click();
    await confirm.getByRole('button', { name: 'Yes, delete claude-backup' }).click();
    await waitFor(async () => (await providers()).length === 1, 'the deletion');
    await poll(() => list.getByRole('listitem').count()).toBe(1);
  }, 90_000);

  it('sets the gateway limits, an empty field being no limit, and shows a refused value under its field', async () => {
    const limits = page.getByRole('form', { name: 'Gateway limits' });
    await limits.getByLabel('Calls per minute').fill('60');
    await limits.getByLabel('Tokens per minute').fill('0');
    await limits.getByRole('button', { name: 'Save limits' }).click();
    await poll(() => alertUnder(limits, 'Tokens per minute').count()).toBe(1);
    expect((await t.api.get(`/api/companies/${companyId}/model-gateway/limits`)).body).toEqual({ callsPerMinute: null, tokensPerMinute: null });
    await limits.getByLabel('Tokens per minute').fill('');
    await limits.getByRole('button', { name: 'Save limits' }).click();
    await waitFor(async () => (await t.api.get(`/api/companies/${companyId}/model-gateway/limits`)).body.callsPerMinute === 60, 'the limits');
    expect((await t.api.get(`/api/companies/${companyId}/model-gateway/limits`)).body).toEqual({ callsPerMinute: 60, tokensPerMinute: null });
    await poll(() => page.getByRole('form', { name: 'Gateway limits' }).getByLabel('Calls per minute').inputValue()).toBe('60');
  }, 60_000);

  it('fits on a 390-wide screen with its forms open, and passes axe-core with no serious violations', async () => {
    const path = `/companies/${companyId}/model-providers`;
    const { context: phoneContext, page: phone } = await openConsolePage(ui.browser, { viewport: { width: 390, height: 844 }, timeout: UI_TIMEOUT });
    try {
      await phone.goto(t.url + path);
      await phone.getByRole('heading', { level: 1 }).first().waitFor();
      await settled(phone);
      for (const summary of await phone.locator('summary').all()) await summary.click();
      expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBe(390);
    } finally {
      await phoneContext.close();
    }
    expect(await seriousViolationsOfPages(page, t.url, [path])).toEqual({});
  }, 90_000);

  it('logged no errors in the browser console', () => {
    expect(unexpectedErrors(consoleErrors)).toEqual([]);
  });
});
