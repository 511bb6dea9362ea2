import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';
import { agentScripts, runWhen, wakeOk } from '../plugins/runtime/helpers.ts';
import { startConsoleBrowser, type ConsoleBrowser, poll, seriousViolations, unexpectedErrors } from './browser.ts';

/**
 * The console's pages for agents that run a coding tool, in a real browser against a real
 * kernel with the first-party plugins: a run's transcript as a conversation (live, then read
 * back), the raw log when a run has none, the environment test with each check and its fix, the
 * local tools' settings form and Claude Code's login answer. The runs are real: a fixture plugin
 * contributes `console_local` and starts the agent's command, a script that prints the transcript
 * lines a driver would report (`service.transcript`), waiting for a file the test writes so the
 * page is seen while the run is still going.
 */
const FIXTURE = fileURLToPath(new URL('./fixtures/transcript-tool', import.meta.url));
const LOGIN_FIXTURE = fileURLToPath(new URL('./fixtures/login-tool', import.meta.url));
const TOOL = `const fs = require('node:fs');
const [mode, gate] = process.argv.slice(2);
if (mode === '--version') { console.log('fixture-tool 1.2.3'); process.exit(0); }
if (mode === '--plain') { console.log('plain output, no transcript'); process.exit(0); }
const say = (entries) => console.log(JSON.stringify({ type: 'service.transcript', entries }));
say([{ kind: 'init', sessionId: 'sess-1', model: 'scripted-1', version: '1.2.3', tools: ['Bash'] },
  { kind: 'assistant', text: 'I will read the issue first.' },
  { kind: 'tool_call', id: 'call-1', name: 'Bash', input: { command: 'node -e "read the issue"' } },
  { kind: 'log', line: '{"type":"rate_limit_event"}' }]);
console.log('a plain line, in the raw log only');
const finish = () => {
  say([{ kind: 'tool_result', id: 'call-1', output: '{"identifier":"CON-1","title":"<img src=x onerror=window.pwned=1>"}' },
    { kind: 'error', message: 'the model was rate limited once; retried' },
    { kind: 'assistant', text: 'Commented on CON-1 and set it done.' },
    { kind: 'result', text: 'Commented and closed CON-1.', isError: false, turns: 3, durationMs: 4200 }]);
  console.log(JSON.stringify({ type: 'service.result', result: { text: 'Commented and closed CON-1.' } }));
};
const wait = () => (fs.existsSync(gate) ? finish() : setTimeout(wait, 50));
wait();`;

describe('console: coding-tool agents in a browser', () => {
  let t: TestKernel;
  let ui: ConsoleBrowser;
  let page: Page;
  let consoleErrors: string[] = [];
  let companyId = '';
  let scripts = '';
  let tool = '';

  beforeAll(async () => {
    t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
    companyId = (await createCompany(t.api, { name: 'Tool Works' })).id;
    await installAndEnable(t, FIXTURE);
    scripts = await agentScripts();
    tool = join(scripts, 'tool.cjs');
    await writeFile(tool, TOOL, { mode: 0o644 });
    ({ page, errors: consoleErrors } = ui = await startConsoleBrowser());
  });
  afterAll(async () => {
    await ui?.close();
    await t?.stop();
  });

  const toolAgent = (name: string, args: string[], extra: Record<string, unknown> = {}) =>
    createAgent(t.api, companyId, { name, adapterType: 'console_local', adapterConfig: { command: process.execPath, args, graceSec: 1, ...extra } });

  it('shows a run\'s transcript as a conversation while it runs, tool calls collapsed, errors marked, the result last', async () => {
    const gate = join(scripts, 'go-transcript');
    const agent = await toolAgent('Talker', [tool, '--talk', gate]);
    const { run } = await wakeOk(t.api, agent.id);
    await page.goto(`${t.url}/companies/${companyId}/runs/${run.id}`);
    const conversation = page.getByRole('list', { name: 'Transcript' });
    await poll(() => conversation.getByRole('article', { name: 'Assistant message' }).allTextContents()).toEqual(['I will read the issue first.']);
    // Live: the run is still waiting for the gate, its tool call has no result yet.
    expect((await t.api.get(`/api/heartbeat-runs/${run.id}`)).body.status).toBe('running');
    const call = conversation.locator('details[data-kind="tool_call"]');
    expect(await call.locator('summary').textContent()).toBe('Tool call Bash running');
    expect(await call.evaluate((element) => (element as HTMLDetailsElement).open)).toBe(false);
    expect(await conversation.textContent()).toContain('Session started · model scripted-1 · version 1.2.3 · session sess-1 · 1 tools');
    expect(await conversation.textContent()).toContain('{"type":"rate_limit_event"}');
    // The raw log is kept, folded away under the conversation.
    expect(await page.getByRole('log', { name: 'Run log' }).isVisible()).toBe(false);

    await writeFile(gate, '');
    await poll(() => conversation.getByRole('article', { name: 'Assistant message' }).allTextContents()).toEqual(['I will read the issue first.', 'Commented on CON-1 and set it done.']);
    await poll(() => conversation.locator('[data-kind="result"]').textContent()).toBe('Result · 3 turns · 4.2 sCommented and closed CON-1.');
    expect(await call.locator('summary').textContent()).toBe('Tool call Bash done');
    await call.locator('summary').click();
    const [input, output] = await call.locator('pre').allTextContents();
    expect(JSON.parse(input!)).toEqual({ command: 'node -e "read the issue"' });
    // What the tool reported is text on the page, never markup: an agent writes it.
    expect(output).toBe('{"identifier":"CON-1","title":"<img src=x onerror=window.pwned=1>"}');
    expect(await conversation.locator('img').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
    const error = conversation.locator('[data-kind="error"]');
    expect(await error.textContent()).toBe('Error: the model was rate limited once; retried');
    expect(await error.evaluate((element) => element.className)).toContain('t-error');
    // The result is the conversation's last item; the fixture's own tool result is shown with its call only.
    expect(await conversation.locator(':scope > li').last().getAttribute('data-kind')).toBe('result');
    expect(await conversation.locator(':scope > li').count()).toBe(7);
    await runWhen(t, run.id);
    await poll(() => page.getByTestId('stream-state').textContent()).toBe('Run ended');

    // Read back after the run: the same conversation, from GET .../transcript.
    const kept = (await t.api.get(`/api/heartbeat-runs/${run.id}/transcript`)).body;
    expect(kept.entries.map((entry: any) => entry.kind)).toEqual(['init', 'assistant', 'tool_call', 'log', 'tool_result', 'error', 'assistant', 'result']);
    await page.reload();
    await poll(() => page.getByRole('list', { name: 'Transcript' }).locator(':scope > li').count()).toBe(7);
    await page.locator('summary', { hasText: 'Raw log' }).click();
    await poll(() => page.getByRole('log', { name: 'Run log' }).textContent()).toContain('a plain line, in the raw log only');
    expect(await seriousViolations(page)).toEqual([]);
  }, 120_000);

  it('falls back to the raw log when a run has no transcript', async () => {
    const agent = await toolAgent('Plain', [tool, '--plain']);
    const { run } = await wakeOk(t.api, agent.id);
    await runWhen(t, run.id);
    await page.goto(`${t.url}/companies/${companyId}/runs/${run.id}`);
    await poll(() => page.getByRole('log', { name: 'Run log' }).textContent()).toContain('plain output, no transcript');
    await poll(() => page.getByTestId('stream-state').textContent()).toBe('Run ended');
    expect(await page.getByRole('list', { name: 'Transcript' }).count()).toBe(0);
  }, 60_000);

  it('tests the environment from the agent page: each check, a failed one with its fix', async () => {
    const agent = await toolAgent('Tester', [tool]);
    await page.goto(`${t.url}/companies/${companyId}/agents/${agent.id}`);
    await page.getByRole('button', { name: 'Test environment' }).click();
    const checks = page.getByRole('list', { name: 'Environment checks' });
    await poll(() => checks.locator(':scope > li').count()).toBe(2);
    const answer = (await t.api.post(`/api/agents/${agent.id}/adapter-test`, {})).body;
    expect(answer).toMatchObject({ ok: false, version: process.version, checks: [{ name: 'version', ok: true }, { name: 'credential', ok: false }] });
    expect(await page.getByTestId('environment-test').getByRole('status').textContent()).toBe(`Environment test failed · version ${process.version}`);
    const [version, credential] = await checks.locator(':scope > li').allTextContents();
    expect(version).toBe(`ok version ${answer.checks[0].message}`);
    expect(credential).toBe(`failed credential ${answer.checks[1].message}Fix: ${answer.checks[1].fix}`);

    const secret = await t.api.post(`/api/companies/${companyId}/secrets`, { name: 'fixture-key', value: 'not-for-the-page' });
    expect(secret.status, secret.text).toBe(201);
    const patched = await t.api.patch(`/api/agents/${agent.id}`, { adapterConfig: { env: { FIXTURE_API_KEY: { type: 'secret_ref', secretId: secret.body.id, version: 'latest' } } } });
    expect(patched.status, patched.text).toBe(200);
    await page.getByRole('button', { name: 'Test environment' }).click();
    await poll(() => page.getByTestId('environment-test').getByRole('status').textContent()).toBe(`Environment test passed · version ${process.version}`);
    expect(await checks.textContent()).not.toContain('Fix:');
    expect(await seriousViolations(page)).toEqual([]);
  }, 60_000);

  it("hires a Claude Code agent from the tool's fields through the wizard, edits them on its page, and shows the login's answer", async () => {
    const catalog = (await t.api.get('/api/llms/agent-configuration.json')).body.adapterTypes as any[];
    const efforts = (type: string) => catalog.find((entry) => entry.type === type).fields.find((field: any) => field.name === 'effort')?.values ?? null;
    const secret = await t.api.post(`/api/companies/${companyId}/secrets`, { name: 'anthropic-key', value: 'sk-not-for-the-page' });
    await page.goto(`${t.url}/companies/${companyId}/agents/new`);
    const settingsOf = async (type: string) => {
      await page.locator(`input[type="radio"][value="${type}"]`).check();
      await page.getByRole('button', { name: "Next: the agent's settings" }).click();
      return page.getByRole('form', { name: 'Agent settings' });
    };
    // Codex has efforts but no max turns; Claude Code has both.
    let form = await settingsOf('beta_local');
    expect(await form.getByLabel('Max turns').count()).toBe(0);
    await page.getByRole('button', { name: 'Back' }).click();
    form = await settingsOf('alpha_local');
    expect((await form.getByLabel('Effort').locator('option').allTextContents()).slice(1)).toEqual(efforts('alpha_local'));
    await form.getByLabel('Name', { exact: true }).fill('Claude');
    await form.getByLabel('Command').fill('/usr/local/bin/claude');
    await form.getByLabel('Working directory').fill('/srv/work/repo');
    await form.getByLabel('Model', { exact: true }).fill('claude-opus-5');
    await form.getByLabel('Effort').selectOption('high');
    await form.getByLabel('Max turns').fill('12');
    await form.getByLabel('Extra arguments (one per line)').fill('--add-dir\n/srv/shared');
    await form.getByLabel("Keep the tool's own sandbox").check();
    await form.getByLabel('Timeout (seconds)').fill('900');
    await form.getByRole('button', { name: 'Add variable to Environment variables' }).click();
    const key = form.getByRole('group', { name: 'Environment variables: variable 1' });
    await key.getByLabel('Name').fill('ANTHROPIC_API_KEY');
    await key.getByLabel(/^Kind/).selectOption('secret');
    await key.getByRole('combobox', { name: /^Secret/ }).selectOption({ label: 'anthropic-key' });
    await form.getByRole('button', { name: 'Add variable to Environment variables' }).click();
    const url = form.getByRole('group', { name: 'Environment variables: variable 2' });
    await url.getByLabel('Name').fill('ANTHROPIC_BASE_URL');
    await url.getByLabel('Value', { exact: true }).fill('http://127.0.0.1:9999');
    expect(await seriousViolations(page)).toEqual([]);
    await form.getByRole('button', { name: 'Hire and test' }).click();
    await page.getByRole('group', { name: 'Step 3: Environment test' }).waitFor();
    const hired = (await t.api.get(`/api/companies/${companyId}/agents`)).body.find((entry: any) => entry.name === 'Claude');
    const agentId = hired.id as string;
    // The coding-agents plugin validated the form's configuration and filled in its defaults.
    expect(hired.adapterType).toBe('alpha_local');
    expect(hired.adapterConfig).toMatchObject({
      command: '/usr/local/bin/claude', cwd: '/srv/work/repo', model: 'claude-opus-5', effort: 'high', maxTurns: 12, extraArgs: ['--add-dir', '/srv/shared'],
      toolSandbox: true, timeoutSec: 900, env: { ANTHROPIC_API_KEY: { type: 'secret_ref', secretId: secret.body.id, version: 'latest' }, ANTHROPIC_BASE_URL: 'http://127.0.0.1:9999' },
    });
    const created = hired;
    // Without the coding-agents plugin the kernel stores what the agent page sends as it is, so
    // the edit below reads back exactly the form's configuration.
    const disabled = await t.api.post('/api/plugins/coding-agents/disable', {});
    expect(disabled.status, disabled.text).toBe(200);
    await page.goto(`${t.url}/companies/${companyId}/agents/${agentId}`);
    await poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Claude');

    // The agent page edits the same fields: an emptied one is removed, the others kept.
    const settings = page.getByRole('form', { name: 'Tool settings' });
    expect(await settings.getByLabel('Model').inputValue()).toBe('claude-opus-5');
    await settings.getByLabel('Effort').selectOption('low');
    await settings.getByLabel('Max turns').fill('');
    await settings.getByLabel("Keep the tool's own sandbox").uncheck();
    await settings.getByRole('button', { name: 'Save tool settings' }).click();
    await poll(() => page.getByText('Tool settings saved.').count()).toBe(1);
    const edited = (await t.api.get(`/api/agents/${agentId}`)).body.adapterConfig;
    expect(edited).toMatchObject({ effort: 'low', toolSandbox: false, model: 'claude-opus-5', env: created.adapterConfig.env });
    expect(edited).not.toHaveProperty('maxTurns');
    expect(await settings.getByLabel('Effort').inputValue()).toBe('low');

    // Log in shows the API's answer: with no plugin running alpha_local, its refusal; with one, every field of its answer.
    await page.getByRole('button', { name: 'Log in' }).click();
    const refused = await t.api.post(`/api/agents/${agentId}/alpha-login`, {});
    expect([refused.status, refused.body.code]).toEqual([409, 'adapter_unavailable']);
    await poll(() => page.getByRole('alert').textContent()).toBe(refused.body.error);
    await installAndEnable(t, LOGIN_FIXTURE);
    await page.getByRole('button', { name: 'Log in' }).click();
    const answer = page.getByRole('region', { name: 'Login answer' });
    await poll(() => answer.count()).toBe(1);
    const login = (await t.api.post(`/api/agents/${agentId}/alpha-login`, {})).body;
    expect(login).toMatchObject({ status: 'logged_in', credentialVariables: ['ANTHROPIC_API_KEY'] });
    const fields = async () => answer.locator(':scope > dl > div').evaluateAll((rows) => rows.map((row) => [row.querySelector('dt')!.textContent, row.querySelector('dd')!.textContent]));
    expect(await fields()).toEqual([
      ['adapterType', 'alpha_local'], ['status', 'logged_in'], ['credentialVariables', 'ANTHROPIC_API_KEY'], ['nextStep', login.nextStep],
      ['options', 'methodapi_keyvariableANTHROPIC_API_KEYstepsCreate an API key.Store it as a company secret.'],
    ]);
    expect(await answer.getByRole('listitem').filter({ hasText: 'Store it as a company secret.' }).count()).toBeGreaterThan(0);
    expect(await seriousViolations(page)).toEqual([]);
    expect(unexpectedErrors(consoleErrors)).toEqual([]);
  }, 120_000);
});
