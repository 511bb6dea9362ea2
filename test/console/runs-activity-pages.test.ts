import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';
import { agentScripts, runWhen, wakeOk } from '../plugins/runtime/helpers.ts';
import { startConsoleBrowser, type ConsoleBrowser, openConsolePage, poll, seriousViolations, settled, unexpectedErrors } from './browser.ts';

/**
 * The run page as a conversation with its facts, the runs listed on the agent's and the issue's
 * pages, and the activity feed as sentences with names, links and filters; in a real browser
 * against a real kernel with the first-party plugins. The runs are real processes started by a
 * fixture adapter (`console_local`): the script writes transcript lines in three stages, waiting
 * between them for files the test writes, so the page is seen growing while the run still runs.
 */
const FIXTURE = fileURLToPath(new URL('./fixtures/transcript-tool', import.meta.url));
const TOOL = `const fs = require('node:fs');
const [mode, gateOne, gateTwo, issueId] = process.argv.slice(2);
const say = (entries) => console.log(JSON.stringify({ type: 'service.transcript', entries }));
const when = (file, then) => (fs.existsSync(file) ? then() : setTimeout(() => when(file, then), 50));
say([{ kind: 'init', sessionId: 'sess-9', model: 'scripted-2' }, { kind: 'assistant', text: 'Reading the issue.' }]);
if (mode === '--fail') {
  say([{ kind: 'error', message: 'the tool could not go on' }, { kind: 'result', text: 'Gave up.', isError: true }]);
  process.exit(3);
}
when(gateOne, () => {
  say([{ kind: 'thinking', text: 'The report needs a summary.' }, { kind: 'tool_call', id: 'c1', name: 'Write', input: { file: 'report.md' } }]);
  when(gateTwo, async () => {
    const res = await fetch(process.env.SERVICE_API_URL + '/api/issues/' + issueId + '/comments', { method: 'POST',
      headers: { authorization: 'Bearer ' + process.env.SERVICE_API_KEY, 'content-type': 'application/json' }, body: JSON.stringify({ body: 'Report written.' }) });
    say([{ kind: 'tool_result', id: 'c1', output: 'wrote 12 lines (comment ' + res.status + ')' }, { kind: 'assistant', text: 'The report is written.' },
      { kind: 'result', text: 'Wrote the report.', isError: false, turns: 2, durationMs: 1500 }]);
    console.log(JSON.stringify({ type: 'service.usage', provider: 'acme', model: 'acme-1', inputTokens: 1200, cachedInputTokens: 200, outputTokens: 300, costCents: 42 }));
    console.log(JSON.stringify({ type: 'service.result', result: { text: 'Wrote the report.' } }));
  });
});`;

describe('console: runs as conversations and readable activity', () => {
  let t: TestKernel;
  let ui: ConsoleBrowser;
  let page: Page;
  let consoleErrors: string[] = [];
  let companyId = '';
  let scripts = '';
  let tool = '';
  let writer: any;
  let issue: any;
  let runId = '';

  beforeAll(async () => {
    t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
    companyId = (await createCompany(t.api, { name: 'Report Works' })).id;
    await installAndEnable(t, FIXTURE);
    scripts = await agentScripts();
    tool = join(scripts, 'tool.cjs');
    await writeFile(tool, TOOL, { mode: 0o644 });
    ({ page, errors: consoleErrors } = ui = await startConsoleBrowser());
    const created = await t.api.post(`/api/companies/${companyId}/issues`, { title: 'Write the report' });
    expect(created.status, created.text).toBe(201);
    issue = created.body;
  });
  afterAll(async () => {
    await ui?.close();
    await t?.stop();
  });

  const toolAgent = (name: string, args: string[]) =>
    createAgent(t.api, companyId, { name, adapterType: 'console_local', adapterConfig: { command: process.execPath, args, graceSec: 1 } });
  const transcript = () => page.getByRole('list', { name: 'Transcript' });
  const fact = (name: string) => page.getByTestId('run-facts').locator('div', { has: page.locator('dt', { hasText: new RegExp(`^${name}$`) }) }).locator('dd');

  it('grows the transcript while the run runs, then shows the facts once it ends', async () => {
    const gateOne = join(scripts, 'gate-one');
    const gateTwo = join(scripts, 'gate-two');
    writer = await toolAgent('Writer', [tool, '--work', gateOne, gateTwo, issue.id]);
    ({ run: { id: runId } } = await wakeOk(t.api, writer.id, { source: 'on_demand', reason: 'console test', payload: { issueId: issue.id } }));
    await page.goto(`${t.url}/companies/${companyId}/runs/${runId}`);
    const messages = () => transcript().getByRole('article', { name: 'Assistant message' }).allTextContents();
    await poll(messages).toEqual(['Reading the issue.']);
    expect(await page.getByTestId('stream-state').textContent()).toBe('Live');
    // The facts are there while it runs: who, on what, why.
    await poll(() => fact('Agent').textContent()).toBe('Writer');
    expect(await fact('Agent').getByRole('link').getAttribute('href')).toBe(`/companies/${companyId}/agents/${writer.id}`);
    await poll(() => fact('Issue').getByRole('link').first().textContent()).toBe(`${issue.identifier} Write the report`);
    expect(await fact('Woken by').textContent()).toBe('console test (on demand, manual)');
    expect(await page.getByTestId('run-duration').textContent()).toMatch(/^running for /);

    await writeFile(gateOne, '');
    // Grown on the same page, without a reload, while the run still runs.
    await poll(() => transcript().locator('details[data-kind="tool_call"] summary').textContent()).toBe('Tool call Write running');
    expect(await transcript().locator('details.t-thinking summary').textContent()).toBe('Thinking');
    expect((await t.api.get(`/api/heartbeat-runs/${runId}`)).body.status).toBe('running');
    expect(await page.getByTestId('stream-state').textContent()).toBe('Live');

    await writeFile(gateTwo, '');
    await poll(messages).toEqual(['Reading the issue.', 'The report is written.']);
    const ended = await runWhen(t, runId);
    expect(ended.status).toBe('succeeded');
    await poll(() => page.getByTestId('stream-state').textContent()).toBe('Run ended');
    await poll(() => page.getByTestId('run-exit').textContent()).toBe('exit code 0');
    expect(await page.getByTestId('run-duration').textContent()).toMatch(/^\d+(\.\d)? s$|min/);
    await poll(() => page.getByTestId('run-cost').textContent()).toBe('$0.42 · 1,200 in (200 cached) · 300 out · adapter $0.42');
    expect(await page.getByTestId('run-result').textContent()).toBe('Wrote the report.');
    expect(await page.getByTestId('run-facts').locator('.run-error').count()).toBe(0);
    // The tool call, collapsed, opens on a click with its input and output.
    const call = transcript().locator('details[data-kind="tool_call"]');
    expect(await call.evaluate((element) => (element as HTMLDetailsElement).open)).toBe(false);
    await call.locator('summary').click();
    const [input, output] = await call.locator('pre').allTextContents();
    expect(JSON.parse(input!)).toEqual({ file: 'report.md' });
    expect(output).toBe('wrote 12 lines (comment 201)');
    expect(await seriousViolations(page)).toEqual([]);
  }, 120_000);

  it('names a failed run\'s error code with what to do about it', async () => {
    const breaker = await toolAgent('Breaker', [tool, '--fail']);
    const { run } = await wakeOk(t.api, breaker.id);
    const ended = await runWhen(t, run.id);
    expect(ended).toMatchObject({ status: 'failed', exitCode: 3 });
    await page.goto(`${t.url}/companies/${companyId}/runs/${run.id}`);
    await poll(() => page.getByTestId('stream-state').textContent()).toBe('Run ended');
    await poll(() => page.getByTestId('run-exit').textContent()).toBe('exit code 3');
    // Its error code when the run has one, then what to do about it.
    const error = fact('Error');
    expect(await error.locator('code').count()).toBe(ended.errorCode ? 1 : 0);
    expect(await page.getByTestId('run-advice').textContent()).toBe('The process exited with a non-zero code: the end of the raw log says why.');
    expect(await fact('Issue').textContent()).toBe('none');
    await poll(() => transcript().locator('[data-kind="error"]').textContent()).toBe('Error: the tool could not go on');
  }, 60_000);

  it('lists the run on the agent\'s page and on the issue\'s page', async () => {
    await page.goto(`${t.url}/companies/${companyId}/agents/${writer.id}`);
    const agentRuns = page.getByRole('table', { name: 'Runs of this agent' });
    const row = agentRuns.getByRole('row', { name: new RegExp(`Run ${runId.slice(0, 8)}`) });
    await poll(() => row.getByRole('cell').nth(4).textContent()).toBe('$0.42');
    expect(await row.getByRole('cell').nth(1).textContent()).toBe('succeeded');
    expect(await row.getByRole('link').getAttribute('href')).toBe(`/companies/${companyId}/runs/${runId}`);
    expect(await agentRuns.getByRole('row').count()).toBe(2);
    expect(await seriousViolations(page)).toEqual([]);

    await page.goto(`${t.url}/companies/${companyId}/issues/${issue.id}`);
    const issueRuns = page.getByRole('table', { name: 'Runs on this issue' });
    const issueRow = issueRuns.getByRole('row', { name: new RegExp(`Run ${runId.slice(0, 8)}`) });
    await poll(() => issueRow.getByRole('cell').nth(5).textContent()).toBe('$0.42');
    expect(await issueRow.getByRole('cell').nth(1).textContent()).toBe('Writer');
    expect(await seriousViolations(page)).toEqual([]);
    await issueRow.getByRole('link').click();
    await poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe(`Run ${runId.slice(0, 8)}`);
  }, 60_000);

  it('reads the activity as sentences with names and links, details folded, and filters it by actor and kind', async () => {
    const manual = await t.api.post(`/api/companies/${companyId}/activity`, { actorId: 'deploy-bot', action: 'deploy.finished', entityType: 'deployment', entityId: 'd-1' });
    expect(manual.status, manual.text).toBe(201);
    await page.goto(`${t.url}/companies/${companyId}/activity`);
    const feed = page.getByRole('list', { name: 'Activity entries' });
    const comment = feed.locator('li[data-action="issue.comment_added"]');
    await poll(() => comment.locator('.sentence').textContent()).toBe(`Writer commented on ${issue.identifier} Write the report`);
    expect(await comment.getByRole('link', { name: `${issue.identifier} Write the report` }).getAttribute('href')).toBe(`/companies/${companyId}/issues/${issue.id}`);
    const details = comment.locator('details');
    expect(await details.evaluate((element) => (element as HTMLDetailsElement).open)).toBe(false);
    await details.locator('summary').click();
    expect(await details.locator('pre').textContent()).toContain('"commentId"');
    const created = feed.locator('li[data-action="issue.created"]');
    await poll(() => created.locator('.sentence').textContent()).toMatch(new RegExp(`^(The local board|.+) created ${issue.identifier} Write the report$`));
    const agentCreated = feed.locator('li[data-action="agent.created"]').filter({ hasText: 'Breaker' });
    expect(await agentCreated.getByRole('link', { name: 'Breaker' }).getAttribute('href')).toMatch(/\/agents\/[0-9a-f-]{36}$/);
    // An action the table does not know still reads as a sentence.
    expect(await feed.locator('li[data-action="deploy.finished"] .sentence').textContent()).toBe('deploy-bot recorded “deploy finished” on deployment d-1');
    // No raw action names and no cut ids in the sentences.
    for (const sentence of await feed.locator('.sentence').allTextContents()) expect(sentence).not.toMatch(/\b[a-z]+\.[a-z_]+\b/);
    expect(await seriousViolations(page)).toEqual([]);

    // By actor: only what Writer did, each entry its own.
    const all = await feed.locator(':scope > li').count();
    await page.getByLabel('Who').selectOption({ label: 'Writer' });
    await poll(() => feed.locator(':scope > li').count()).toBeLessThan(all);
    const byWriter = (await t.api.get(`/api/companies/${companyId}/activity?actorType=agent&actorId=${writer.id}`)).body;
    expect(byWriter.length).toBeGreaterThan(0);
    await poll(() => feed.locator(':scope > li').count()).toBe(byWriter.length);
    for (const sentence of await feed.locator('.sentence').allTextContents()) expect(sentence.startsWith('Writer ')).toBe(true);
    // And by kind: Writer's entries about issues.
    await page.getByLabel('About').selectOption({ label: 'Issues' });
    const writerOnIssues = byWriter.filter((entry: any) => entry.entityType === 'issue');
    await poll(() => feed.locator(':scope > li').count()).toBe(writerOnIssues.length);
    await page.getByLabel('Who').selectOption({ label: 'anyone' });
    const onIssues = (await t.api.get(`/api/companies/${companyId}/activity?entityType=issue`)).body;
    await poll(() => feed.locator(':scope > li').count()).toBe(onIssues.length);
    expect(onIssues.length).toBeGreaterThan(writerOnIssues.length);
    expect(unexpectedErrors(consoleErrors)).toEqual([]);
  }, 60_000);

  it('has no serious accessibility violation on the run, agent, issue and activity pages at 390 px', async () => {
    const narrow = await openConsolePage(ui.browser, { viewport: { width: 390, height: 844 } });
    try {
      for (const path of [`/companies/${companyId}/runs/${runId}`, `/companies/${companyId}/agents/${writer.id}`, `/companies/${companyId}/issues/${issue.id}`, `/companies/${companyId}/activity`]) {
        await narrow.page.goto(t.url + path);
        await narrow.page.getByRole('heading', { level: 1 }).first().waitFor();
        await settled(narrow.page);
        expect({ path, violations: await seriousViolations(narrow.page) }).toEqual({ path, violations: [] });
      }
      expect(unexpectedErrors(narrow.errors)).toEqual([]);
    } finally {
      await narrow.context.close();
    }
  }, 90_000);
});
