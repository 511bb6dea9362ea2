import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { PluginManifest } from '../../sdk/plugin/manifest.ts';
import { KeelError } from '../http/errors.ts';
import { InvalidManifestError, validateManifest } from '../../sdk/manifest/validate-manifest.ts';

const run = promisify(execFile);
export const REPO_ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const FIRST_PARTY_DIR = join(REPO_ROOT, 'plugins');
export const EXAMPLES_DIR = join(REPO_ROOT, 'examples');

export interface FoundPlugin { folder: string; manifest: PluginManifest; sourceKind: 'first_party' | 'example' | 'local_path' | 'npm'; packageName: string | null }

export async function readPluginFolder(folder: string, sourceKind: FoundPlugin['sourceKind'], packageName: string | null = null): Promise<FoundPlugin> {
  const file = join(folder, 'plugin.json');
  let text: string;
  try { text = await readFile(file, 'utf8'); } catch {
    throw new KeelError(422, 'plugin_not_found', `No plugin.json in ${folder}`);
  }
  return { folder, manifest: checkedManifest(text, file), sourceKind, packageName };
}

/** The SDK's manifest validation, its refusal answered as the kernel's 422 invalid_manifest. */
export function checkedManifest(input: string | unknown, source?: string): PluginManifest {
  try {
    return validateManifest(input, source);
  } catch (error) {
    if (error instanceof InvalidManifestError) throw new KeelError(422, 'invalid_manifest', error.message, { issues: error.issues });
    throw error;
  }
}

/** Plugin folders directly under a directory (each with a plugin.json). */
export async function scanFolder(dir: string, sourceKind: FoundPlugin['sourceKind']): Promise<FoundPlugin[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const found: FoundPlugin[] = [];
  for (const entry of entries) {
    if (!entry.isDirectory() || !existsSync(join(dir, entry.name, 'plugin.json'))) continue;
    const plugin = await readPluginFolder(join(dir, entry.name), sourceKind);
    // A packaged plugin ships here but is installed only on request, by its package name.
    if (plugin.manifest.distribution === 'package') continue;
    found.push(plugin);
  }
  return found.sort((a, b) => a.manifest.key.localeCompare(b.manifest.key));
}

let examplesCache: Promise<FoundPlugin[]> | null = null;
/** Example plugins shipped in the checkout; scanned once, then cached. */
export function scanExamples(): Promise<FoundPlugin[]> {
  examplesCache ??= scanFolder(EXAMPLES_DIR, 'example');
  return examplesCache;
}

/**
 * The plugin a package name names among the packaged plugins of the checkout (`distribution:
 * package` in plugin.json, the name from its package.json), or null. Installing one needs no
 * registry: the folder is read where it is.
 */
export async function findPackagedPlugin(dir: string, packageName: string): Promise<FoundPlugin | null> {
  const bare = packageName.replace(/(?!^)@[^/]*$/, '');
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const folder = join(dir, entry.name);
    if (!entry.isDirectory() || !existsSync(join(folder, 'plugin.json')) || !existsSync(join(folder, 'package.json'))) continue;
    const name = await readFile(join(folder, 'package.json'), 'utf8').then((text) => (JSON.parse(text) as { name?: unknown }).name, () => null);
    if (name !== bare) continue;
    const found = await readPluginFolder(folder, 'npm', bare);
    if (found.manifest.distribution === 'package') return found;
  }
  return null;
}

/**
 * Unpacks a plugin package tarball (`npm pack` output: a gzipped tar with its files under
 * `package/`) into `<dataDir>/plugin-packages/tarballs/<name>` and reads its manifest. No
 * registry is asked and no script runs.
 */
export async function unpackTarball(dataDir: string, tarball: string): Promise<FoundPlugin> {
  const staging = await mkdtemp(join(dataDir, 'plugin-tarball-'));
  try {
    try {
      await run('tar', ['-xzf', tarball, '-C', staging, '--no-same-owner', '--no-same-permissions'], { timeout: 60_000 });
    } catch (error) {
      throw new KeelError(422, 'plugin_package_unavailable', `${tarball} is not a readable package tarball: ${String((error as { stderr?: string }).stderr ?? (error as Error).message).trim().split('\n').slice(-1)[0]}`);
    }
    const unpacked = join(staging, 'package');
    const name = await readFile(join(unpacked, 'package.json'), 'utf8').then((text) => (JSON.parse(text) as { name?: unknown }).name, () => null);
    if (typeof name !== 'string' || !/^(@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*$/.test(name)) {
      throw new KeelError(422, 'plugin_package_unavailable', `${tarball} has no package.json with a package name under package/`);
    }
    const target = join(dataDir, 'plugin-packages', 'tarballs', name);
    await rm(target, { recursive: true, force: true });
    await mkdir(dirname(target), { recursive: true });
    await rename(unpacked, target);
    return await readPluginFolder(target, 'npm', name);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/**
 * Installs a plugin package from the npm registry into `<dataDir>/plugin-packages` and reads
 * its manifest. The package's own install scripts never run.
 */
export async function fetchNpmPackage(dataDir: string, packageName: string): Promise<FoundPlugin> {
  if (!/^(@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*(@[A-Za-z0-9._^~<>=|-]+)?$/.test(packageName)) {
    throw new KeelError(400, 'invalid_package_name', `"${packageName}" is not an npm package name`);
  }
  const prefix = join(dataDir, 'plugin-packages');
  await mkdir(prefix, { recursive: true });
  try {
    await run('npm', ['install', '--prefix', prefix, '--ignore-scripts', '--no-audit', '--no-fund', '--omit=dev', packageName], { timeout: 120_000 });
  } catch (error) {
    throw new KeelError(422, 'plugin_package_unavailable', `npm could not install ${packageName}: ${String((error as { stderr?: string }).stderr ?? (error as Error).message).split('\n').filter(Boolean).slice(-1)[0] ?? ''}`);
  }
  const bare = packageName.replace(/(?!^)@[^/]*$/, '');
  return readPluginFolder(join(prefix, 'node_modules', bare), 'npm', bare);
}
