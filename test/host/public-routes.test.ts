import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidManifestError, validateManifest } from '../../sdk/manifest/validate-manifest.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installPlugin, pluginVariant } from '../support/plugins.ts';

/** Public root routes (`http.routes.public`): outside /api, unauthenticated, granted only by name to third-party plugins. */
const ECHO = fileURLToPath(new URL('./fixtures/echo', import.meta.url));
let t: TestKernel;

const publicEcho = (key: string, route: Record<string, unknown> = {}) => pluginVariant(ECHO, (manifest) => {
  manifest.key = key;
  manifest.database.namespace = key.replace(/-/g, '_');
  manifest.capabilities.push({ id: 'http.routes.public', reason: 'Serves a public page' });
  manifest.routes.push({ key: 'echo', method: 'GET', path: `/${key}.txt`, absolute: true, auth: 'none', ...route });
});

function refusal(manifest: unknown): string[] {
  try { validateManifest(manifest); } catch (error) { return (error as InvalidManifestError).issues.map((issue) => `${issue.path}: ${issue.message}`); }
  return [];
}

beforeAll(async () => { t = await startTestKernel(); });
afterAll(async () => { await t?.stop(); });

describe('public root routes', () => {
  const base = () => ({
    key: 'site', version: '1.0.0', sdkApiVersion: 1, displayName: 'Site', entry: 'src/index.ts',
    capabilities: [{ id: 'http.routes', reason: 'routes' }, { id: 'http.routes.public', reason: 'public pages' }],
    routes: [{ key: 'p', method: 'GET', path: '/page.md', auth: 'none', absolute: true }],
  });

  it('are valid with auth none and http.routes.public; refused with any other auth, under /api, or without the capability', () => {
    expect(refusal(base())).toEqual([]);
    const authed = base(); authed.routes[0]!.auth = 'board';
    expect(refusal(authed)).toContain("routes.0.auth: root paths outside /api/ are public: auth must be 'none'");
    const api = base(); api.routes[0]!.path = '/api';
    expect(refusal(api).some((issue) => issue.startsWith('routes.0.path'))).toBe(true);
    const undeclared = base(); undeclared.capabilities = undeclared.capabilities.filter((c) => c.id !== 'http.routes.public');
    expect(refusal(undeclared)).toContain('routes.0.absolute: needs the http.routes.public capability; declare it under capabilities');
    // An /api/ route still needs http.routes.absolute, not the public capability.
    const apiRoute = base(); apiRoute.routes[0]!.path = '/api/site/page';
    expect(refusal(apiRoute)).toContain('routes.0.absolute: needs the http.routes.absolute capability; declare it under capabilities');
  });

  it('a third-party plugin gets them only when the operator names the capability', async () => {
    const folder = await publicEcho('public-echo');
    await installPlugin(t, folder);
    const refused = await t.api.post('/api/plugins/public-echo/enable', {});
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('capability_grant_required');
    expect(refused.body.error).toContain('http.routes.public');
    expect((await t.api.get('/public-echo.txt')).status).toBe(404);
    const declared = (await t.api.get('/api/plugins/public-echo')).body.capabilities.map((c: any) => c.id ?? c);
    const enabled = await t.api.post('/api/plugins/public-echo/enable', { grant: declared });
    expect(enabled.status, enabled.text).toBe(200);
    const page = await t.api.get('/public-echo.txt?x=1', { headers: { authorization: '' } });
    expect(page.status).toBe(200);
    expect(page.body).toEqual({ body: null, query: { x: '1' } });
    expect((await t.api.post('/api/plugins/public-echo/disable')).status).toBe(200);
    expect((await t.api.get('/public-echo.txt')).status).toBe(404);
  });

  it('cannot claim a kernel route', async () => {
    const folder = await publicEcho('shadow-echo');
    const changed = await pluginVariant(folder, (manifest) => { manifest.routes.at(-1).path = '/mcp'; manifest.routes.at(-1).method = 'POST'; });
    await installPlugin(t, changed);
    const declared = (await t.api.get('/api/plugins/shadow-echo')).body.capabilities.map((c: any) => c.id ?? c);
    const res = await t.api.post('/api/plugins/shadow-echo/enable', { grant: declared });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('route_conflict');
  });
});
