import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../kernel/config/load.ts';
import { startKernel, type RunningKernel } from '../../kernel/kernel.ts';
import { createLogger } from '../../kernel/logger.ts';
import { createApi, startTestKernel, type Api, type TestKernel } from '../support/harness.ts';

const ECHO = fileURLToPath(new URL('./fixtures/echo', import.meta.url));
let first: TestKernel;
let second: RunningKernel;
let secondApi: Api;
let secondDir: string;

beforeAll(async () => {
  first = await startTestKernel();
  secondDir = await mkdtemp(join(tmpdir(), 'keel-second-'));
  // One data directory per server; processes sharing a database share its keys, as operators distribute them.
  for (const file of ['agent-jwt.secret', 'secrets-master.keys']) await copyFile(join(first.dataDir, file), join(secondDir, file)).catch(() => undefined);
  const config = loadConfig({ env: {}, overrides: { dataDir: secondDir, database: { url: first.databaseUrl }, logging: { level: 'silent' }, server: { host: '127.0.0.1', port: 0, exposure: 'private' } } });
  second = await startKernel(config, { log: createLogger('silent'), port: 0 });
  secondApi = createApi(second.url);
});
afterAll(async () => {
  await second?.stop();
  await first?.stop();
  await rm(secondDir, { recursive: true, force: true });
});

async function eventually<T>(probe: () => Promise<T>, accept: (value: T) => boolean): Promise<T> {
  let value = await probe();
  for (let i = 0; i < 50 && !accept(value); i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    value = await probe();
  }
  return value;
}

describe('two kernel processes on one database', () => {
  it('start, stop and reconfigure plugins in step', async () => {
    expect((await first.api.post('/api/plugins/install', { localPath: ECHO })).status).toBe(201);
    expect((await first.api.post('/api/plugins/echo/enable', {})).status).toBe(200);
    const served = await eventually(() => secondApi.post('/api/plugins/echo/echo', { from: 'second' }), (r) => r.status === 200);
    expect(served.body).toEqual({ body: { from: 'second' }, query: {} });
    expect((await first.api.post('/api/plugins/echo/disable', {})).status).toBe(200);
    const gone = await eventually(() => secondApi.post('/api/plugins/echo/echo', {}), (r) => r.status === 404);
    expect(gone.status).toBe(404);
  }, 30_000);

  it('keep one activity chain without forks when both write', async () => {
    const company = (await first.api.post('/api/companies', { name: 'Shared' })).body;
    await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? first.api : secondApi).post(`/api/companies/${company.id}/activity`, { actorId: 'x', action: 'test.concurrent', entityType: 'thing', entityId: String(i) })));
    const { rows } = await first.sql.query('select seq from activity_log where company_id = $1 order by seq', [company.id]);
    expect(rows.map((r: any) => Number(r.seq))).toEqual(Array.from({ length: rows.length }, (_, i) => i + 1));
  });
});
