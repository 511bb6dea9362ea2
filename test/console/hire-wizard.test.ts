import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { agentScripts, runWhen } from '../plugins/runtime/helpers.ts';
import { startConsoleBrowser, type ConsoleBrowser, openConsolePage, poll, seriousViolations, unexpectedErrors } from './browser.ts';

/**
 * From an empty instance to a first run in the browser alone (the getting-started card, then
 * the hiring wizard), and the wizard hiring a Claude Code agent on a machine where the tool is
 * not installed: the adapter says so with its install command, and the environment test fails
 * with that fix. Real kernel, first-party plugins, real runs; each result checked through the API.
 */
/** Where Claude Code is installed, the missing-tool case has nothing to show: it is skipped, not passed. */
const claudeInstalled = ['/usr/local/bin', '/usr/bin', '/bin'].some((dir) => existsSync(join(dir, 'claude')));

describe('console: onboarding and the hiring wizard', () => {
  let t: TestKernel;
  let ui: ConsoleBrowser;
  let page: Page;
  let consoleErrors: string[] = [];
  let scripts = '';
  let companyId = '';

  beforeAll(async () => {
    t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
    scripts = await agentScripts();
    ({ page, errors: consoleErrors } = ui = await startConsoleBrowser());
  });
  afterAll(async () => {
    await ui?.close();
    await t?.stop();
  });

  const catalog = async () => Object.fromEntries(((await t.api.get('/api/llms/agent-configuration.json')).body.adapterTypes as any[]).map((entry) => [entry.type, entry]));

  it('walks an empty instance from its first company to its first agent\'s first run', async () => {
    expect((await t.api.get('/api/companies')).body).toEqual([]);
    await page.goto(t.url + '/');
    await page.waitForURL(/\/companies$/);
    const start = page.getByRole('region', { name: 'Getting started' });
    // The card's steps render after the instance's state arrives: wait for them.
    await poll(() => start.getByRole('list', { name: 'Onboarding steps' }).locator('li').count()).toBe(4);
    expect(await seriousViolations(page)).toEqual([]);
    const first = start.getByRole('form', { name: 'First company' });
    await first.getByLabel('Company name').fill('First Light');
    await first.getByRole('button', { name: 'Create company and hire its first agent' }).click();
    await page.waitForURL(/\/companies\/[0-9a-f-]{36}\/agents\/new$/);
    companyId = page.url().split('/')[4]!;
    expect((await t.api.get(`/api/companies/${companyId}`)).body.name).toBe('First Light');

    // Step 1: the adapters this instance can run, the others apart with the reason.
    await poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Hire an agent for First Light');
    const types = await catalog();
    const unavailable = page.getByRole('list', { name: 'Unavailable adapters' });
    expect(await unavailable.locator('[data-type="eta_local"]').textContent()).toContain(types.eta_local.availability.reason);
    expect(await page.locator('input[type="radio"][value="eta_local"]').count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);
    await page.locator('input[type="radio"][value="process"]').check();
    await page.getByRole('button', { name: "Next: the agent's settings" }).click();

    // Step 2: the process adapter's fields, drawn from the catalog.
    const settings = page.getByRole('form', { name: 'Agent settings' });
    await settings.getByLabel('Name', { exact: true }).fill('Starter');
    await settings.getByLabel('Command').fill(process.execPath);
    await settings.getByLabel('Arguments (one per line)').fill(join(scripts, 'quick.cjs'));
    await settings.getByLabel('Grace before a kill (seconds)').fill('1');
    await settings.getByRole('button', { name: 'Hire and test' }).click();

    // Step 3: process has no environment test; the API's refusal is shown and the wizard goes on.
    const testStep = page.getByRole('group', { name: 'Step 3: Environment test' });
    await testStep.getByRole('button', { name: 'Test environment' }).click();
    await poll(() => testStep.getByRole('alert').textContent()).toMatch(/process/);
    const agent = (await t.api.get(`/api/companies/${companyId}/agents`)).body.find((entry: any) => entry.name === 'Starter');
    expect(agent).toMatchObject({ adapterType: 'process', adapterConfig: { command: process.execPath, args: [join(scripts, 'quick.cjs')], graceSec: 1 } });
    await testStep.getByRole('button', { name: 'Continue to the budget' }).click();

    // Step 4: the budget.
    const budget = page.getByRole('form', { name: 'Monthly budget' });
    await budget.getByLabel('Monthly budget in dollars (0: none)').fill('12.5');
    await budget.getByRole('button', { name: 'Next: a first issue' }).click();
    await poll(() => page.getByRole('form', { name: 'First issue' }).count()).toBe(1);
    expect((await t.api.get(`/api/agents/${agent.id}`)).body.budgetMonthlyCents).toBe(1250);

    // Step 5: a first issue, which wakes the agent; the last screen links its run.
    const issueForm = page.getByRole('form', { name: 'First issue' });
    await issueForm.getByLabel('Title').fill('Say hello');
    await issueForm.getByRole('button', { name: 'Create and assign' }).click();
    const watch = page.getByRole('link', { name: 'Watch its first run' });
    await poll(() => watch.count(), { timeout: 60_000 }).toBe(1);
    const issue = (await t.api.get(`/api/companies/${companyId}/issues`)).body.find((entry: any) => entry.title === 'Say hello');
    expect(issue).toMatchObject({ assigneeAgentId: agent.id, status: expect.any(String) });
    expect(await page.getByRole('link', { name: `${issue.identifier} Say hello` }).count()).toBe(1);
    // The run's status beside the link is followed to its end.
    await poll(() => page.locator('p', { has: watch }).textContent(), { timeout: 60_000 }).toBe('Watch its first run (succeeded).');
    await watch.click();
    await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
    const run = await runWhen(t, page.url().split('/').pop()!);
    expect(run).toMatchObject({ agentId: agent.id, status: 'succeeded' });
    expect(unexpectedErrors(consoleErrors)).toEqual([]);
  }, 180_000);

  it.skipIf(claudeInstalled)('hires a Claude Code agent whose tool is missing: the adapter says how to install it and the environment test fails with that fix', async () => {
    const claude = (await catalog()).alpha_local;
    expect(claude.availability.status).toBe('tool_missing');
    await page.goto(`${t.url}/companies/${companyId}/agents`);
    await page.getByRole('link', { name: 'Hire an agent' }).click();
    await page.waitForURL(/\/agents\/new$/);
    expect(await page.getByTestId('tool-missing-alpha_local').textContent()).toBe(`${claude.availability.reason} Install it with ${claude.availability.installHint}.`);
    await page.locator('input[type="radio"][value="alpha_local"]').check();
    await page.getByRole('button', { name: "Next: the agent's settings" }).click();
    const settings = page.getByRole('form', { name: 'Agent settings' });
    expect(await settings.getByRole('group', { name: 'alpha_local settings' }).count()).toBe(1);
    await settings.getByLabel('Name', { exact: true }).fill('Claude');
    await settings.getByLabel('Effort').selectOption('high');
    await settings.getByRole('button', { name: 'Hire and test' }).click();
    const testStep = page.getByRole('group', { name: 'Step 3: Environment test' });
    await testStep.getByRole('button', { name: 'Test environment' }).click();
    const result = testStep.getByTestId('environment-test');
    await poll(() => result.getByRole('status').textContent(), { timeout: 60_000 }).toBe('Environment test failed');
    const agent = (await t.api.get(`/api/companies/${companyId}/agents`)).body.find((entry: any) => entry.name === 'Claude');
    expect(agent).toMatchObject({ adapterType: 'alpha_local', adapterConfig: { effort: 'high' } });
    const answer = (await t.api.post(`/api/agents/${agent.id}/adapter-test`, {})).body;
    // The tool cannot be started (or answers no version): the fix names its install command.
    expect(answer).toMatchObject({ ok: false, version: null });
    expect(answer.checks[0].ok).toBe(false);
    expect(answer.checks[0].fix).toContain(claude.tool.install);
    expect(await result.getByRole('list', { name: 'Environment checks' }).textContent()).toContain(`Fix: ${answer.checks[0].fix}`);
    expect(await seriousViolations(page)).toEqual([]);
    await testStep.getByRole('button', { name: 'Continue to the budget' }).click();
    await page.getByRole('form', { name: 'Monthly budget' }).getByRole('button', { name: 'Next: a first issue' }).click();
    await page.getByRole('button', { name: 'Skip: no issue now' }).click();
    await poll(() => page.getByRole('heading', { name: 'Claude is hired' }).count()).toBe(1);
    expect(unexpectedErrors(consoleErrors)).toEqual([]);
  }, 120_000);

  it('keeps the free configuration keys apart from the fields: a key that has its field is refused and nothing is hired', async () => {
    const before = (await t.api.get(`/api/companies/${companyId}/agents`)).body.length;
    await page.goto(`${t.url}/companies/${companyId}/agents/new`);
    await page.locator('input[type="radio"][value="process"]').check();
    await page.getByRole('button', { name: "Next: the agent's settings" }).click();
    const settings = page.getByRole('form', { name: 'Agent settings' });
    await settings.getByLabel('Name', { exact: true }).fill('Twice');
    await settings.getByLabel('Command').fill(process.execPath);
    await settings.locator('summary', { hasText: 'Other configuration keys' }).click();
    await settings.getByLabel('Other configuration keys (JSON)').fill('{"command": "/bin/sh"}');
    await settings.getByRole('button', { name: 'Hire and test' }).click();
    await poll(() => settings.getByRole('alert').textContent()).toBe('Set command with its field above, not in the other keys');
    await settings.getByLabel('Other configuration keys (JSON)').fill('[1]');
    await settings.getByRole('button', { name: 'Hire and test' }).click();
    await poll(() => settings.getByRole('alert').textContent()).toMatch(/^Other configuration keys must be a JSON object/);
    expect((await t.api.get(`/api/companies/${companyId}/agents`)).body.length).toBe(before);
    // A free key is kept; going back, it is shown again, and taking it out removes it.
    await settings.getByLabel('Other configuration keys (JSON)').fill('{"team": "north"}');
    await settings.getByRole('button', { name: 'Hire and test' }).click();
    await page.getByRole('group', { name: 'Step 3: Environment test' }).waitFor();
    const hired = (await t.api.get(`/api/companies/${companyId}/agents`)).body.find((entry: any) => entry.name === 'Twice');
    expect(hired.adapterConfig).toMatchObject({ command: process.execPath, team: 'north' });
    await page.getByRole('button', { name: 'Back' }).click();
    const again = page.getByRole('form', { name: 'Agent settings' });
    expect(JSON.parse(await again.getByLabel('Other configuration keys (JSON)').inputValue())).toEqual({ team: 'north' });
    await again.getByLabel('Other configuration keys (JSON)').fill('');
    await again.getByRole('button', { name: 'Save and test' }).click();
    await page.getByRole('group', { name: 'Step 3: Environment test' }).waitFor();
    expect((await t.api.get(`/api/agents/${hired.id}`)).body.adapterConfig).not.toHaveProperty('team');
    expect(unexpectedErrors(consoleErrors)).toEqual([]);
  }, 60_000);

  it('stores a new secret for a variable without leaving the wizard; a name already taken shows the API\'s refusal and stores nothing', async () => {
    const taken = await t.api.post(`/api/companies/${companyId}/secrets`, { name: 'TAKEN_KEY', value: 'first' });
    expect(taken.status, taken.text).toBe(201);
    const refusal = await t.api.post(`/api/companies/${companyId}/secrets`, { name: 'TAKEN_KEY', value: 'second' });
    expect(refusal.status).toBe(409);
    const before = (await t.api.get(`/api/companies/${companyId}/secrets`)).body.length;
    await page.goto(`${t.url}/companies/${companyId}/agents/new`);
    await page.locator('input[type="radio"][value="process"]').check();
    await page.getByRole('button', { name: "Next: the agent's settings" }).click();
    const settings = page.getByRole('form', { name: 'Agent settings' });
    await settings.getByLabel('Name', { exact: true }).fill('Keyed');
    await settings.getByLabel('Command').fill(process.execPath);
    await settings.getByRole('button', { name: 'Add variable to Environment variables' }).click();
    const row = settings.getByRole('group', { name: 'Environment variables: variable 1' });
    await row.getByLabel('Name').fill('TAKEN_KEY');
    await row.getByLabel(/^Kind/).selectOption('secret');
    await row.getByRole('button', { name: /^New secret/ }).click();
    const form = row.getByRole('group', { name: /^New secret/ });
    expect(await seriousViolations(page)).toEqual([]);
    await form.getByLabel('Secret value').fill('second');
    await form.getByRole('button', { name: 'Store secret' }).click();
    await poll(() => form.getByRole('alert').textContent()).toBe(refusal.body.error);
    expect((await t.api.get(`/api/companies/${companyId}/secrets`)).body.length).toBe(before);
    // Another name is stored, and the variable references it.
    await form.getByLabel('Secret name').fill('FRESH_KEY');
    await form.getByRole('button', { name: 'Store secret' }).click();
    await poll(() => row.getByRole('combobox', { name: /^Secret/ }).locator('option:checked').textContent()).toBe('FRESH_KEY');
    const fresh = (await t.api.get(`/api/companies/${companyId}/secrets`)).body.find((secret: any) => secret.name === 'FRESH_KEY');
    expect(fresh).toBeDefined();
    await settings.getByRole('button', { name: 'Hire and test' }).click();
    await page.getByRole('group', { name: 'Step 3: Environment test' }).waitFor();
    const keyed = (await t.api.get(`/api/companies/${companyId}/agents`)).body.find((entry: any) => entry.name === 'Keyed');
    expect(keyed.adapterConfig.env).toEqual({ TAKEN_KEY: { type: 'secret_ref', secretId: fresh.id, version: 'latest' } });
    expect(unexpectedErrors(consoleErrors)).toEqual([]);
  }, 60_000);

  it('has no serious accessibility violation on the wizard at 390 px', async () => {
    const narrow = await openConsolePage(ui.browser, { viewport: { width: 390, height: 844 } });
    try {
      await narrow.page.goto(`${t.url}/companies/${companyId}/agents/new`);
      await narrow.page.getByRole('form', { name: 'Choose an adapter' }).waitFor();
      expect(await seriousViolations(narrow.page)).toEqual([]);
      await narrow.page.locator('input[type="radio"][value="http"]').check();
      await narrow.page.getByRole('button', { name: "Next: the agent's settings" }).click();
      await narrow.page.getByRole('form', { name: 'Agent settings' }).waitFor();
      expect(await seriousViolations(narrow.page)).toEqual([]);
    } finally {
      await narrow.context.close();
    }
  }, 60_000);
});
