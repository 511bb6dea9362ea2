import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installPlugin } from '../support/plugins.ts';

const ECHO = fileURLToPath(new URL('../host/fixtures/echo', import.meta.url));
let t: TestKernel;
beforeAll(async () => { t = await startTestKernel(); });
afterAll(async () => { await t?.stop(); });

describe('GET /api/health', () => {
  it('answers 200 with the state of each component once the server is ready', async () => {
    const res = await t.api.get('/api/health');
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toMatchObject({
      status: 'ok', deploymentMode: 'local_trusted',
      components: { database: { status: 'up' }, notifications: { status: 'up' }, jobs: { status: 'up' }, plugins: {} },
    });
    expect(typeof res.body.components.database.latencyMs).toBe('number');
  });

  it('answers unknown routes with the JSON error body', async () => {
    const res = await t.api.get('/api/does-not-exist');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'No route for GET /api/does-not-exist', code: 'route_not_found' });
  });

  it('answers 503 naming a plugin the database says is enabled but this process does not run, or that failed to start', async () => {
    await installPlugin(t, ECHO);
    try {
      // Enabled in the database behind this process's back (no notification): nothing serves it here.
      await t.sql.query("update plugins set status = 'enabled' where key = 'echo'");
      const absent = await t.api.get('/api/health');
      expect(absent.status).toBe(503);
      expect(absent.headers.get('retry-after')).toBe('5');
      expect(absent.body).toMatchObject({
        error: 'Unhealthy: plugins.echo down', code: 'unhealthy', status: 'unavailable',
        components: { database: { status: 'up' }, plugins: { echo: { status: 'down', worker: 'absent', detail: 'enabled, but not running in this process' } } },
      });
      await t.sql.query("update plugins set status = 'failed', last_error = 'boot failed: boom' where key = 'echo'");
      const failed = await t.api.get('/api/health');
      expect(failed.status).toBe(503);
      expect(failed.body.components.plugins.echo).toEqual({ status: 'down', worker: 'failed', detail: 'could not start: boot failed: boom' });
    } finally {
      await t.sql.query("update plugins set status = 'installed' where key = 'echo'");
    }
    expect((await t.api.get('/api/health')).status).toBe(200);
  });
});

describe('GET /api/health in authenticated mode', () => {
  let auth: TestKernel;
  beforeAll(async () => { auth = await startTestKernel({ deploymentMode: 'authenticated' }); });
  afterAll(async () => { await auth?.stop(); });

  it('shows an anonymous caller each component group state, not which plugins are installed', async () => {
    // A plugin that failed to start, stored as the host stores one.
    await auth.sql.query(`insert into plugins (key, package_name, version, display_name, source_kind, source_path, manifest, status, last_error)
      values ('hidden', 'hidden', '1.0.0', 'Hidden', 'local_path', '/nowhere', '{}'::jsonb, 'failed', 'secret-ish detail')`);
    const res = await auth.api.get('/api/health');
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ error: 'Unhealthy: plugins down', code: 'unhealthy', components: { database: { status: 'up' }, plugins: { status: 'down' } } });
    expect(res.text).not.toContain('hidden');
    expect(res.text).not.toContain('secret-ish');
  });
});
