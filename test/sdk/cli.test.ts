import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateManifest } from '../../sdk/manifest/validate-manifest.ts';
import { REPO, runCli } from './cli-support.ts';

let work: string;
let folder: string;

beforeAll(async () => {
  // Inside the checkout (test/.tmp is ignored by git): the scaffold resolves @keel/sdk through
  // the checkout's workspace there. Outside it, see scaffold-project.test.ts.
  await mkdir(join(REPO, 'test', '.tmp'), { recursive: true });
  work = await mkdtemp(join(REPO, 'test', '.tmp', 'keel-cli-'));
  folder = join(work, 'sdk-scaffold');
});
afterAll(async () => { if (work) await rm(work, { recursive: true, force: true }); });

describe('keel plugin create', () => {
  it('scaffolds a plugin folder with a valid manifest, sources, a migration, a README and a test', async () => {
    const result = await runCli(['plugin', 'create', 'sdk-scaffold', '--dir', work]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`Created sdk-scaffold in ${relative(REPO, folder)}`);
    for (const file of ['plugin.json', 'src/index.ts', 'migrations/0001-notes.sql', 'README.md', 'sdk-scaffold.test.ts']) {
      expect(existsSync(join(folder, file)), file).toBe(true);
    }
    const manifest = validateManifest(await readFile(join(folder, 'plugin.json'), 'utf8'));
    expect(manifest).toMatchObject({ key: 'sdk-scaffold', version: '0.1.0', displayName: 'Sdk Scaffold', database: { namespace: 'sdk_scaffold', migrations: 'migrations' } });
    expect(manifest.tag).toBeUndefined();
    expect(await readFile(join(folder, 'sdk-scaffold.test.ts'), 'utf8')).toContain("from '@keel/sdk/testing'");
    // No project files of its own inside the checkout: the checkout's package.json and tsconfig serve it.
    for (const file of ['package.json', 'tsconfig.json', 'vitest.config.ts']) expect(existsSync(join(folder, file)), file).toBe(false);
  });

  it('builds the scaffolded plugin to dist/plugin.js and reports size and time', async () => {
    const result = await runCli(['plugin', 'build', folder]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^Built sdk-scaffold 0\.1\.0 -> .*dist\/plugin\.js \(\d+\.\d kB in \d+ ms\)\n$/);
    const bundle = await readFile(join(folder, 'dist', 'plugin.js'), 'utf8');
    expect(bundle).toContain('sdk-scaffold.note_created');
    expect(bundle).toContain('__keel_dispatch');
    const json = await runCli(['plugin', 'build', folder, '--json']);
    const data = JSON.parse(json.stdout);
    expect(data).toMatchObject({ pluginKey: 'sdk-scaffold', version: '0.1.0', output: join(folder, 'dist', 'plugin.js'), bytes: Buffer.byteLength(bundle) });
    expect(data.ms).toBeGreaterThanOrEqual(0);
  });

  it('runs the generated test, which passes as generated', async () => {
    const result = await runCli(['plugin', 'test', folder], { timeoutMs: 120_000 });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toMatch(/Tests\s+.*4 passed/);
    // The cache stays out of the plugin folder.
    expect(existsSync(join(folder, 'node_modules'))).toBe(false);
  }, 120_000);

  it('the generated test fails when the plugin breaks', async () => {
    const broken = join(work, 'sdk-broken');
    expect((await runCli(['plugin', 'create', 'sdk-broken', '--dir', work])).code).toBe(0);
    const source = join(broken, 'src', 'index.ts');
    await writeFile(source, (await readFile(source, 'utf8')).replace('`Hello, ', '`Goodbye, '));
    const result = await runCli(['plugin', 'test', broken], { timeoutMs: 120_000 });
    expect(result.code).not.toBe(0);
    expect(result.stdout + result.stderr).toMatch(/1 failed/);
  }, 120_000);

  it('tags plugins created in examples/ and plugins/ and resolves those names to the project folders', async () => {
    // Only the dry facts: the folders are the project's, so nothing is written there in a test.
    const { parentFolder } = await import('../../sdk/cli/commands/create.ts');
    expect(parentFolder('examples')).toMatch(/\/examples$/);
    expect(parentFolder('plugins')).toMatch(/\/plugins$/);
    expect(parentFolder(work)).toBe(work);
  });

  it('refuses names that are not plugin keys, and folders that are not empty', async () => {
    for (const name of ['x', 'Bad_Name', 'trailing-', 'a'.repeat(49)]) {
      const result = await runCli(['plugin', 'create', name, '--dir', work]);
      expect(result.code, name).toBe(1);
      expect(result.stderr).toContain(`"${name}" is not a plugin key`);
      expect(existsSync(join(work, name))).toBe(false);
    }
    const again = await runCli(['plugin', 'create', 'sdk-scaffold', '--dir', work, '--json']);
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stderr)).toEqual({ error: `${folder} already exists and is not empty`, code: 'folder_not_empty' });
  });
});

describe('keel plugin build', () => {
  async function plugin(name: string, manifest: Record<string, unknown>, source: string): Promise<string> {
    const dir = join(work, name);
    await mkdir(join(dir, 'src'), { recursive: true });
    await writeFile(join(dir, 'plugin.json'), JSON.stringify(manifest));
    await writeFile(join(dir, 'src', 'index.ts'), source);
    return dir;
  }
  const base = { version: '1.0.0', sdkApiVersion: 1, displayName: 'Broken', entry: 'src/index.ts', capabilities: [] };

  it('lists every manifest issue and writes nothing', async () => {
    const dir = await plugin('sdk-bad-manifest', { ...base, key: 'sdk-bad-manifest', version: 'one', colour: 'red' }, "import { definePlugin } from '@keel/sdk/plugin';\nexport default definePlugin({});\n");
    const result = await runCli(['plugin', 'build', dir]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('Error: Invalid manifest');
    expect(result.stderr).toContain('(invalid_manifest)');
    expect(result.stderr).toContain('  - colour: is not a known manifest field');
    expect(result.stderr).toContain('  - version: must match pattern');
    expect(existsSync(join(dir, 'dist'))).toBe(false);
    const json = await runCli(['plugin', 'build', dir, '--json']);
    expect(JSON.parse(json.stderr)).toMatchObject({ code: 'invalid_manifest', issues: expect.arrayContaining([{ path: 'colour', message: 'is not a known manifest field' }]) });
  });

  it('refuses imports the sandbox does not have', async () => {
    const dir = await plugin('sdk-bad-import', { ...base, key: 'sdk-bad-import' }, "import { definePlugin } from '@keel/sdk/plugin';\nimport 'node:child_process';\nexport default definePlugin({});\n");
    const result = await runCli(['plugin', 'build', dir]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('sdk-bad-import does not build');
    expect(result.stderr).toContain('"node:child_process" is not available in the sandbox');
    expect(existsSync(join(dir, 'dist', 'plugin.js'))).toBe(false);
  });

  it('names a folder without plugin.json', async () => {
    const result = await runCli(['plugin', 'build', join(work, 'nowhere')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`No plugin.json in ${join(work, 'nowhere')}`);
  });
});

describe('keel without a kernel', () => {
  it('says it cannot reach the kernel, naming the address', async () => {
    // A port that was free a moment ago: nothing listens there.
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    await new Promise((resolve) => server.close(resolve));
    const result = await runCli(['plugin', 'list', '--api-base', `http://127.0.0.1:${port}`]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`Error: No Keel server at http://127.0.0.1:${port} (ECONNREFUSED; address from --api-base); is it running?\n`);
  });
});

describe('keel --version', () => {
  it("prints the project's version", async () => {
    const { version } = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-v']) {
      const result = await runCli([flag]);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toBe(`${version}\n`);
    }
  });
});
