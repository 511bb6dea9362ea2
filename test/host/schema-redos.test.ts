import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../support/harness.ts';

const ECHO = fileURLToPath(new URL('./fixtures/echo', import.meta.url));
let t: TestKernel;
let dir: string;

beforeAll(async () => {
  t = await startTestKernel();
  dir = await mkdtemp(join(tmpdir(), 'keel-redos-'));
});
afterAll(async () => { await t?.stop(); await rm(dir, { recursive: true, force: true }); });

async function variant(key: string, pattern: string): Promise<string> {
  const folder = join(dir, key);
  await cp(ECHO, folder, { recursive: true });
  const manifest = JSON.parse(await readFile(join(folder, 'plugin.json'), 'utf8'));
  manifest.key = key;
  manifest.database.namespace = key.replaceAll('-', '_');
  manifest.routes = [{ key: 'echo', method: 'POST', path: '/echo', auth: 'any', readOnly: true, body: { type: 'object', properties: { text: { type: 'string', pattern } } } }];
  await writeFile(join(folder, 'plugin.json'), JSON.stringify(manifest));
  return folder;
}

describe('regular expressions in plugin schemas', () => {
  it('match in linear time, so a pathological pattern cannot stall the kernel', async () => {
    const folder = await variant('redos-probe', '^(a+)+$');
    expect((await t.api.post('/api/plugins/install', { localPath: folder })).status).toBe(201);
    expect((await t.api.post('/api/plugins/redos-probe/enable', {})).status).toBe(200);
    const started = Date.now();
    const [res, health] = await Promise.all([
      t.api.post('/api/plugins/redos-probe/echo', { text: `${'a'.repeat(40)}!` }),
      t.api.get('/api/health'),
    ]);
    expect(res.status).toBe(400);
    expect(health.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(2000);
    expect((await t.api.post('/api/plugins/redos-probe/echo', { text: 'aaaa' })).status).toBe(200);
  });

  it('refuses patterns the linear-time engine cannot run (backreferences) at install', async () => {
    const folder = await variant('redos-backref', '^(a)\\1$');
    const res = await t.api.post('/api/plugins/install', { localPath: folder });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('invalid_manifest');
  });
});
