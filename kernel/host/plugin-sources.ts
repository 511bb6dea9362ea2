import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
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
    found.push(await readPluginFolder(join(dir, entry.name), sourceKind));
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
