import { describe, expect, it } from 'vitest';
import { InvalidManifestError, validateManifest } from '../../sdk/manifest/validate-manifest.ts';

const manifest = (route: Record<string, unknown>, capabilities = ['http.routes', 'http.proxy']) => ({
  key: 'gw', version: '1.0.0', sdkApiVersion: 1, displayName: 'Gateway', entry: 'src/index.ts',
  capabilities: capabilities.map((id) => ({ id, reason: 'test' })),
  routes: [{ key: 'r', method: 'POST', path: '/r', auth: 'none', ...route }],
});

const issues = (value: unknown) => {
  try { validateManifest(value); } catch (error) { return (error as InvalidManifestError).issues; }
  return [];
};

describe('the route manifest\'s proxy field', () => {
  it('accepts a POST route with http.proxy', () => {
    expect(issues(manifest({ proxy: { credentialHeaders: ['x-api-key', 'x-goog-api-key'], bodyFields: ['model', 'stream'], maxBodyBytes: 1024 * 1024 } }))).toEqual([]);
    expect(issues(manifest({ proxy: {} }))).toEqual([]);
  });

  it('needs the http.proxy capability', () => {
    expect(issues(manifest({ proxy: {} }, ['http.routes']))).toContainEqual({ path: 'routes.0.proxy', message: 'needs the http.proxy capability; declare it under capabilities' });
  });

  it('needs POST, and no body schema, upload, batch or other answer', () => {
    expect(issues(manifest({ method: 'GET', proxy: {} }))).toContainEqual({ path: 'routes.0.proxy', message: 'needs a POST route' });
    expect(issues(manifest({ body: { type: 'object' }, proxy: {} })).map((issue) => issue.path)).toContain('routes.0.proxy');
    expect(issues(manifest({ batch: {}, proxy: {} })).map((issue) => issue.path)).toContain('routes.0.proxy');
  });

  it('bounds its lists and its body limit, and refuses credential headers the kernel owns', () => {
    expect(issues(manifest({ proxy: { credentialHeaders: ['a', 'b', 'c', 'd', 'e'] } })).length).toBeGreaterThan(0);
    expect(issues(manifest({ proxy: { credentialHeaders: ['authorization'] } })).length).toBeGreaterThan(0);
    expect(issues(manifest({ proxy: { credentialHeaders: ['X-Api-Key'] } })).length).toBeGreaterThan(0);
    expect(issues(manifest({ proxy: { bodyFields: Array.from({ length: 17 }, (_, i) => `f${i}`) } })).length).toBeGreaterThan(0);
    expect(issues(manifest({ proxy: { bodyFields: ['__proto__'] } })).length).toBeGreaterThan(0);
    expect(issues(manifest({ proxy: { maxBodyBytes: 64 * 1024 * 1024 + 1 } })).length).toBeGreaterThan(0);
  });

  it('refuses an in_transaction subscription to proxy.finished', () => {
    const value = { ...manifest({ proxy: {} }, ['http.routes', 'http.proxy', 'events.hooks']), events: [{ event: 'proxy.finished', mode: 'in_transaction' }] };
    expect(issues(value)).toContainEqual({ path: 'events.0.event', message: 'execution and proxy events cannot be vetoed; subscribe to them after_commit' });
  });
});
