import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildPlugin, MAX_SOURCE_BYTES, PluginBuildError } from '../../sdk/build/build-plugin.ts';

/** `import files from './folder?files'`: a plugin's own folder, read into the bundle at build time. */
const made: string[] = [];
afterEach(() => { for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true }); });

function pluginFolder(entry: string): string {
  const root = mkdtempSync(join(tmpdir(), 'keel-folder-import-'));
  made.push(root);
  mkdirSync(join(root, 'src'));
  mkdirSync(join(root, 'data', 'sub'), { recursive: true });
  writeFileSync(join(root, 'plugin.json'), JSON.stringify({ entry: 'src/index.ts' }));
  writeFileSync(join(root, 'src', 'index.ts'), entry);
  writeFileSync(join(root, 'data', 'b.md'), 'héllo\n');
  writeFileSync(join(root, 'data', 'sub', 'a.bin'), Buffer.from([0xff, 0x00, 0x01]));
  return root;
}

/** Runs the bundle and answers what its entry assigned to `globalThis.out`. */
function run(code: string): unknown {
  const scope: { out?: unknown } = {};
  new Function('globalThis', code)(scope);
  return scope.out;
}

describe('folder imports in plugin builds', () => {
  it('bundles every file of the folder, sorted by path, text as text and other bytes as base64', async () => {
    const root = pluginFolder('import files from "../data?files"; (globalThis as any).out = files;');
    const built = await buildPlugin(root);
    expect(run(built.code)).toEqual([
      { path: 'b.md', text: 'héllo\n' },
      { path: 'sub/a.bin', base64: Buffer.from([0xff, 0x00, 0x01]).toString('base64') },
    ]);
  });

  it('refuses a folder outside the plugin folder', async () => {
    const root = pluginFolder('import files from "../../?files"; (globalThis as any).out = files;');
    await expect(buildPlugin(root)).rejects.toThrow(/not a folder inside the plugin folder/);
  });

  it('counts the bytes against the source limit: a larger folder is plugin_too_large', async () => {
    const root = pluginFolder('import files from "../data?files"; (globalThis as any).out = files;');
    writeFileSync(join(root, 'data', 'huge.md'), Buffer.alloc(MAX_SOURCE_BYTES + 1, 0x61));
    const failure = await buildPlugin(root).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(PluginBuildError);
    expect(failure).toMatchObject({ code: 'plugin_too_large' });
    expect(String((failure as Error).message)).toMatch(/huge\.md passes the limit/);
  });

  it('refuses a symbolic link inside the folder instead of following it', async () => {
    const root = pluginFolder('import files from "../data?files"; (globalThis as any).out = files;');
    symlinkSync('/etc/hostname', join(root, 'data', 'link'));
    await expect(buildPlugin(root)).rejects.toThrow(/link in a folder import is not a regular file/);
  });
});
