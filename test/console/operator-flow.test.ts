import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { agentScripts, waitFor } from '../plugins/runtime/helpers.ts';
import { startConsoleBrowser, type ConsoleBrowser, poll, seriousViolationsOfPages, unexpectedErrors } from './browser.ts';

const SLOT_PROBE = fileURLToPath(new URL('./fixtures/slot-probe', import.meta.url));
const UI_TIMEOUT = 20_000;

// Prints a few lines over a second, reports 7 cents of usage, and ends well.
const WORKER = `const lines = ['starting work', 'reading the task', 'writing the answer'];
let n = 0; const timer = setInterval(() => { console.log(lines[n]); n += 1; if (n === lines.length) { clearInterval(timer);
process.stdout.write(JSON.stringify({ type: 'service.usage', provider: 'example', model: 'small', costCents: 7, outputTokens: 12 }) + '\\n');
console.log('all done'); } }, 250);`;

/**
 * The console in a real browser (Debian's Chromium, headless) against a real kernel with the
 * first-party plugins, in local_trusted mode (the local board): the operator's daily path.
 */
describe('console: the operator flow in a browser', () => {
  let t: TestKernel;
  let ui: ConsoleBrowser;
  let page: Page;
  let scripts: string;
  let consoleErrors: string[] = [];

  beforeAll(async () => {
    scripts = await agentScripts();
    await writeFile(join(scripts, 'worker.cjs'), WORKER, { mode: 0o644 });
    t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
    // The probe plugin's frame logs the refusals of its own attempts under the frame's policy
    // (default-src 'none'), which the console's own policy does not have; those are its test's point.
    const fromProbeFrame = (text: string) => text.includes("\"default-src 'none'\"") || /^Fetch API cannot load \S+\/api\/companies\. Refused to connect/.test(text);
    ({ page, errors: consoleErrors } = ui = await startConsoleBrowser({ timeout: UI_TIMEOUT, keep: (text) => !fromProbeFrame(text) }));
  });
  afterAll(async () => {
    await ui?.close();
    await t?.stop();
  });

  let companyId = '';
  const agentIds: Record<string, string> = {};

  /**
   * Adds a process agent through the hiring wizard, idle at once: the company asks for approval
   * of hires, and the board skips it with the settings step's check box (the old "Create agent").
   */
  async function createAgent(name: string, script: string, env: Record<string, string> = {}): Promise<string> {
    await page.goto(`${t.url}/companies/${companyId}/agents`);
    await page.getByRole('link', { name: 'Hire an agent' }).click();
    await page.locator('input[type="radio"][value="process"]').check();
    await page.getByRole('button', { name: "Next: the agent's settings" }).click();
    const form = page.getByRole('form', { name: 'Agent settings' });
    await form.getByLabel('Name', { exact: true }).fill(name);
    await form.getByLabel('Command').fill(process.execPath);
    await form.getByLabel('Arguments (one per line)').fill(join(scripts, script));
    await form.getByLabel('Grace before a kill (seconds)').fill('1');
    for (const [index, [key, value]] of Object.entries(env).entries()) {
      await form.getByRole('button', { name: 'Add variable to Environment variables' }).click();
      const row = form.getByRole('group', { name: `Environment variables: variable ${index + 1}` });
      await row.getByLabel('Name').fill(key);
      await row.getByLabel('Value', { exact: true }).fill(value);
    }
    await form.getByLabel('Start at once, without the hiring approval').check();
    await form.getByRole('button', { name: 'Hire and test' }).click();
    await page.getByRole('group', { name: 'Step 3: Environment test' }).getByRole('button', { name: 'Continue to the budget' }).click();
    await page.getByRole('form', { name: 'Monthly budget' }).getByRole('button', { name: 'Next: a first issue' }).click();
    await page.getByRole('button', { name: 'Skip: no issue now' }).click();
    await poll(() => page.getByRole('heading', { name: `${name} is hired` }).count()).toBe(1);
    await page.getByRole('link', { name: `Open ${name}` }).click();
    await page.waitForURL(/\/agents\/[0-9a-f-]{36}$/);
    await poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe(name);
    const id = page.url().split('/').pop()!;
    expect((await t.api.get(`/api/agents/${id}`)).body).toMatchObject({ status: 'idle', adapterConfig: { command: process.execPath, args: [join(scripts, script)], graceSec: 1, ...(Object.keys(env).length ? { env } : {}) } });
    return id;
  }

  it('opens as the local board and creates a company', async () => {
    await page.goto(t.url + '/');
    await page.waitForURL(/\/companies$/);
    await poll(() => page.locator('.who').textContent()).toBe('Local board');
    // An empty instance opens on the getting-started card; the plain form is one click away.
    await page.getByRole('region', { name: 'Getting started' }).waitFor();
    await page.locator('summary', { hasText: 'New company, without the guide' }).click();
    const form = page.getByRole('form', { name: 'New company' });
    await form.getByLabel('Name').fill('Console Works');
    await form.getByLabel('New agents need board approval').check();
    await form.getByRole('button', { name: 'Create company' }).click();
    await page.waitForURL(/\/companies\/[0-9a-f-]{36}\/dashboard$/);
    companyId = page.url().split('/')[4]!;
    await poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Console Works');
    const stored = await t.api.get(`/api/companies/${companyId}`);
    expect(stored.body).toMatchObject({ name: 'Console Works', requireBoardApprovalForNewAgents: true });
  }, 60_000);

  it('shows the API error message when a form is refused', async () => {
    await page.goto(`${t.url}/companies`);
    await page.locator('summary', { hasText: 'New company' }).click();
    const form = page.getByRole('form', { name: 'New company' });
    await form.getByLabel('Name').fill('   ');
    await form.getByRole('button', { name: 'Create company' }).click();
    const alert = form.getByRole('alert');
    await poll(() => alert.textContent()).toMatch(/name/i);
  }, 60_000);

  it('creates an agent, and hires one that waits for approval until the board approves', async () => {
    agentIds.worker = await createAgent('Worker', 'worker.cjs');
    await page.goto(`${t.url}/companies/${companyId}/agents/new`);
    await page.locator('input[type="radio"][value="process"]').check();
    await page.getByRole('button', { name: "Next: the agent's settings" }).click();
    const hire = page.getByRole('form', { name: 'Agent settings' });
    await hire.getByLabel('Name', { exact: true }).fill('Recruit');
    await hire.getByLabel('Command').fill(process.execPath);
    await hire.getByLabel('Arguments (one per line)').fill('-e\n0');
    // A key the process adapter's fields do not show, kept as typed.
    await hire.locator('summary', { hasText: 'Other configuration keys' }).click();
    await hire.getByLabel('Other configuration keys (JSON)').fill('{"team": "launch"}');
    await hire.getByRole('button', { name: 'Hire and test' }).click();
    await page.getByRole('group', { name: 'Step 3: Environment test' }).getByRole('button', { name: 'Continue to the budget' }).click();
    await page.getByRole('form', { name: 'Monthly budget' }).getByRole('button', { name: 'Next: a first issue' }).click();
    await page.getByRole('button', { name: 'Skip: no issue now' }).click();
    await poll(() => page.getByRole('heading', { name: 'Recruit is waiting for approval' }).count()).toBe(1);
    const recruit = (await t.api.get(`/api/companies/${companyId}/agents`)).body.find((a: any) => a.name === 'Recruit');
    expect(recruit).toMatchObject({ status: 'pending_approval', adapterType: 'process', adapterConfig: { command: process.execPath, team: 'launch' } });
    await page.goto(`${t.url}/companies/${companyId}/approvals`);
    await page.getByRole('button', { name: /^Approve hire agent/ }).click();
    await waitFor(async () => (await t.api.get(`/api/agents/${recruit.id}`)).body.status === 'idle', 'the hire to be approved');
    await poll(() => page.locator('.badge:not(.unread)').first().textContent()).toBe('approved');
    // The org chart shows both.
    await page.goto(`${t.url}/companies/${companyId}/agents`);
    await poll(() => page.locator('.org').textContent()).toMatch(/Worker.*Recruit|Recruit.*Worker/);
  }, 90_000);

  it('creates an issue, assigns it and comments on it', async () => {
    await page.goto(`${t.url}/companies/${companyId}/issues`);
    await page.locator('summary', { hasText: 'New issue' }).click();
    const form = page.getByRole('form', { name: 'New issue' });
    await form.getByLabel('Title').fill('Write the launch note');
    await form.getByRole('button', { name: 'Create issue' }).click();
    const board = page.getByTestId('issue-board');
    await board.getByRole('link', { name: /Write the launch note/ }).click();
    await page.waitForURL(/\/issues\/[0-9a-f-]{36}$/);
    const issueId = page.url().split('/').pop()!;
    await page.getByLabel('Assignee').selectOption({ label: 'Recruit' });
    await waitFor(async () => (await t.api.get(`/api/issues/${issueId}`)).body.assigneeAgentId !== null, 'the assignment');
    await page.getByLabel('Status').selectOption('in_review');
    await waitFor(async () => (await t.api.get(`/api/issues/${issueId}`)).body.status === 'in_review', 'the status change');
    const comment = page.getByRole('form', { name: 'Add a comment' });
    await comment.getByLabel('Comment').fill('Looks close; one more pass.');
    await comment.getByRole('button', { name: 'Comment' }).click();
    await poll(() => page.locator('.comments').textContent()).toContain('one more pass');
    // The list view shows it too.
    await page.goto(`${t.url}/companies/${companyId}/issues`);
    await page.getByRole('button', { name: 'List' }).click();
    await poll(() => page.locator('table').textContent()).toContain('Write the launch note');
  }, 90_000);

  it("watches a real run's live log to its end, then sees its cost on the chart", async () => {
    await page.goto(`${t.url}/companies/${companyId}/agents/${agentIds.worker}`);
    await page.getByRole('button', { name: 'Run now' }).click();
    await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
    const log = page.getByTestId('run-log');
    await poll(() => log.textContent(), { timeout: 30_000 }).toContain('all done');
    expect(await log.textContent()).toContain('starting work');
    await poll(() => page.getByTestId('stream-state').textContent(), { timeout: 30_000 }).toBe('Run ended');
    await poll(() => page.locator('.title-row .badge').textContent()).toBe('succeeded');
    await page.goto(`${t.url}/companies/${companyId}/costs`);
    await poll(() => page.getByRole('img', { name: /^By agent:/ }).getAttribute('aria-label')).toContain('Worker $0.07');
    await poll(() => page.getByRole('img', { name: /^By provider:/ }).getAttribute('aria-label')).toContain('example $0.07');
    expect(await page.getByTestId('month-spend').textContent()).toBe('$0.07');
  }, 90_000);

  it('sets a budget and sees the hard stop: the run is cancelled, the agent paused, the incident open', async () => {
    const spender = await createAgent('Spender', 'spender.cjs', { SPEND_CENTS: '4' });
    const budget = page.getByRole('form', { name: 'Agent budget' });
    await budget.getByLabel(/Monthly budget in dollars/).fill('0.10');
    await budget.getByRole('button', { name: 'Set budget' }).click();
    await waitFor(async () => (await t.api.get(`/api/agents/${spender}`)).body.budgetMonthlyCents === 10, 'the budget');
    await page.getByRole('button', { name: 'Run now' }).click();
    await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
    await poll(() => page.getByTestId('stream-state').textContent(), { timeout: 30_000 }).toBe('Run ended');
    await poll(() => page.locator('.title-row .badge').textContent()).toBe('cancelled');
    await page.goto(`${t.url}/companies/${companyId}/agents/${spender}`);
    await poll(() => page.locator('.title-row .badge').textContent()).toBe('paused');
    await page.goto(`${t.url}/companies/${companyId}/costs`);
    const incidents = page.getByRole('list', { name: 'Open budget incidents' });
    await poll(() => incidents.textContent()).toContain('Hard stop');
    // Each open incident is resolved from the page, until none is left.
    const open = await incidents.getByRole('button', { name: 'Keep paused' }).count();
    expect(open).toBeGreaterThan(0);
    for (let left = open; left > 0; left--) {
      await incidents.getByRole('button', { name: 'Keep paused' }).first().click();
      await poll(() => page.getByRole('button', { name: 'Keep paused' }).count()).toBe(left - 1);
    }
    await poll(() => page.getByText('No open incidents.').count()).toBe(1);
    expect((await t.api.get(`/api/agents/${spender}`)).body.status).toBe('paused');
  }, 90_000);

  it("enables a plugin and shows its slot in a sandboxed frame that cannot reach the console's document, cookie or API", async () => {
    await page.goto(`${t.url}/plugins`);
    const install = page.getByRole('form', { name: 'Install a plugin' });
    await install.getByLabel(/Absolute folder path/).fill(SLOT_PROBE);
    await install.getByRole('button', { name: 'Install' }).click();
    await page.getByRole('link', { name: 'Slot probe' }).click();
    await page.waitForURL(/\/plugins\/slot-probe$/);
    const enable = page.getByRole('form', { name: 'Grant capabilities and enable' });
    expect(await enable.textContent()).toContain('Shows a panel on the company dashboard');
    await enable.getByRole('button', { name: 'Enable with these grants' }).click();
    await poll(() => page.locator('.title-row .badge').textContent(), { timeout: 30_000 }).toBe('enabled');

    await page.goto(`${t.url}/companies/${companyId}/dashboard`);
    const frameElement = page.locator('iframe[data-plugin="slot-probe"]');
    expect(await frameElement.getAttribute('sandbox')).toBe('allow-scripts');
    const frame = page.frameLocator('iframe[data-plugin="slot-probe"]');
    await poll(() => frame.locator('#parent').textContent()).toBe('parent: blocked SecurityError');
    await poll(() => frame.locator('#cookie').textContent()).toBe('cookie: blocked SecurityError');
    await poll(() => frame.locator('#api').textContent()).toBe('api: blocked TypeError');
    // The one way out is the console's bridge, to its own plugin, for the company the console shows.
    await poll(() => frame.locator('#bridge').textContent()).toBe(`bridge: ${JSON.stringify({ params: { hello: 'console' }, company: companyId })}`);
    await poll(() => frame.locator('#spoof').textContent()).toBe(`spoof: ${JSON.stringify({ params: null, company: companyId })}`);
    // The frame's own origin is opaque: nothing of the console's is its own.
    const origin = await page.frames().find((f) => f.url().endsWith('/plugin-frame.html'))!.evaluate(() => window.origin);
    expect(origin).toBe('null');
  }, 90_000);

  it("installs an example plugin from the list: its text slot renders in a frame and its launcher runs its action", async () => {
    await page.goto(`${t.url}/plugins`);
    await page.getByRole('button', { name: 'Install Greeting panel' }).click();
    await page.getByRole('link', { name: 'Greeting panel' }).click();
    await page.waitForURL(/\/plugins\/greeting-panel$/);
    const enable = page.getByRole('form', { name: 'Grant capabilities and enable' });
    await enable.getByRole('button', { name: 'Enable with these grants' }).click();
    await poll(() => page.locator('.title-row .badge').textContent(), { timeout: 30_000 }).toBe('enabled');
    // The config form is generated from the plugin's config schema.
    const config = page.getByRole('form', { name: 'Plugin configuration' });
    await config.getByLabel(/^salutation/).fill('Ahoy');
    await config.getByRole('button', { name: 'Save configuration' }).click();
    await poll(() => config.getByRole('status').textContent()).toBe('Saved.');

    await page.goto(`${t.url}/companies/${companyId}/dashboard`);
    const panel = page.frameLocator('iframe[data-plugin="greeting-panel"]');
    await poll(() => panel.locator('h2').textContent()).toBe('Ahoy, Console Works!');
    await page.getByRole('group', { name: 'Plugin actions' }).getByRole('button', { name: 'Wave' }).click();
    await poll(() => page.getByRole('group', { name: 'Plugin actions' }).getByRole('status').textContent()).toBe('👋 from Console Works');
  }, 60_000);

  it('creates a skill and edits the skill policy, showing the API\'s issues for a bad rule', async () => {
    await page.goto(`${t.url}/companies/${companyId}/skills`);
    const create = page.getByRole('form', { name: 'New skill' });
    await create.getByLabel('Name').fill('Release notes');
    await create.getByRole('button', { name: 'Create skill' }).click();
    await poll(() => page.getByRole('list', { name: 'Company skills' }).textContent()).toContain('Release notes');
    await page.getByRole('button', { name: 'Release notes', exact: true }).click();
    await poll(() => page.getByRole('textbox', { name: 'SKILL.md' }).inputValue()).toContain('Release notes');

    const policy = page.getByRole('form', { name: 'Skill policy' });
    await policy.getByLabel('Rules (JSON array)').fill('[{"id": 7}]');
    await policy.getByRole('button', { name: 'Save policy' }).click();
    await poll(() => page.getByRole('list', { name: 'Policy problems' }).count()).toBe(1);
    expect(await policy.getByRole('alert').textContent()).toBe('Invalid skill policy document');
    await policy.getByLabel('Default effect').selectOption('deny');
    await policy.getByLabel('Rules (JSON array)').fill('[]');
    await policy.getByRole('button', { name: 'Save policy' }).click();
    await poll(() => page.getByTestId('policy-revision').textContent()).toBe('Revision 1');
    expect((await t.api.get(`/api/companies/${companyId}/skill-policy`)).body).toMatchObject({ revision: 1, defaultEffect: 'deny', rules: [] });
  }, 60_000);

  it('passes axe-core with no serious violations on the main pages', async () => {
    const pages = ['/companies', `/companies/${companyId}/dashboard`, `/companies/${companyId}/agents`, `/companies/${companyId}/agents/${agentIds.worker}`,
      `/companies/${companyId}/issues`, `/companies/${companyId}/runs`, `/companies/${companyId}/costs`, `/companies/${companyId}/secrets`,
      `/companies/${companyId}/activity`, `/companies/${companyId}/approvals`, `/companies/${companyId}/skills`, '/plugins', '/plugins/slot-probe', '/settings'];
    expect(await seriousViolationsOfPages(page, t.url, pages)).toEqual({});
  }, 120_000);

  it('logged no errors in the browser console', () => {
    // A refused form is an error answer the page shows; the browser logs the failed request itself.
    expect(unexpectedErrors(consoleErrors)).toEqual([]);
  });
});
