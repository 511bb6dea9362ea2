import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { cliEnv, REPO, runCli, startCli, type CliResult, type CliSession } from './cli-support.ts';

/**
 * A plugin scaffolded outside the checkout is a project of its own: it installs @keel/sdk from
 * the tarball the CLI packed into it (the registry is not needed for the SDK; the rest comes
 * from npm's cache first), and the next steps the CLI printed work from that folder: install,
 * the generated test, the typecheck, and `npm run dev` against a running kernel, through which
 * a capability added later is granted the one documented way.
 */
const KEY = 'team-notes';
let t: TestKernel;
let work: string;
let folder: string;
let next: string[];
let dev: CliSession | undefined;

/** Runs a command in the plugin folder, as a user would in a shell there. */
function inFolder(command: string[], timeoutMs = 60_000): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command[0]!, command.slice(1), { cwd: folder, env: cliEnv({ npm_config_prefer_offline: 'true' }) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`${command.join(' ')} timed out\n${stdout}\n${stderr}`)); }, timeoutMs);
    child.once('error', reject);
    child.once('exit', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
  });
}

/** The JSON document of a --json run; npm may print its own warnings around it. */
const jsonOf = (text: string) => JSON.parse(text.split('\n').find((line) => line.startsWith('{'))!);

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'keel-project-'));
  folder = join(work, KEY);
  t = await startTestKernel();
});
afterAll(async () => {
  await dev?.stop();
  await t?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('a plugin scaffolded outside the checkout', () => {
  it('is a project of its own: package.json on @keel/sdk (packed into it), tsconfig, a test importing the SDK by name', async () => {
    expect(work.startsWith(REPO)).toBe(false);
    const created = await runCli(['plugin', 'create', KEY, '--dir', work, '--json'], { timeoutMs: 60_000 });
    expect(created.code, created.stderr).toBe(0);
    const data = JSON.parse(created.stdout);
    expect(data.sdk).toBe('file:keel-sdk-0.1.0.tgz');
    expect(data.files).toEqual(expect.arrayContaining(['package.json', 'tsconfig.json', 'vitest.config.ts', 'plugin.json', 'src/index.ts', `${KEY}.test.ts`]));
    expect(existsSync(join(folder, 'keel-sdk-0.1.0.tgz'))).toBe(true);
    const pkg = JSON.parse(await readFile(join(folder, 'package.json'), 'utf8'));
    expect(pkg.devDependencies['@keel/sdk']).toBe('file:keel-sdk-0.1.0.tgz');
    expect(pkg.scripts).toMatchObject({ test: 'vitest run', typecheck: 'tsc --noEmit', dev: 'keel plugin dev .' });
    const test = await readFile(join(folder, `${KEY}.test.ts`), 'utf8');
    expect(test).toContain("from '@keel/sdk/testing'");
    expect(test).not.toMatch(/from '\.\.?\//);
    next = data.next;
    expect(next).toEqual([`cd ${folder}`, 'npm install', 'npm test', 'npm run typecheck', 'npm run dev']);
  }, 60_000);

  it('installs, passes its generated test and typechecks with the commands printed', async () => {
    for (const step of next.slice(1, 4)) {
      const result = await inFolder(step.split(' '));
      expect(result.code, `${step}\n${result.stdout}\n${result.stderr}`).toBe(0);
      if (step === 'npm test') expect(result.stdout).toMatch(/Tests\s+.*4 passed/);
    }
    // The SDK came from the tarball, as JavaScript (Node does not strip types under node_modules).
    const lock = JSON.parse(await readFile(join(folder, 'package-lock.json'), 'utf8'));
    expect(lock.packages['node_modules/@keel/sdk'].resolved).toBe('file:keel-sdk-0.1.0.tgz');
    expect(existsSync(join(folder, 'node_modules', '@keel', 'sdk', 'dist', 'testing.js'))).toBe(true);
  }, 60_000);

  it('the typecheck reads the SDK types: a member of a capability plugin.json does not declare is an error', async () => {
    const source = join(folder, 'src', 'index.ts');
    const good = await readFile(source, 'utf8');
    await writeFile(source, good.replace('await ctx.activity.record(', "await ctx.http.fetch('https://example.com');\n      await ctx.activity.record("));
    const result = await inFolder(['npm', 'run', 'typecheck']);
    await writeFile(source, good);
    expect(result.code).not.toBe(0);
    // ctx is typed from plugin.json (src/plugin.gen.ts), which does not declare http.fetch.
    expect(result.stdout).toMatch(/Property 'http' does not exist on type '(Context|PluginContext<[^']*>)'/);
  });

  it('runs against a running kernel with npm run dev, and a capability added later is granted with upgrade --grant', async () => {
    dev = startCli(['--api-base', t.url, '--json'], { command: ['npm', 'run', '--silent', 'dev', '--'], cwd: folder });
    const installed = await dev.waitFor((e) => e.event === 'installed' || e.event === 'error', { timeoutMs: 30_000 });
    expect(installed, dev.stderr()).toMatchObject({ event: 'installed', pluginKey: KEY, running: 'running' });
    await dev.waitFor((e) => e.event === 'watching');
    const company = await createCompany(t.api, { name: 'Project Co' });
    const note = await t.api.post(`/api/plugins/${KEY}/companies/${company.id}/notes`, { text: 'from the project' });
    expect(note.status, note.text).toBe(201);

    // A capability the new version declares: the running version stays until the operator grants it.
    const from = dev.events.length;
    const manifestFile = join(folder, 'plugin.json');
    const manifest = JSON.parse(await readFile(manifestFile, 'utf8'));
    manifest.capabilities.push({ id: 'companies.read', reason: 'Names the company in its greeting' });
    await writeFile(manifestFile, JSON.stringify(manifest, null, 2));
    const refused = await dev.waitFor((e) => e.event === 'error', { from });
    expect(refused).toMatchObject({ code: 'capability_grant_required', status: 409 });
    expect(refused.error).toContain(`keel plugin upgrade ${KEY} --grant companies.read`);
    const before = await t.api.get(`/api/plugins/${KEY}`);
    expect(before.body.grantedCapabilities).not.toContain('companies.read');

    // enable grants from the installed manifest, so it cannot add it, and names the upgrade instead.
    const enable = await inFolder(['npx', 'keel', 'plugin', 'enable', KEY, '--grant', 'companies.read', '--api-base', t.url, '--json']);
    expect(enable.code).toBe(1);
    expect(jsonOf(enable.stderr)).toMatchObject({ code: 'capability_not_declared', status: 422 });
    expect(jsonOf(enable.stderr).error).toContain(`grant them with the upgrade that loads it: keel plugin upgrade ${KEY} --grant companies.read`);

    // The printed command, run from the project folder with the project's own keel.
    const granted = await inFolder(['npx', 'keel', 'plugin', 'upgrade', KEY, '--grant', 'companies.read', '--api-base', t.url, '--json']);
    expect(granted.code, granted.stderr).toBe(0);
    expect(jsonOf(granted.stdout)).toMatchObject({ pluginKey: KEY, status: 'enabled', running: 'running' });
    const after = await t.api.get(`/api/plugins/${KEY}`);
    expect(after.body.grantedCapabilities).toContain('companies.read');
    expect(after.body.localPath.split(sep).join('/')).toBe(folder.split(sep).join('/'));
  }, 60_000);
});
