import { cp, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { contextModulePath, contextModuleText } from '../../sdk/build/context-module.ts';
import { buildToDist } from '../../sdk/cli/commands/build.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Every plugin folder of the checkout: the first-party plugins and the examples. */
async function pluginFolders(): Promise<string[]> {
  const folders: string[] = [];
  for (const parent of ['plugins', 'examples']) {
    for (const entry of await readdir(join(ROOT, parent), { withFileTypes: true })) {
      const folder = join(ROOT, parent, entry.name);
      if (entry.isDirectory() && (await readFile(join(folder, 'plugin.json'), 'utf8').catch(() => null)) !== null) folders.push(folder);
    }
  }
  return folders;
}

describe('the ctx module written from plugin.json', () => {
  it('is current in every plugin of the checkout, so the typecheck checks the code against its manifest', async () => {
    const folders = await pluginFolders();
    expect(folders.length).toBeGreaterThanOrEqual(20);
    for (const folder of folders) {
      const manifest = JSON.parse(await readFile(join(folder, 'plugin.json'), 'utf8'));
      const written = await readFile(join(folder, contextModulePath(manifest)), 'utf8').catch(() => null);
      expect(written, `${folder}: run keel plugin build ${folder.slice(ROOT.length)} to write ${contextModulePath(manifest)} from plugin.json`).toBe(contextModuleText(manifest));
    }
  });

  it('is written again by keel plugin build when plugin.json changes, and the bundle carries its list', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'keel-context-module-'));
    try {
      await cp(fileURLToPath(new URL('../../examples/scheduled-heartbeat', import.meta.url)), folder, { recursive: true });
      const manifest = JSON.parse(await readFile(join(folder, 'plugin.json'), 'utf8'));
      manifest.capabilities.push({ id: 'agents.read', reason: 'Names the agents' });
      await writeFile(join(folder, 'plugin.json'), JSON.stringify(manifest, null, 2));
      expect(await readFile(join(folder, 'src/plugin.gen.ts'), 'utf8')).not.toContain("'agents.read'");
      const built = await buildToDist(folder);
      const written = await readFile(join(folder, 'src/plugin.gen.ts'), 'utf8');
      expect(written).toBe(contextModuleText(manifest));
      expect(written).toContain("  'agents.read',\n");
      // The list the code was typed against is in the bundle, for the runtime's check.
      expect(await readFile(built.output, 'utf8')).toContain('"agents.read"');
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('declares each capability once, in plugin.json\'s order, and an empty list for none', () => {
    const text = contextModuleText({ capabilities: [{ id: 'http.routes' }, { id: 'agents.read' }, { id: 'http.routes' }] });
    expect(text).toContain("export const capabilities = [\n  'http.routes',\n  'agents.read',\n] as const;");
    expect(contextModuleText({ capabilities: [] })).toContain('export const capabilities = [] as const;');
  });
});
