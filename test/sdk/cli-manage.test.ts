import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { runCli } from './cli-support.ts';

const FIXTURE = fileURLToPath(new URL('../host/fixtures/sdk-drain', import.meta.url));
let t: TestKernel;
let work: string;
let folder: string;
const keel = (...args: string[]) => runCli([...args, '--api-base', t.url]);

beforeAll(async () => {
  t = await startTestKernel();
  work = await mkdtemp(join(tmpdir(), 'keel-manage-'));
  folder = join(work, 'sdk-drain');
  await cp(FIXTURE, folder, { recursive: true });
});
afterAll(async () => {
  await t?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('keel plugin install / list / enable / disable / upgrade / uninstall', () => {
  it('installs a folder and shows what it asks for', async () => {
    const result = await keel('plugin', 'install', folder);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`Installed sdk-drain 1.0.0 (installed) from ${folder}`);
    expect(result.stdout).toMatch(/tools\.register\s+Offers the build and slow tools/);
    expect(result.stdout).toContain('Enable it with: keel plugin enable sdk-drain');
    const row = await t.sql.query("select status, source_path from plugins where key = 'sdk-drain'");
    expect(row.rows).toEqual([{ status: 'installed', source_path: folder }]);
  });

  it('installs an example by its package name and enables it at once', async () => {
    const result = await keel('plugin', 'install', '@keel-examples/word-count', '--enable', '--json');
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ pluginKey: 'word-count', status: 'enabled', running: 'running', grantedCapabilities: ['tools.register'] });
  });

  it('lists installed plugins as a table and as JSON', async () => {
    const table = await keel('plugin', 'list');
    expect(table.code).toBe(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^KEY\s+VERSION\s+STATUS\s+RUNNING\s+SOURCE$/);
    expect(lines.find((l) => l.startsWith('sdk-drain'))).toMatch(/^sdk-drain\s+1\.0\.0\s+installed\s+stopped\s+\/.*sdk-drain$/);
    expect(lines.find((l) => l.startsWith('word-count'))).toMatch(/^word-count\s+1\.0\.0\s+enabled\s+running\s+/);
    const json = JSON.parse((await keel('plugin', 'list', '--json')).stdout);
    expect(json.map((p: { pluginKey: string }) => p.pluginKey)).toEqual(expect.arrayContaining(['sdk-drain', 'word-count']));
  });

  it('enables and disables', async () => {
    const enabled = await keel('plugin', 'enable', 'sdk-drain');
    expect(enabled.code, enabled.stderr).toBe(0);
    expect(enabled.stdout).toBe('Enabled sdk-drain 1.0.0 (running); granted: tools.register, database.namespace.read, companies.read\n');
    const tool = await t.api.post('/api/plugins/tools/execute', { tool: 'sdk-drain.build', input: {} });
    expect(tool.body.result).toEqual({ build: 'one' });
    const disabled = await keel('plugin', 'disable', 'sdk-drain', '--json');
    expect(JSON.parse(disabled.stdout)).toMatchObject({ pluginKey: 'sdk-drain', status: 'disabled' });
    const after = await t.api.post('/api/plugins/tools/execute', { tool: 'sdk-drain.build', input: {} });
    expect(after.status).toBe(404);
  });

  it('refuses a grant of something the plugin does not declare, with the kernel\'s error', async () => {
    const result = await keel('plugin', 'enable', 'sdk-drain', '--grant', 'tools.register', 'secrets.resolve');
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('Error: sdk-drain 1.0.0 does not declare secrets.resolve; only declared capabilities can be granted. If its source declares them now, grant them with the upgrade that loads it: keel plugin upgrade sdk-drain --grant secrets.resolve (capability_not_declared, HTTP 422)\n');
  });

  it('upgrades from the folder and reports the time it took', async () => {
    expect((await keel('plugin', 'enable', 'sdk-drain')).code).toBe(0);
    const manifestFile = join(folder, 'plugin.json');
    await writeFile(manifestFile, (await readFile(manifestFile, 'utf8')).replace('"version": "1.0.0"', '"version": "1.1.0"'));
    const result = await keel('plugin', 'upgrade', 'sdk-drain');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^Upgraded sdk-drain to 1\.1\.0 \(running\) in (\d+ ms|\d+\.\d\d s)\n$/);
    expect((await t.api.get('/api/plugins/sdk-drain')).body.version).toBe('1.1.0');
  });

  it('uninstalls', async () => {
    const result = await keel('plugin', 'uninstall', 'sdk-drain');
    expect(result.stdout).toBe('Uninstalled sdk-drain\n');
    expect((await t.api.get('/api/plugins/sdk-drain')).status).toBe(404);
  });

  it('reports kernel errors with their code and issues, and bad paths before calling', async () => {
    const missing = await keel('plugin', 'enable', 'no-such-plugin');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe('Error: Plugin no-such-plugin is not installed (plugin_not_found, HTTP 404)\n');
    const json = await keel('plugin', 'disable', 'no-such-plugin', '--json');
    expect(JSON.parse(json.stderr)).toEqual({ error: 'Plugin no-such-plugin is not installed', code: 'plugin_not_found', status: 404 });
    const nowhere = await keel('plugin', 'install', './does-not-exist');
    expect(nowhere.code).toBe(1);
    expect(nowhere.stderr).toContain('does-not-exist is not a folder');
    const broken = join(work, 'broken');
    await cp(FIXTURE, broken, { recursive: true });
    await writeFile(join(broken, 'plugin.json'), JSON.stringify({ key: 'Broken', version: '1', sdkApiVersion: 1, displayName: 'x', entry: 'src/index.ts', capabilities: [] }));
    const invalid = await keel('plugin', 'install', broken);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/^Error: Invalid manifest .*\(invalid_manifest, HTTP 422\)\n  - key: must match pattern/);
    expect(invalid.stderr).toContain('  - version: must match pattern');
  });

  it('sends --api-key as a bearer token', async () => {
    const result = await keel('plugin', 'list', '--api-key', 'svc_board_not-a-real-key-0000000000');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^Error: .*HTTP 401\)\nThe server refused the API key/);
  });
});
