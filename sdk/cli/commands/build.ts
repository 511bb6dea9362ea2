import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildPlugin } from '../../build/build-plugin.ts';
import { writeContextModule } from '../../build/context-module.ts';
import { checkManifest } from '../../build/validate-manifest.ts';
import type { PluginManifest } from '../../plugin/manifest.ts';
import { CliError, emit, formatBytes, formatMs, shownPath, userPath, type GlobalOptions } from '../output.ts';

export interface BuildResult { manifest: PluginManifest; folder: string; output: string; bytes: number; ms: number }

/**
 * Validates the manifest exactly as install would, writes the plugin's ctx types from it
 * (`src/plugin.gen.ts`, sdk/build/context-module.ts), bundles the entry with sdk/build and
 * writes `<folder>/dist/plugin.js`. Throws InvalidManifestError (with every issue) or a build error.
 */
export async function buildToDist(folder: string): Promise<BuildResult> {
  const started = performance.now();
  const root = userPath(folder);
  const manifestPath = join(root, 'plugin.json');
  const text = await readFile(manifestPath, 'utf8').catch(() => { throw new CliError('plugin_not_found', `No plugin.json in ${root}`); });
  const manifest = checkManifest(text, manifestPath);
  await writeContextModule(root, text);
  const built = await buildPlugin(root).catch((error: Error) => {
    throw new CliError('plugin_build_failed', `${manifest.key} does not build: ${error.message.split('\n').filter(Boolean).slice(0, 6).join('\n  ')}`);
  });
  const output = join(root, 'dist', 'plugin.js');
  await mkdir(join(root, 'dist'), { recursive: true });
  // Written aside and renamed, so a watcher never reads half a bundle.
  const temp = `${output}.${process.pid}.tmp`;
  await writeFile(temp, built.code);
  await rename(temp, output);
  return { manifest, folder: root, output, bytes: Buffer.byteLength(built.code), ms: performance.now() - started };
}

export function describeBuild(result: BuildResult): { human: string; data: Record<string, unknown> } {
  return {
    human: `Built ${result.manifest.key} ${result.manifest.version} -> ${shownPath(result.output)} (${formatBytes(result.bytes)} in ${formatMs(result.ms)})`,
    data: { pluginKey: result.manifest.key, version: result.manifest.version, output: result.output, bytes: result.bytes, ms: Math.round(result.ms) },
  };
}

export async function buildCommand(folder: string, options: GlobalOptions): Promise<void> {
  const { human, data } = describeBuild(await buildToDist(folder));
  emit(options, human, data);
}
