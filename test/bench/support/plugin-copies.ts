import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KernelProcess } from './kernel-process.ts';

const BENCH_PLUGIN = fileURLToPath(new URL('../fixtures/bench-plugin', import.meta.url));

/**
 * Installs and enables a copy of the benchmark plugin under another key (its own database
 * namespace, no absolute routes, which two copies could not share), copied into `scratch`.
 */
export async function enableBenchPluginCopy(kernel: KernelProcess, scratch: string, key: string): Promise<void> {
  const folder = join(scratch, key);
  await cp(BENCH_PLUGIN, folder, { recursive: true });
  const manifest = JSON.parse(await readFile(join(folder, 'plugin.json'), 'utf8'));
  manifest.key = key;
  manifest.database.namespace = key.replace(/-/g, '_');
  manifest.routes = manifest.routes.filter((r: { absolute?: boolean }) => !r.absolute);
  await writeFile(join(folder, 'plugin.json'), JSON.stringify(manifest));
  await kernel.call('POST', '/api/plugins/install', { localPath: folder });
  await kernel.call('POST', `/api/plugins/${key}/enable`, {});
}
