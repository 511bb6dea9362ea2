import { fileURLToPath } from 'node:url';
import { startKernelProcess } from './support/kernel-process.ts';
import { printTable } from './support/load.ts';

const FIXTURE = fileURLToPath(new URL('../host/fixtures/blob-fx', import.meta.url));
const SIZE = 5 * 1024 * 1024;
const ROUNDS = 20;

/**
 * Blobs, in one run: uploading and downloading a 5 MiB file through a plugin route (declared
 * `upload` / `download`: the kernel streams the bytes, the plugin sees only the handle) against
 * the same bytes through a bare kernel route on the same store. Goal: the plugin at >= 80%.
 */
export async function run(): Promise<void> {
  const kernel = await startKernelProcess({}, ['test/bench/support/bench-kernel-main.ts']);
  try {
    await kernel.call('POST', '/api/plugins/install', { localPath: FIXTURE });
    await kernel.call('POST', '/api/plugins/blob-fx/enable', {});
    const company = await kernel.call('POST', '/api/companies', { name: 'Blob Bench' });
    const bytes = new Uint8Array(SIZE).map((_, i) => (i * 31) & 0xff);
    const routes = {
      kernel: { up: `${kernel.url}/api/bench/companies/${company.id}/blobs`, down: (id: string) => `${kernel.url}/api/bench/companies/${company.id}/blobs/${id}` },
      plugin: { up: `${kernel.url}/api/plugins/blob-fx/companies/${company.id}/files`, down: (id: string) => `${kernel.url}/api/plugins/blob-fx/companies/${company.id}/files/${id}` },
    };
    const uploadOnce = async (url: string) => {
      const form = new FormData();
      form.append('file', new Blob([bytes], { type: 'application/octet-stream' }), 'bench.bin');
      const response = await fetch(url, { method: 'POST', body: form });
      if (response.status !== 201) throw new Error(`upload failed: ${response.status} ${await response.text()}`);
      return (await response.json() as { id: string }).id;
    };
    const downloadOnce = async (url: string) => {
      const response = await fetch(url);
      const received = (await response.arrayBuffer()).byteLength;
      if (response.status !== 200 || received !== SIZE) throw new Error(`download failed: ${response.status}, ${received} bytes`);
    };
    // Kernel and plugin rounds alternate, so that a change in the machine's load falls on both alike.
    const compare = async (kernelWork: () => Promise<unknown>, pluginWork: () => Promise<unknown>) => {
      const spent = { kernel: 0, plugin: 0 };
      for (let i = 0; i < ROUNDS; i++) {
        for (const [side, work] of [['kernel', kernelWork], ['plugin', pluginWork]] as const) {
          const started = performance.now();
          await work();
          spent[side] += performance.now() - started;
        }
      }
      const rate = (ms: number) => (ROUNDS * SIZE) / (1024 * 1024) / (ms / 1000);
      return { kernel: rate(spent.kernel), plugin: rate(spent.plugin) };
    };
    const ids = { kernel: await uploadOnce(routes.kernel.up), plugin: await uploadOnce(routes.plugin.up) };
    for (let i = 0; i < 3; i++) await Promise.all([uploadOnce(routes.kernel.up), uploadOnce(routes.plugin.up)]);
    const up = await compare(() => uploadOnce(routes.kernel.up), () => uploadOnce(routes.plugin.up));
    const down = await compare(() => downloadOnce(routes.kernel.down(ids.kernel)), () => downloadOnce(routes.plugin.down(ids.plugin)));
    const [upKernel, upPlugin, downKernel, downPlugin] = [up.kernel, up.plugin, down.kernel, down.plugin];
    const pct = (a: number, b: number) => `${((a / b) * 100).toFixed(0)}%`;
    printTable(`Blobs: 5 MiB through a plugin route vs a bare kernel route (${ROUNDS} each, interleaved)`, [
      { measure: '5 MiB upload, kernel route', value: `${upKernel.toFixed(1)} MiB/s` },
      { measure: '5 MiB upload, plugin route', value: `${upPlugin.toFixed(1)} MiB/s` },
      { measure: 'upload: plugin / kernel (goal >= 80%)', value: pct(upPlugin, upKernel) },
      { measure: '5 MiB download, kernel route', value: `${downKernel.toFixed(1)} MiB/s` },
      { measure: '5 MiB download, plugin route', value: `${downPlugin.toFixed(1)} MiB/s` },
      { measure: 'download: plugin / kernel (goal >= 80%)', value: pct(downPlugin, downKernel) },
    ]);
  } finally {
    await kernel.stop();
  }
}
