import { chmod, mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { createCompany } from '../support/fixtures.ts';
import { waitFor } from '../plugins/runtime/helpers.ts';
import { mountWorkspacesFolder } from '../plugins/environments/helpers.ts';
import { startConsoleBrowser, type ConsoleBrowser, openConsolePage, unexpectedErrors, poll, seriousViolations, seriousViolationsOfPages, settled } from './browser.ts';

const UI_TIMEOUT = 20_000;

/**
 * The console's pages for an execution workspace's runtime services, commands and operations,
 * for creating execution workspaces, and for environments with their probes and leases, in a
 * real browser (Debian's Chromium, headless) against a real kernel with the first-party plugins,
 * as the local board. Commands and services really run: the kernel starts them as the agent user
 * in the workspace's directory, inside the folder mounted for the company. Every change is
 * checked through the API, and every refusal shown is the API's own message.
 */
describe('console: runtime services, workspace commands and environments in a browser', () => {
  let t: TestKernel;
  let ui: ConsoleBrowser;
  let page: Page;
  let consoleErrors: string[] = [];
  let mount = '';
  let companyId = '';
  let projectId = '';
  let sourceId = '';
  let secretId = '';
  let workspaceId = '';

  beforeAll(async () => {
    t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
    companyId = (await createCompany(t.api, { name: 'Runtime Works' })).id;
    projectId = (await t.api.post(`/api/companies/${companyId}/projects`, { name: 'App' })).body.id;
    // The folder an operator mounted for the company: traversable, and the workspace's directory
    // inside it writable by the agent user that runs the commands.
    mount = await realpath(await mkdtemp(join(tmpdir(), 'keel-console-runtime-')));
    await mountWorkspacesFolder(t, companyId, mount);
    await mkdir(join(mount, 'app'));
    await chmod(join(mount, 'app'), 0o777);
    const source = await t.api.post(`/api/projects/${projectId}/workspaces`, { name: 'main', cwd: join(mount, 'app') });
    expect(source.status, source.text).toBe(201);
    sourceId = source.body.id;
    const secret = await t.api.post(`/api/companies/${companyId}/secrets`, { name: 'deploy-token', value: 'not-for-the-page' });
    expect(secret.status, secret.text).toBe(201);
    secretId = secret.body.id;
    ({ page, errors: consoleErrors } = ui = await startConsoleBrowser({ timeout: UI_TIMEOUT }));
  });
  afterAll(async () => {
    await ui?.close();
    await t?.stop();
    if (mount) await rm(mount, { recursive: true, force: true });
  });

  const executionWorkspaces = async () => (await t.api.get(`/api/companies/${companyId}/execution-workspaces`)).body as any[];
  const workspace = async () => (await t.api.get(`/api/execution-workspaces/${workspaceId}`)).body;

  it("creates an execution workspace from a project workspace, showing the API's refusal of a worktree without a branch", async () => {
    await page.goto(`${t.url}/companies/${companyId}/workspaces`);
    await page.locator('summary', { hasText: 'New execution workspace' }).click();
    const form = page.getByRole('form', { name: 'New execution workspace' });
    await form.getByLabel(/^Project(?! workspace)/).selectOption({ label: 'App' });
    await poll(() => form.getByRole('combobox', { name: /^Project workspace/ }).textContent()).toContain('main');
    await form.getByLabel('Mode').selectOption('git_worktree');
    await form.getByLabel('Worktree directory (absolute path)').fill(join(mount, 'tree'));
    await form.getByRole('button', { name: 'Create execution workspace' }).click();
    const refused = await t.api.post(`/api/companies/${companyId}/execution-workspaces`, { projectWorkspaceId: sourceId, mode: 'git_worktree', cwd: join(mount, 'tree') });
    expect(refused.body.code).toBe('branch_required');
    await poll(() => form.getByRole('alert').textContent()).toBe(refused.body.error);
    expect(await executionWorkspaces()).toEqual([]);

    await form.getByLabel('Mode').selectOption('project_primary');
    await form.getByLabel(/^Name/).fill('runner');
    await form.getByRole('button', { name: 'Create execution workspace' }).click();
    await poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('runner');
    const [created] = await executionWorkspaces();
    expect(created).toMatchObject({ name: 'runner', mode: 'project_primary', projectWorkspaceId: sourceId, cwd: join(mount, 'app'), status: 'active', runtimeServices: [], workspaceCommands: [] });
    workspaceId = created.id;
    expect(page.url()).toBe(`${t.url}/companies/${companyId}/workspaces/${workspaceId}`);
    await poll(() => page.getByText('No services: define them below.').count()).toBe(1);
  }, 90_000);

  it("defines a service and a command as a form, showing the API's refusal of a variable name", async () => {
    await page.goto(`${t.url}/companies/${companyId}/workspaces/${workspaceId}`);
    await page.locator('summary', { hasText: 'Edit services and commands' }).click();
    const form = page.getByRole('form', { name: 'Definitions' });
    await form.getByRole('button', { name: 'Add service' }).click();
    const service = form.getByRole('group', { name: 'Service 1', exact: true });
    await service.getByLabel(/^Id/).fill('web');
    await service.getByLabel('Name', { exact: true }).fill('Web');
    await service.getByLabel('Command').fill('/bin/sh');
    await service.getByLabel('Arguments (one per line)').fill('-c\necho "listening"; exec sleep 300');
    await service.getByLabel('Port (optional)').fill('8080');
    await service.getByLabel(/^Seconds to stop/).fill('1');
    await form.getByRole('button', { name: 'Add command' }).click();
    const command = form.getByRole('group', { name: 'Command 1', exact: true });
    await command.getByLabel(/^Id/).fill('build');
    await command.getByLabel('Name', { exact: true }).fill('Build');
    await command.getByLabel('Command').fill('/bin/sh');
    await command.getByLabel('Arguments (one per line)').fill('-c\necho "built with $GREETING"; echo "token $DEPLOY_TOKEN"; echo oops >&2; exit 3');
    await command.getByRole('button', { name: 'Add variable to Variables of Command 1' }).click();
    const variable = command.getByRole('group', { name: 'Variables of Command 1: variable 1' });
    await variable.getByLabel('Name').fill('LD_PRELOAD');
    await variable.getByLabel('Value', { exact: true }).fill('/tmp/evil.so');
    const save = form.getByRole('button', { name: 'Save definitions' });
    await save.click();
    await poll(() => form.getByRole('alert').textContent()).toMatch(/LD_PRELOAD/);
    const refused = await t.api.patch(`/api/execution-workspaces/${workspaceId}`, { workspaceCommands: [{ id: 'build', name: 'Build', command: '/bin/sh', env: { LD_PRELOAD: '/tmp/evil.so' } }] });
    expect(refused.body.code).toBe('workspace_env_refused');
    expect(await form.getByRole('alert').textContent()).toBe(refused.body.error);
    expect(await workspace()).toMatchObject({ runtimeServices: [], workspaceCommands: [] });

    await variable.getByLabel('Name').fill('GREETING');
    await variable.getByLabel('Value', { exact: true }).fill('hello');
    await command.getByRole('button', { name: 'Add variable to Variables of Command 1' }).click();
    const secret = command.getByRole('group', { name: 'Variables of Command 1: variable 2' });
    await secret.getByLabel('Name').fill('DEPLOY_TOKEN');
    await secret.getByLabel(/^Kind/).selectOption('secret');
    await secret.getByRole('combobox', { name: /^Secret/ }).selectOption({ label: 'deploy-token' });
    expect(await seriousViolations(page)).toEqual([]);
    await save.click();
    await poll(() => form.getByRole('status').textContent()).toBe('Saved.');
    expect(await workspace()).toMatchObject({
      runtimeServices: [{ id: 'web', name: 'Web', command: '/bin/sh', args: ['-c', 'echo "listening"; exec sleep 300'], port: 8080, graceSec: 1 }],
      workspaceCommands: [{ id: 'build', name: 'Build', command: '/bin/sh', env: { GREETING: 'hello', DEPLOY_TOKEN: { type: 'secret_ref', secretId, version: 'latest' } } }],
    });
    await poll(() => page.getByRole('list', { name: 'Runtime services' }).textContent()).toMatch(/Web\s*stopped/);
    expect(await page.getByRole('list', { name: 'Commands' }).textContent()).toContain('Build');
  }, 90_000);

  it("runs a command and shows its result and its output, read until the process ended", async () => {
    await page.getByRole('button', { name: 'Run Build' }).click();
    const operations = page.getByRole('list', { name: 'Operations' });
    await poll(() => operations.textContent()).toMatch(/failed\s*runtime command run build · exit code 3/);
    const [op] = (await t.api.get(`/api/execution-workspaces/${workspaceId}/workspace-operations`)).body;
    expect(op).toMatchObject({ kind: 'runtime_command', status: 'failed', details: { exitCode: 3 } });
    await operations.getByRole('button', { name: /^Output of runtime command run build/ }).click();
    const log = page.getByRole('log', { name: /^Output of runtime command run build/ });
    await poll(() => log.textContent()).toContain('exited with code 3');
    const text = await log.textContent();
    expect(text).toContain('built with hello');
    // The secret reached the process through the vault; what it printed of it is masked in its output.
    expect(text).toContain('token ***');
    expect(text).not.toContain('not-for-the-page');
    expect(text).toContain('oops');
    expect(await log.locator('.log-stderr').first().textContent()).toBe('oops');
  }, 90_000);

  it("reads a running command's output as it grows, until the process ends", async () => {
    // The command waits for a file the test writes, so its first line is shown while it still runs.
    const current = await workspace();
    const slow = { id: 'wait', name: 'Wait for go', command: '/bin/sh', args: ['-c', 'echo first; while [ ! -f go ]; do sleep 0.1; done; echo second'] };
    const patched = await t.api.patch(`/api/execution-workspaces/${workspaceId}`, { workspaceCommands: [...current.workspaceCommands, slow] });
    expect(patched.status, patched.text).toBe(200);
    await page.reload();
    await page.getByRole('button', { name: 'Run Wait for go' }).click();
    const operations = page.getByRole('list', { name: 'Operations' });
    await poll(() => operations.textContent()).toMatch(/running\s*runtime command run wait/);
    await operations.getByRole('button', { name: /^Output of runtime command run wait/ }).click();
    const log = page.getByRole('log', { name: /^Output of runtime command run wait/ });
    await poll(() => log.textContent()).toContain('first');
    expect(await log.textContent()).not.toContain('second');
    await writeFile(join(mount, 'app', 'go'), '');
    await poll(() => log.textContent()).toContain('second');
    await poll(() => operations.textContent()).toMatch(/succeeded\s*runtime command run wait · exit code 0/);
    await poll(() => log.textContent()).toMatch(/first\s*second\s*exited with code 0/);
  }, 90_000);

  it('starts, restarts and stops a service, showing its state', async () => {
    const services = page.getByRole('list', { name: 'Runtime services' });
    const state = async () => (await t.api.get(`/api/execution-workspaces/${workspaceId}/runtime-services`)).body[0];
    await services.getByRole('button', { name: 'Start Web', exact: true }).click();
    await poll(() => services.textContent()).toMatch(/Web\s*running/);
    const first = await state();
    expect(first).toMatchObject({ id: 'web', status: 'running', executionId: expect.any(String) });
    expect(await services.getByRole('button', { name: 'Start Web', exact: true }).isDisabled()).toBe(true);

    await services.getByRole('button', { name: 'Restart Web' }).click();
    await waitFor(async () => { const now = await state(); return now.status === 'running' && now.executionId !== first.executionId; }, 'the restart of Web');
    await poll(() => services.textContent()).toMatch(/Web\s*running/);

    await services.getByRole('button', { name: 'Stop Web' }).click();
    await poll(() => services.textContent()).toMatch(/Web\s*stopped/);
    expect(await state()).toMatchObject({ status: 'stopped', stoppedAt: expect.any(String) });
    expect(await services.getByRole('button', { name: 'Stop Web' }).isDisabled()).toBe(true);
    expect(await services.getByRole('button', { name: 'Start Web', exact: true }).isDisabled()).toBe(false);
    await page.getByRole('button', { name: 'Refresh operations' }).click();
    await poll(() => page.getByRole('list', { name: 'Operations' }).textContent()).toMatch(/runtime service stop web/);
  }, 90_000);

  const environments = async () => (await t.api.get(`/api/companies/${companyId}/environments`)).body as any[];

  it("creates an environment with a plain and a secret variable, showing the API's refusal of a secret in plain text", async () => {
    await mkdir(join(mount, 'envs'));
    await chmod(join(mount, 'envs'), 0o777);
    await page.goto(`${t.url}/companies/${companyId}/workspaces`);
    await page.locator('summary', { hasText: 'New environment' }).click();
    const form = page.getByRole('form', { name: 'New environment' });
    await form.getByLabel('Name', { exact: true }).first().fill('Local runs');
    await form.getByLabel(/^Root directory/).fill(join(mount, 'envs'));
    await form.getByRole('button', { name: 'Add variable to Variables' }).click();
    const plain = form.getByRole('group', { name: 'Variables: variable 1' });
    await plain.getByLabel('Name').fill('GREETING');
    await plain.getByLabel('Value', { exact: true }).fill('hi');
    await form.getByRole('button', { name: 'Add variable to Variables' }).click();
    const token = form.getByRole('group', { name: 'Variables: variable 2' });
    await token.getByLabel('Name').fill('API_TOKEN');
    await token.getByLabel('Value', { exact: true }).fill('plain-secret');
    await form.getByRole('button', { name: 'Create environment' }).click();
    const refused = await t.api.post(`/api/companies/${companyId}/environments`, { name: 'Local runs', driver: 'local', config: { root: join(mount, 'envs') }, envVars: { API_TOKEN: 'plain-secret' } });
    expect(refused.body.code).toBe('secret_value_in_plain_text');
    await poll(() => form.getByRole('alert').textContent()).toBe(refused.body.error);
    expect(await environments()).toEqual([]);

    await token.getByLabel(/^Kind/).selectOption('secret');
    await token.getByRole('combobox', { name: /^Secret/ }).selectOption({ label: 'deploy-token' });
    expect(await seriousViolations(page)).toEqual([]);
    await form.getByRole('button', { name: 'Create environment' }).click();
    const list = page.getByRole('list', { name: 'Environments' });
    await poll(() => list.textContent()).toContain('Local runs');
    expect(await list.textContent()).toContain('Variables: GREETING, API_TOKEN');
    expect(await list.textContent()).not.toContain('plain-secret');
    expect(await environments()).toMatchObject([{
      name: 'Local runs', driver: 'local', status: 'active', config: { root: join(mount, 'envs') }, maxConcurrentLeases: 10,
      envVars: { GREETING: 'hi', API_TOKEN: { type: 'secret_ref', secretId, version: 'latest' } },
    }]);
  }, 90_000);

  it('probes, edits, lists the leases of, archives and deletes an environment', async () => {
    const [env] = await environments();
    const list = page.getByRole('list', { name: 'Environments' });
    await list.getByRole('button', { name: 'Probe Local runs' }).click();
    const probe = page.getByRole('list', { name: 'Probe of Local runs' });
    await poll(() => probe.textContent()).toMatch(/passed\s*root_writable/);
    expect(await probe.textContent()).toMatch(/passed\s*root_approved/);
    expect(await list.getByRole('status').textContent()).toMatch(/^Probe passed/);

    await list.locator('summary', { hasText: 'Edit Local runs' }).click();
    const edit = page.getByRole('form', { name: 'Edit environment Local runs' });
    await edit.getByLabel('At most this many active leases').fill('3');
    await edit.getByLabel('Description (optional)').fill('Runs on this machine');
    await edit.getByRole('button', { name: 'Save environment' }).click();
    await waitFor(async () => (await environments())[0].maxConcurrentLeases === 3, 'the edit of Local runs');
    expect((await environments())[0]).toMatchObject({ description: 'Runs on this machine', envVars: env.envVars, config: env.config });
    await poll(() => list.textContent()).toContain('at most 3 leases');

    const lease = await t.api.post(`/api/environments/${env.id}/leases`, {});
    expect(lease.status, lease.text).toBe(201);
    await list.locator('summary', { hasText: 'Leases of Local runs' }).click();
    await list.getByRole('button', { name: 'Refresh leases of Local runs' }).click();
    const leases = page.getByRole('list', { name: 'Leases of Local runs' });
    await poll(() => leases.textContent()).toContain(lease.body.path);
    expect(await leases.textContent()).toMatch(/active\s*ephemeral/);

    await list.getByRole('button', { name: 'Delete Local runs' }).click();
    const inUse = await t.api.delete(`/api/environments/${env.id}`);
    expect(inUse.body.code).toBe('environment_in_use');
    await poll(() => list.getByRole('alert').textContent()).toBe(inUse.body.error);
    expect(await environments()).toHaveLength(1);

    expect((await t.api.post(`/api/environment-leases/${lease.body.id}/release`, {})).status).toBe(200);
    await list.getByRole('button', { name: 'Refresh leases of Local runs' }).click();
    await poll(() => leases.textContent()).toMatch(/released\s*ephemeral/);

    await list.getByRole('button', { name: 'Archive Local runs' }).click();
    await waitFor(async () => (await environments())[0].status === 'archived', 'the archive of Local runs');
    await poll(() => list.textContent()).toMatch(/Local runs\s*archived/);
    await list.getByRole('button', { name: 'Delete Local runs' }).click();
    await waitFor(async () => (await environments()).length === 0, 'the deletion of Local runs');
    await poll(() => page.getByText('No environments.').count()).toBe(1);
  }, 90_000);

  const pages = () => [`/companies/${companyId}/workspaces`, `/companies/${companyId}/workspaces/${workspaceId}`];

  it('fits these pages on a 390-wide screen without sideways scrolling, with their forms open', async () => {
    const { context: phoneContext, page: phone } = await openConsolePage(ui.browser, { viewport: { width: 390, height: 844 }, timeout: UI_TIMEOUT });
    try {
      for (const path of pages()) {
        await phone.goto(t.url + path);
        await phone.getByRole('heading', { level: 1 }).first().waitFor();
        await settled(phone);
        for (const summary of await phone.locator('summary').all()) await summary.click();
        expect({ path, width: await phone.evaluate(() => document.documentElement.scrollWidth) }).toEqual({ path, width: 390 });
      }
    } finally {
      await phoneContext.close();
    }
  }, 90_000);

  it('passes axe-core with no serious violations on the workspaces page and an execution workspace', async () => {
    expect(await seriousViolationsOfPages(page, t.url, pages())).toEqual({});
  }, 90_000);

  it('logged no errors in the browser console', () => {
    // A refused form is an error answer the page shows; the browser logs the failed request itself.
    expect(unexpectedErrors(consoleErrors)).toEqual([]);
  });
});
