import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_DIST } from '../../kernel/http/console-assets.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';

/** The console as the kernel serves it: the page, its assets, its policies, and the routes it must not shadow. */
describe('console serving', () => {
  let t: TestKernel;
  beforeAll(async () => { t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS }); });
  afterAll(async () => { await t?.stop(); });

  const get = (path: string, headers: Record<string, string> = {}) => fetch(t.url + path, { headers });
  const script = () => readdirSync(join(CONSOLE_DIST, 'assets')).find((name) => name.endsWith('.js') && !name.endsWith('.br') && !name.endsWith('.gz'))!;

  it('was built by npm install', () => {
    expect(existsSync(join(CONSOLE_DIST, 'index.html'))).toBe(true);
    expect(script()).toMatch(/^index-[\w-]+\.js$/);
  });

  it("imports nothing but React and the SDK's typed client (as an outside developer would)", () => {
    const source = fileURLToPath(new URL('../../console/src', import.meta.url));
    const files = readdirSync(source, { recursive: true, encoding: 'utf8' }).filter((name) => /\.tsx?$/.test(name));
    expect(files.length).toBeGreaterThan(5);
    const outside: string[] = [];
    for (const file of files) {
      for (const [, specifier] of readFileSync(join(source, file), 'utf8').matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)) {
        if (specifier!.startsWith('.')) continue;
        if (!['react', 'react-dom/client', '@keel/sdk/client'].includes(specifier!)) outside.push(`${file}: ${specifier}`);
      }
    }
    expect(outside).toEqual([]);
  });

  it('answers / with the page, a strict CSP and revalidation', async () => {
    const res = await get('/', { accept: 'text/html' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    const html = await res.text();
    expect(html).toContain(`/assets/${script()}`);
    expect(html).not.toMatch(/<script>(?!<)/);
  });

  it('answers console paths with the same page (the browser routes them)', async () => {
    const res = await get('/companies/abc/issues', { accept: 'text/html,application/xhtml+xml' });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('<div id="root">');
    const cli = await get('/cli-auth/some-id', { accept: 'text/html' });
    expect(cli.status).toBe(200);
  });

  it('serves hashed assets immutable for a year, compressed, with a validator', async () => {
    const path = `/assets/${script()}`;
    const res = await get(path, { 'accept-encoding': 'br, gzip' });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(res.headers.get('content-encoding')).toBe('br');
    expect(res.headers.get('vary')).toMatch(/accept-encoding/i);
    expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    const etag = res.headers.get('etag')!;
    await res.arrayBuffer();
    const again = await get(path, { 'if-none-match': etag });
    expect(again.status).toBe(304);
    const gzip = await get(path, { 'accept-encoding': 'gzip' });
    expect(gzip.headers.get('content-encoding')).toBe('gzip');
    await gzip.arrayBuffer();
  });

  it('answers an unknown asset with the JSON 404, never the page', async () => {
    const res = await get('/assets/missing-abc.js', { accept: 'text/html' });
    expect(res.status).toBe(404);
    expect((await res.json()).code).toBe('route_not_found');
  });

  it('serves the plugin frame sandboxed, without network, framable only by the console', async () => {
    const res = await get('/plugin-frame.html', { accept: 'text/html' });
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain('sandbox allow-scripts');
    expect(csp).not.toContain('allow-same-origin');
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'self'");
    expect(res.headers.get('x-frame-options')).toBe('SAMEORIGIN');
  });

  it('shadows no API, MCP or plugin route', async () => {
    const api = await get('/api/nothing-here', { accept: 'text/html' });
    expect(api.status).toBe(404);
    expect((await api.json()).code).toBe('route_not_found');
    // Only a navigation that names text/html gets the page: not a script's */*, not a missing file.
    expect((await get('/companies', { accept: '*/*' })).status).toBe(404);
    expect((await get('/gone/feed.txt', { accept: 'text/html' })).status).toBe(404);
    const json = await get('/not-a-console-path', { accept: 'application/json' });
    expect(json.status).toBe(404);
    await json.arrayBuffer();
    const llms = await get('/llms.txt', { accept: 'text/html' });
    expect(llms.status).toBe(200);
    expect(llms.headers.get('content-type')).toMatch(/^text\/plain/);
    await llms.arrayBuffer();
    const connectors = await get('/product/connectors.md', { accept: 'text/html' });
    expect(connectors.headers.get('content-type')).toMatch(/^text\/markdown/);
    await connectors.arrayBuffer();
    const mcp = await get('/mcp', { accept: 'text/html' });
    expect(mcp.headers.get('content-type') ?? '').not.toMatch(/text\/html/);
    await mcp.arrayBuffer();
    const health = await t.api.get('/api/health');
    expect(health.status).toBe(200);
  });

  it('answers only GET and HEAD with the page', async () => {
    const res = await fetch(t.url + '/companies', { method: 'POST', headers: { accept: 'text/html' } });
    expect(res.status).toBe(404);
    await res.arrayBuffer();
    const head = await fetch(t.url + '/', { method: 'HEAD', headers: { accept: 'text/html' } });
    expect(head.status).toBe(200);
  });
});
