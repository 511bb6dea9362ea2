import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { createCompany } from '../support/fixtures.ts';
import { eventsSettled } from '../support/events.ts';
import { agentScripts, processAgent, runWhen, waitFor, wakeOk } from '../plugins/runtime/helpers.ts';
import { startConsoleBrowser, type ConsoleBrowser, poll, seriousViolations, unexpectedErrors } from './browser.ts';

const UI_TIMEOUT = 20_000;

/**
 * The company dashboard in a real browser against a real kernel with the first-party plugins:
 * an agent in a run on an issue (a real process), an agent stopped by its budget, a hire waiting
 * for approval, each shown; the banner's action resolves the stop through the API; an empty
 * company says what to do first; the settings moved to their own page.
 */
describe('console: the company dashboard', () => {
  let t: TestKernel;
  let ui: ConsoleBrowser;
  let page: Page;
  let consoleErrors: string[] = [];
  let company: any;
  let empty: any;
  let runner: any;
  let spender: any;
  let runId = '';

  beforeAll(async () => {
    t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
    const scripts = await agentScripts();
    company = await createCompany(t.api, { name: 'Dash Works' });
    empty = await createCompany(t.api, { name: 'Empty Co' });
    expect((await t.api.patch(`/api/companies/${company.id}/budgets`, { budgetMonthlyCents: 10_000 })).status).toBe(200);

    // A run in progress on an issue: a process that runs until it is cancelled.
    runner = await processAgent(t.api, company.id, join(scripts, 'hang.cjs'), {}, { name: 'Runner' });
    const issue = await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Fix the build' });
    expect(issue.status, issue.text).toBe(201);
    runId = (await wakeOk(t.api, runner.id, { payload: { issueId: issue.body.id } })).run.id;
    await runWhen(t, runId, (run) => run.status === 'running');

    // A hard stop: the agent's budget is spent, so the costs plugin paused it.
    spender = await processAgent(t.api, company.id, join(scripts, 'quick.cjs'), {}, { name: 'Spender' });
    expect((await t.api.patch(`/api/agents/${spender.id}/budgets`, { budgetMonthlyCents: 100 })).status).toBe(200);
    const cost = await t.api.post(`/api/companies/${company.id}/cost-events`, { agentId: spender.id, provider: 'alpha', model: 'a', costCents: 150, occurredAt: new Date().toISOString() });
    expect(cost.status, cost.text).toBe(201);
    await eventsSettled(t);
    await waitFor(async () => ((await t.api.get(`/api/agents/${spender.id}`)).body.status === 'paused' ? true : undefined), 'the hard stop');

    // A hire waiting for the board.
    expect((await t.api.patch(`/api/companies/${company.id}`, { requireBoardApprovalForNewAgents: true })).status).toBe(200);
    const hire = await t.api.post(`/api/companies/${company.id}/agent-hires`, { name: 'Candidate', role: 'engineer' });
    expect(hire.status, hire.text).toBe(201);

    ({ page, errors: consoleErrors } = ui = await startConsoleBrowser({ timeout: UI_TIMEOUT }));
  }, 180_000);
  afterAll(async () => {
    await ui?.close();
    await t?.stop();
  });

  const dashboard = (id: string) => `${t.url}/companies/${id}/dashboard`;

  it('shows the running agent with its run and issue, the hard stop with its reason, the pending approval and the spend', async () => {
    await page.goto(dashboard(company.id));
    await poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Dash Works');
    const card = page.getByTestId(`agent-card-${runner.id}`);
    await poll(() => card.textContent()).toContain('Fix the build');
    expect(await card.textContent()).toContain('Working on');
    expect(await card.getByRole('link', { name: `Run ${runId.slice(0, 8)} of Runner` }).getAttribute('href')).toBe(`/companies/${company.id}/runs/${runId}`);

    const stop = page.getByTestId(`stop-agent-${spender.id}`);
    await poll(() => stop.textContent()).toContain('The agent Spender is paused: its budget hard stop was reached.');
    expect(await stop.textContent()).toContain('Hard stop: $1.50 spent of a $1.00 monthly budget.');
    expect(await page.getByTestId(`agent-card-${spender.id}`).textContent()).toContain('Paused: its budget hard stop was reached.');

    await poll(() => page.getByTestId('pending-approvals').textContent()).toBe('1 approval waits for the board.');
    expect(await page.getByRole('list', { name: 'Newest pending approvals' }).textContent()).toContain('hire agent');
    await poll(() => page.getByTestId('month-spend').textContent()).toBe('$1.50 of $100.00 (2%)');
    await poll(() => page.getByTestId('dash-reported').textContent()).toBe('$1.50');
    expect(await page.getByTestId('dash-measured').textContent()).toBe('$0.00');
    await poll(() => page.getByTestId('open-issues').textContent()).toBe('1 open issue, 0 blocked.');
    for (const title of ['Runs by outcome, last 14 days', 'Success rate, last 14 days', 'Spend per day, last 14 days', 'Issues created per day by status now, last 14 days']) {
      await poll(() => page.getByText(title, { exact: true }).count()).toBe(1);
    }
    expect(await page.getByRole('img', { name: /^Spend per day, last 14 days\./ }).getAttribute('aria-label')).toContain('Reported $1.50');
  }, 60_000);

  it('has no serious axe-core violation at 1280 and 390 px, and fits a 390-wide screen', async () => {
    await page.goto(dashboard(company.id));
    await page.getByTestId(`stop-agent-${spender.id}`).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.goto(dashboard(company.id));
      await page.getByTestId(`stop-agent-${spender.id}`).waitFor();
      expect(await seriousViolations(page)).toEqual([]);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBe(390);
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
  }, 60_000);

  it('follows the run live: a cancelled run leaves its agent card without reloading the page', async () => {
    await page.goto(dashboard(company.id));
    const card = page.getByTestId(`agent-card-${runner.id}`);
    await poll(() => card.textContent()).toContain('Fix the build');
    expect((await t.api.post(`/api/heartbeat-runs/${runId}/cancel`, {})).status).toBe(200);
    await poll(() => card.textContent()).toContain('No run in progress.');
    expect(await card.textContent()).not.toContain('Fix the build');
  }, 60_000);

  it("the banner's action raises the budget and resumes the agent, and the banner goes", async () => {
    await page.goto(dashboard(company.id));
    const form = page.getByRole('form', { name: 'Raise the budget of Spender' });
    await form.getByLabel('New budget in dollars').fill('5.00');
    await form.getByRole('button', { name: 'Raise budget and resume' }).click();
    await poll(() => page.getByTestId(`stop-agent-${spender.id}`).count()).toBe(0);
    const agent = (await t.api.get(`/api/agents/${spender.id}`)).body;
    expect({ status: agent.status, budget: agent.budgetMonthlyCents }).toEqual({ status: 'idle', budget: 500 });
    const overview = (await t.api.get(`/api/companies/${company.id}/budgets/overview`)).body;
    expect(overview.activeIncidents.filter((incident: any) => incident.thresholdType === 'hard')).toEqual([]);
    await poll(() => page.getByTestId(`agent-card-${spender.id}`).textContent()).toContain('No run in progress.');
  }, 60_000);

  it("shows the board's pause of the company with its reason, and Resume lifts it", async () => {
    expect((await t.api.patch(`/api/companies/${company.id}`, { status: 'paused' })).status).toBe(200);
    await page.goto(dashboard(company.id));
    const stop = page.getByTestId(`stop-company-${company.id}`);
    await poll(() => stop.textContent()).toContain('The company Dash Works is paused: paused by the board.');
    expect(await seriousViolations(page)).toEqual([]);
    await stop.getByRole('button', { name: 'Resume company Dash Works' }).click();
    await poll(() => stop.count()).toBe(0);
    expect((await t.api.get(`/api/companies/${company.id}`)).body).toMatchObject({ status: 'active', pauseReason: null });
  }, 60_000);

  it('an empty company says what to do first, with no serious axe-core violation at either width', async () => {
    await page.goto(dashboard(empty.id));
    const note = page.getByTestId('empty-company');
    await poll(() => note.textContent()).toContain('Nothing is happening here yet');
    expect(await note.getByRole('link', { name: 'Hire the first agent' }).getAttribute('href')).toBe(`/companies/${empty.id}/agents`);
    expect(await note.getByRole('link', { name: 'Write the first issue' }).getAttribute('href')).toBe(`/companies/${empty.id}/issues`);
    expect(await page.getByTestId('no-agents').count()).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.goto(dashboard(empty.id));
      await note.waitFor();
      expect(await seriousViolations(page)).toEqual([]);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBe(390);
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
  }, 60_000);

  it("keeps the company's settings on a page of their own, reached from the menu", async () => {
    await page.goto(dashboard(company.id));
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings', exact: true }).click();
    await page.waitForURL(`${t.url}/companies/${company.id}/settings`);
    await poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Settings of Dash Works');
    const form = page.getByRole('form', { name: 'Company settings' });
    await form.getByLabel('Name').fill('Dash Works Ltd');
    await form.getByRole('button', { name: 'Save' }).click();
    await poll(async () => (await t.api.get(`/api/companies/${company.id}`)).body.name).toBe('Dash Works Ltd');
    expect(await page.getByRole('form', { name: 'Delete company' }).count()).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
  }, 60_000);

  it('logged no errors in the browser console', () => {
    expect(unexpectedErrors(consoleErrors)).toEqual([]);
  });
});
