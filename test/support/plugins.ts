import { cp, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { expect } from 'vitest';
import type { TestKernel } from './harness.ts';

/** Installs a plugin folder through the API, as an operator would; the install must succeed. */
export async function installPlugin(t: TestKernel, folder: string): Promise<void> {
  const res = await t.api.post('/api/plugins/install', { localPath: folder });
  expect(res.status, res.text).toBe(201);
}

/** Installs and enables a plugin folder (every declared capability unless `grant` says otherwise); answers its key. */
export async function installAndEnable(t: TestKernel, folder: string, grant?: string[]): Promise<string> {
  await installPlugin(t, folder);
  const key = JSON.parse(await readFile(join(folder, 'plugin.json'), 'utf8')).key as string;
  const res = await t.api.post(`/api/plugins/${key}/enable`, grant ? { grant } : {});
  expect(res.status, res.text).toBe(200);
  return key;
}

/**
 * A copy of a plugin folder with its manifest changed: tests of manifests, grants and upgrades
 * need variants of one plugin, or a folder whose files change under the host.
 */
export async function pluginVariant(folder: string, change: (manifest: any) => unknown, rawManifest?: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `keel-${basename(folder)}-`));
  await cp(folder, dir, { recursive: true });
  const manifest = JSON.parse(await readFile(join(dir, 'plugin.json'), 'utf8'));
  const changed = change(manifest) ?? manifest;
  await writeFile(join(dir, 'plugin.json'), rawManifest ?? JSON.stringify(changed, null, 2));
  return dir;
}
