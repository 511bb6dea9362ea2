import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { runCli, startCli, type CliSession } from './cli-support.ts';

const FIXTURE = fileURLToPath(new URL('../host/fixtures/sdk-drain', import.meta.url));
let t: TestKernel;
let work: string;
let folder: string;
let dev: CliSession;

async function setBuild(name: string): Promise<void> {
  const file = join(folder, 'src', 'index.ts');
  const source = await readFile(file, 'utf8');
  await writeFile(file, source.replace(/const BUILD = '[a-z]+';/, `const BUILD = '${name}';`));
}

const tool = (name: string, input: unknown = {}, companyId?: string) => t.api.post('/api/plugins/tools/execute', { tool: `sdk-drain.${name}`, input, companyId });

beforeAll(async () => {
  t = await startTestKernel();
  work = await mkdtemp(join(tmpdir(), 'keel-dev-'));
  folder = join(work, 'sdk-drain');
  await cp(FIXTURE, folder, { recursive: true });
  dev = startCli(['plugin', 'dev', folder, '--api-base', t.url, '--json']);
  await dev.waitFor((e) => e.event === 'watching');
});
afterAll(async () => {
  await dev?.stop();
  await t?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('keel plugin dev', () => {
  it('installs and enables the folder in the running kernel on start', async () => {
    const installed = dev.events.find((e) => e.event === 'installed');
    expect(installed, JSON.stringify(dev.events)).toMatchObject({ pluginKey: 'sdk-drain', version: '1.0.0', running: 'running' });
    expect(installed!.ms).toBeGreaterThan(0);
    const record = await t.api.get('/api/plugins/sdk-drain');
    expect(record.body).toMatchObject({ status: 'enabled', localPath: folder, sourceKind: 'local_path' });
    expect((await tool('build')).body).toEqual({ tool: 'sdk-drain.build', result: { build: 'one' } });
  });

  it('rebuilds on change and hot-swaps the plugin, logging the swap with its duration', async () => {
    const from = dev.events.length;
    await setBuild('two');
    const swapped = await dev.waitFor((e) => e.event === 'swapped', { from });
    expect(swapped).toMatchObject({ pluginKey: 'sdk-drain', running: 'running' });
    expect(swapped.ms).toBeGreaterThan(0);
    expect(swapped.buildMs).toBeGreaterThanOrEqual(0);
    expect(dev.events.slice(from).map((e) => e.event)).toEqual(['change', 'built', 'swapped']);
    expect((await tool('build')).body.result).toEqual({ build: 'two' });
    const activity = await t.sql.query("select count(*)::int as n from activity_log where action = 'plugin.upgraded' and entity_id = 'sdk-drain'");
    expect(activity.rows[0].n).toBeGreaterThanOrEqual(1);
  });

  it('lets a call in flight finish on the old worker before swapping', async () => {
    const company = await createCompany(t.api, { name: 'Drain Co' });
    const slow = tool('slow', { seconds: 1.5 }, company.id);
    // The call is inside the worker, waiting in the database, when the swap starts.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const from = dev.events.length;
    await setBuild('three');
    const swapped = await dev.waitFor((e) => e.event === 'swapped', { from });
    const answer = await slow;
    expect(answer.status, answer.text).toBe(200);
    // It finished on the old build, its database wait and its kernel call (companies.get) both served.
    expect(answer.body.result).toEqual({ build: 'two', waited: 1.5, company: 'Drain Co' });
    // The swap waited for the call: it took at least the rest of its 1.5 s.
    expect(swapped.ms).toBeGreaterThan(900);
    expect((await tool('build')).body.result).toEqual({ build: 'three' });
  });

  it('reports a broken build and keeps the running version', async () => {
    const from = dev.events.length;
    const file = join(folder, 'src', 'index.ts');
    const good = await readFile(file, 'utf8');
    await writeFile(file, `import 'node:fs';\n${good}`);
    const failed = await dev.waitFor((e) => e.event === 'error', { from });
    expect(failed.code).toBe('plugin_build_failed');
    expect(failed.error).toContain('"node:fs" is not available in the sandbox');
    expect((await tool('build')).body.result).toEqual({ build: 'three' });
    const next = dev.events.length;
    await writeFile(file, good.replace("const BUILD = 'three';", "const BUILD = 'four';"));
    await dev.waitFor((e) => e.event === 'swapped', { from: next });
    expect((await tool('build')).body.result).toEqual({ build: 'four' });
  });

  it('refuses a manifest change that asks for new capabilities until they are granted', async () => {
    const from = dev.events.length;
    const manifestFile = join(folder, 'plugin.json');
    const manifest = JSON.parse(await readFile(manifestFile, 'utf8'));
    manifest.capabilities.push({ id: 'activity.write', reason: 'Records what it does' });
    await writeFile(manifestFile, JSON.stringify(manifest, null, 2));
    const failed = await dev.waitFor((e) => e.event === 'error', { from });
    expect(failed).toMatchObject({ code: 'capability_grant_required', status: 409 });
    expect((await tool('build')).body.result).toEqual({ build: 'four' });
    // The refusal names the command that grants them, filled in; running it adds the capability.
    const command = /keel plugin upgrade (\S+) --grant (\S+)/.exec(String(failed.error));
    expect(command?.slice(1)).toEqual([manifest.key, 'activity.write']);
    const granted = await runCli(['plugin', 'upgrade', command![1]!, '--grant', command![2]!, '--api-base', t.url, '--json']);
    expect(granted.code, granted.stderr).toBe(0);
    expect(JSON.parse(granted.stdout).grantedCapabilities).toContain('activity.write');
  });
});
