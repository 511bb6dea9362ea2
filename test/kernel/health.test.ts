import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionTimeouts } from '../../kernel/http/connection-limits.ts';
import { listenEarly } from '../../kernel/http/early-listener.ts';
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

  it('answers 200 degraded naming a plugin the database says is enabled but this process does not run, or that failed to start; readiness stays 200', async () => {
    await installPlugin(t, ECHO);
    try {
      // Enabled in the database behind this process's back (no notification): nothing serves it here.
      await t.sql.query("update plugins set status = 'enabled' where key = 'echo'");
      const absent = await t.api.get('/api/health');
      expect(absent.status).toBe(200);
      expect(absent.body).toMatchObject({
        status: 'degraded', down: ['plugins.echo'],
        components: { database: { status: 'up' }, jobs: { status: 'up' }, plugins: { echo: { status: 'down', worker: 'absent', detail: 'enabled, but not running in this process' } } },
      });
      await t.sql.query("update plugins set status = 'failed', last_error = 'boot failed: boom' where key = 'echo'");
      const failed = await t.api.get('/api/health');
      expect(failed.status).toBe(200);
      expect(failed.body.status).toBe('degraded');
      expect(failed.body.components.plugins.echo).toEqual({ status: 'down', worker: 'failed', detail: 'could not start: boot failed: boom' });
      // A plugin that is down never takes the instance out of a load balancer's rotation.
      const [ready, live] = await Promise.all([t.api.get('/api/health/ready'), t.api.get('/api/health/live')]);
      expect(ready.status).toBe(200);
      expect(ready.body.status).toBe('ready');
      expect(live.status).toBe(200);
    } finally {
      await t.sql.query("update plugins set status = 'installed' where key = 'echo'");
    }
    const healthy = await t.api.get('/api/health');
    expect(healthy.status).toBe(200);
    expect(healthy.body.status).toBe('ok');
    expect(healthy.body.down).toBeUndefined();
  });
});

describe('GET /api/health/live and /api/health/ready', () => {
  it('liveness answers 200 without reading anything', async () => {
    const res = await t.api.get('/api/health/live');
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('readiness answers 200 with the database and the job engine only', async () => {
    const res = await t.api.get('/api/health/ready');
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toMatchObject({ status: 'ready', components: { database: { status: 'up' }, jobs: { status: 'up' } } });
    expect(Object.keys(res.body.components).sort()).toEqual(['database', 'jobs']);
  });

  it('before the kernel is up, liveness answers 200 and readiness 503 starting', async () => {
    const early = await listenEarly('127.0.0.1', 0, connectionTimeouts({ server: {}, limits: {} }));
    try {
      const live = await fetch(`${early.url}/api/health/live`);
      expect(live.status).toBe(200);
      expect(await live.json()).toEqual({ status: 'ok' });
      const ready = await fetch(`${early.url}/api/health/ready`);
      expect(ready.status).toBe(503);
      expect(ready.headers.get('retry-after')).toBe('1');
      expect(await ready.json()).toMatchObject({ code: 'starting', error: 'Keel is starting' });
      expect((await fetch(`${early.url}/api/health`)).status).toBe(503);
    } finally {
      await early.close(0);
    }
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
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'degraded', down: ['plugins'], components: { database: { status: 'up' }, plugins: { status: 'down' } } });
    expect(res.text).not.toContain('hidden');
    expect(res.text).not.toContain('secret-ish');
  });
});
