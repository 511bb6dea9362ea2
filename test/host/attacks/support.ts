import { cp, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { TestKernel } from '../../support/harness.ts';

/** Hostile fixture plugins live in test/host/fixtures/attack-*. */
export function fixture(name: string): string {
  return fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
}

export async function install(t: TestKernel, folder: string): Promise<void> {
  const res = await t.api.post('/api/plugins/install', { localPath: folder });
  expect(res.status, res.text).toBe(201);
}

export async function installAndEnable(t: TestKernel, name: string, grant?: string[]): Promise<string> {
  const folder = fixture(name);
  await install(t, folder);
  const key = JSON.parse(await readFile(join(folder, 'plugin.json'), 'utf8')).key as string;
  const res = await t.api.post(`/api/plugins/${key}/enable`, grant ? { grant } : {});
  expect(res.status, res.text).toBe(200);
  return key;
}

/**
 * A copy of a fixture folder with its manifest changed: attacks on the manifest need many
 * variants of one plugin, and upgrades need a folder whose files change under the host.
 */
export async function variant(name: string, change: (manifest: any) => unknown, rawManifest?: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `keel-${name}-`));
  await cp(fixture(name), dir, { recursive: true });
  const manifest = JSON.parse(await readFile(join(dir, 'plugin.json'), 'utf8'));
  const changed = change(manifest) ?? manifest;
  await writeFile(join(dir, 'plugin.json'), rawManifest ?? JSON.stringify(changed, null, 2));
  return dir;
}

/** The kernel's own answers, which no plugin attack may disturb. */
export async function expectKernelAlive(t: TestKernel): Promise<void> {
  const [health, companies] = await Promise.all([t.api.get('/api/health'), t.api.get('/api/companies')]);
  expect(health.status).toBe(200);
  expect(companies.status, companies.text).toBe(200);
}

/** Plugin output that must never show the host's files, stacks or internals. */
export const HOST_LEAK = /\/work\/|node_modules|file:\/\/|worker-main|\.ts:\d|at [A-Za-z.<>]+ \(|node:internal|isolated-vm boundary/;

export async function waitFor<T>(probe: () => Promise<T>, ok: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const started = Date.now();
  let last = await probe();
  while (!ok(last) && Date.now() - started < timeoutMs) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    last = await probe();
  }
  return last;
}
