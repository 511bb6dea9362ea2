import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { codingTool } from '../support/coding-tools.ts';
import { createApi, type Api } from '../support/harness.ts';
import { bash, conversationText, startAnthropicModel, toolResults, type ScriptedAnthropic } from '../support/scripted-models/anthropic.ts';
import { startServer, type ServerProcess } from '../support/server-process.ts';
import { startConsoleBrowser, type ConsoleBrowser, poll, seriousViolations, unexpectedErrors } from './browser.ts';

/**
 * The first-run walkthrough of issue 29, as a new operator does it: `npm start` on a fresh
 * KEEL_HOME (the same entry file and start-up path: npm's prestart, kernel/main.ts, migrations of
 * an empty database, the first-party plugins installed and enabled), then the browser alone from
 * the empty instance to a completed run: the first company, its first agent through the hiring
 * wizard (the real Claude Code, pinned in test/coding-tools, pointed at a scripted Anthropic API
 * of this process), the environment test, a budget, the first issue, the agent woken by it, and
 * the run's page with the finished run and its transcript. The API is only read, to check what
 * the browser did.
 *
 * The database is a fresh, empty one (DATABASE_URL) in the test run's one embedded PostgreSQL:
 * a second embedded cluster would cost a start of its own and nothing the walkthrough needs.
 */
const ISSUE_TITLE = 'Say hello to the team';
const COMMENT = 'Hello, team: I am on board.';
const FINAL = 'Greeted the team and closed the issue.';
const API_KEY = 'sk-ant-scripted-first-run';

/** A shell command the model has the agent run: Node's fetch against Keel with the run's token. */
function keelCall(method: string, path: string, body?: unknown): string {
  const init = `{method:"${method}",headers:{authorization:"Bearer "+process.env.SERVICE_API_KEY,"content-type":"application/json"}${body === undefined ? '' : `,body:JSON.stringify(${JSON.stringify(body)})`}}`;
  return `fetch(process.env.SERVICE_API_URL+${path},${init}).then(async (r)=>console.log(r.status, await r.text()))`;
}
const ISSUE = '"/api/issues/"+process.env.SERVICE_TASK_ID';

describe('first run: from a fresh `npm start` to a completed run, in the browser alone', () => {
  let home: string;
  let server: ServerProcess;
  let url = '';
  let api: Api;
  let model: ScriptedAnthropic;
  let claude = '';
  let ui: ConsoleBrowser;
  let page: Page;
  let errors: string[] = [];
  const databaseName = `walk_${randomBytes(6).toString('hex')}`;
  const adminUrl = inject('adminDatabaseUrl');

  beforeAll(async () => {
    claude = await codingTool('claude');
    // The model: the environment test's minimal call gets a plain answer; the run on the issue
    // comments on it and closes it through the agent's own shell, then says what it did.
    model = await startAnthropicModel((request) => {
      if (!conversationText(request).includes(ISSUE_TITLE)) return { text: 'ready' };
      const step = toolResults(request).length;
      if (step === 0) return bash(`node -e '${keelCall('POST', `${ISSUE}+"/comments"`, { body: COMMENT })}'`, { text: 'I will greet the team on the issue.' });
      if (step === 1) return bash(`node -e '${keelCall('PATCH', ISSUE, { status: 'done' })}'`);
      return { text: FINAL };
    });
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    // Empty, not the run's migrated template: the start migrates it, as on a new install.
    await admin.query(`create database ${databaseName}`);
    await admin.end();
    home = await mkdtemp(join(tmpdir(), 'keel-first-run-'));
    server = startServer({ home, npm: true, detached: true, env: { DATABASE_URL: adminUrl.replace(/\/[^/]*$/, `/${databaseName}`) } });
    url = await server.listening;
    api = createApi(url);
    ({ page, errors } = ui = await startConsoleBrowser({ timeout: 30_000 }));
  }, 240_000);

  afterAll(async () => {
    await ui?.close();
    if (server && server.child.exitCode === null && server.child.signalCode === null) {
      // The whole group, as a service manager stops `npm start` (npm forwards it to Keel as well).
      process.kill(-server.child.pid!, 'SIGTERM');
      await server.exited;
    }
    await model?.close();
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`drop database if exists ${databaseName} with (force)`).catch(() => undefined);
    await admin.end();
    if (home) await rm(home, { recursive: true, force: true });
  }, 120_000);

  it('starts on an empty instance and ends on the first run\'s transcript', async () => {
    expect(server.output()).toContain('database: external PostgreSQL (DATABASE_URL)');
    expect((await api.get('/api/companies')).body).toEqual([]);

    // The empty instance opens on the getting-started card.
    await page.goto(url + '/');
    await page.waitForURL(/\/companies$/);
    const start = page.getByRole('region', { name: 'Getting started' });
    // The card's steps render after the instance's state arrives: wait for them.
    await poll(() => start.getByRole('list', { name: 'Onboarding steps' }).locator('li').count()).toBe(4);
    const first = start.getByRole('form', { name: 'First company' });
    await first.getByLabel('Company name').fill('Harbour Lights');
    await first.getByRole('button', { name: 'Create company and hire its first agent' }).click();
    await page.waitForURL(/\/companies\/[0-9a-f-]{36}\/agents\/new$/);
    const companyId = page.url().split('/')[4]!;

    // The wizard: Claude Code, whose executable is not on this machine's PATH (its command names it).
    await poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Hire an agent for Harbour Lights');
    await page.locator('input[type="radio"][value="alpha_local"]').check();
    await page.getByRole('button', { name: "Next: the agent's settings" }).click();
    const settings = page.getByRole('form', { name: 'Agent settings' });
    await settings.getByLabel('Name', { exact: true }).fill('Greeter');
    await settings.getByLabel('Command').fill(claude);
    await settings.getByLabel('Timeout (seconds)').fill('300');
    await settings.getByRole('button', { name: 'Add variable to Environment variables' }).click();
    const baseUrl = settings.getByRole('group', { name: 'Environment variables: variable 1' });
    await baseUrl.getByLabel('Name').fill('ANTHROPIC_BASE_URL');
    await baseUrl.getByLabel('Value', { exact: true }).fill(model.url);
    // The key goes to the vault from the wizard itself: the company has no secret yet.
    await settings.getByRole('button', { name: 'Add variable to Environment variables' }).click();
    const key = settings.getByRole('group', { name: 'Environment variables: variable 2' });
    await key.getByLabel('Name').fill('ANTHROPIC_API_KEY');
    await key.getByLabel(/^Kind/).selectOption('secret');
    await key.getByRole('button', { name: 'New secret for Environment variables: variable 2' }).click();
    const newSecret = key.getByRole('group', { name: 'New secret for Environment variables: variable 2' });
    expect(await newSecret.getByLabel('Secret name').inputValue()).toBe('ANTHROPIC_API_KEY');
    await newSecret.getByLabel('Secret value').fill(API_KEY);
    await newSecret.getByRole('button', { name: 'Store secret' }).click();
    await poll(() => key.getByRole('combobox', { name: /^Secret/ }).locator('option:checked').textContent()).toBe('ANTHROPIC_API_KEY');
    expect(await page.content()).not.toContain(API_KEY);
    await settings.getByRole('button', { name: 'Hire and test' }).click();

    // The environment test runs the real tool: its version, then a minimal model call.
    const testStep = page.getByRole('group', { name: 'Step 3: Environment test' });
    await testStep.getByRole('button', { name: 'Test environment' }).click();
    const result = testStep.getByTestId('environment-test');
    await poll(() => result.getByRole('status').textContent(), { timeout: 120_000 }).toMatch(/^Environment test passed/);
    await testStep.getByRole('button', { name: 'Next: budget' }).click();
    const budget = page.getByRole('form', { name: 'Monthly budget' });
    await budget.getByLabel('Monthly budget in dollars (0: none)').fill('20');
    await budget.getByRole('button', { name: 'Next: a first issue' }).click();

    // The first issue wakes the agent; the last screen links its run.
    const issueForm = page.getByRole('form', { name: 'First issue' });
    await issueForm.getByLabel('Title').fill(ISSUE_TITLE);
    await issueForm.getByLabel('Description').fill('Post a short hello as a comment, then close this issue.');
    await issueForm.getByRole('button', { name: 'Create and assign' }).click();
    await poll(() => page.getByRole('heading', { name: 'Greeter is hired' }).count()).toBe(1);
    const watch = page.getByRole('link', { name: 'Watch its first run' });
    await poll(() => watch.count(), { timeout: 60_000 }).toBe(1);
    await watch.click();
    await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
    const runId = page.url().split('/').pop()!;

    // The run's page follows it to its end: the facts, then the transcript as a conversation.
    await poll(() => page.getByTestId('stream-state').textContent(), { timeout: 180_000 }).toBe('Run ended');
    await poll(() => page.locator('.title-row .badge').textContent()).toBe('succeeded');
    const facts = page.getByTestId('run-facts');
    await poll(() => facts.textContent()).toContain('Greeter');
    await poll(() => facts.textContent()).toContain(ISSUE_TITLE);
    const transcript = page.getByRole('list', { name: 'Transcript' });
    await poll(() => transcript.getByRole('article', { name: 'Assistant message' }).allTextContents()).toEqual(['I will greet the team on the issue.', FINAL]);
    await poll(() => transcript.locator('[data-kind="result"]').textContent()).toContain(FINAL);
    expect(await transcript.locator('details.t-tool').count()).toBe(2);
    expect(await seriousViolations(page)).toEqual([]);

    // The issue, one click away: done, with the agent's comment and the run that worked on it.
    await facts.getByRole('link', { name: new RegExp(ISSUE_TITLE) }).click();
    await page.waitForURL(/\/issues\/[0-9a-f-]{36}$/);
    await poll(() => page.locator('.title-row .badge').textContent()).toBe('done');
    await poll(() => page.locator('.comments').textContent()).toContain(COMMENT);
    await poll(() => page.locator('.comments').textContent()).toContain('Greeter');
    await poll(() => page.getByTestId('run-list').getByRole('link', { name: `Run ${runId.slice(0, 8)}` }).count()).toBe(1);

    // What the browser did, read back from the API.
    const agents = (await api.get(`/api/companies/${companyId}/agents`)).body;
    expect(agents).toEqual([expect.objectContaining({ name: 'Greeter', adapterType: 'alpha_local', budgetMonthlyCents: 2000 })]);
    const secrets = (await api.get(`/api/companies/${companyId}/secrets`)).body;
    expect(secrets).toEqual([expect.objectContaining({ name: 'ANTHROPIC_API_KEY' })]);
    expect(agents[0].adapterConfig.env).toEqual({ ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: { type: 'secret_ref', secretId: secrets[0].id, version: 'latest' } });
    // The model was called with the key from the vault.
    const keysSent = new Set(model.requests.filter((request) => request.path === '/v1/messages').map((request) => request.headers['x-api-key']));
    expect([...keysSent]).toEqual([API_KEY]);
    const run = (await api.get(`/api/heartbeat-runs/${runId}`)).body;
    expect(run).toMatchObject({ agentId: agents[0].id, invocationSource: 'assignment', wakeReason: 'issue_assigned', status: 'succeeded', resultJson: { result: FINAL, isError: false } });
    const issue = (await api.get(`/api/issues/${run.issueId}`)).body;
    expect(issue).toMatchObject({ title: ISSUE_TITLE, status: 'done', assigneeAgentId: agents[0].id });
    const comments = (await api.get(`/api/issues/${issue.id}/comments`)).body;
    expect(comments).toEqual([expect.objectContaining({ body: COMMENT, authorAgentId: agents[0].id })]);
    expect(unexpectedErrors(errors)).toEqual([]);
  }, 600_000);
});
