import { Router } from '@koa/router';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kernelRouterOf } from '../../kernel/http/app.ts';
import { KernelPaths } from '../../kernel/http/kernel-paths.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';

/**
 * The kernel's app skips its router for a path no kernel route could serve. That is only
 * sound if the index never says no where a route's own pattern says yes: checked here against
 * every pattern of the running kernel's router, on paths made from the kernel's routes and the
 * plugins' routes, in the spellings a client may send.
 */
let t: TestKernel;
let router: Router;
let paths: KernelPaths;

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  router = kernelRouterOf(t.kernel.services)!;
  paths = new KernelPaths(router);
});
afterAll(async () => { await t?.stop(); });

const UUID = '3f0c9a52-1d8e-4c59-9f5e-0a1b2c3d4e5f';

/** A concrete path for a `:name` pattern, each parameter filled with `value`. */
function filled(pattern: string, value: string): string {
  return pattern.replace(/:[A-Za-z_$][\w$]*/g, value);
}

/** The spellings of a path a client may send: case, a trailing slash, one segment more or fewer. */
function spellings(path: string): string[] {
  const parent = path.slice(0, path.lastIndexOf('/')) || '/';
  return [path, path.toUpperCase(), `${path}/`, `${path}//`, `${path}/extra`, parent, path.replace('/api/', '/API/'), path.replace(/\/([^/]+)$/, '/%2e$1')];
}

function byPatterns(path: string): boolean {
  return router.stack.some((layer) => layer.match(path));
}

describe('the kernel path index', () => {
  it('says yes wherever one of the kernel router\'s patterns matches', () => {
    const kernelPatterns = router.stack.map((layer) => String(layer.path));
    const pluginPatterns = t.kernel.host.routes.all().map((route) => route.fullPath);
    expect(kernelPatterns.length).toBeGreaterThan(100);
    expect(pluginPatterns.length).toBeGreaterThan(50);
    const candidates = new Set<string>(['/', '//', '/api', '/api/', '/api//companies', '/%61pi/companies', '/api/companies/\u00e9', '/api/plugins', '/nowhere']);
    for (const pattern of [...kernelPatterns, ...pluginPatterns]) {
      for (const value of ['x', UUID, 'health', 'stats', '']) for (const path of spellings(filled(pattern, value))) candidates.add(path);
    }
    const missed = [...candidates].filter((path) => byPatterns(path) && !paths.mayServe(path));
    expect(missed).toEqual([]);
    expect(candidates.size).toBeGreaterThan(2000);
  });

  it('says no for the plugins\' own paths, which is what lets them skip the router', () => {
    const pluginPaths = t.kernel.host.routes.all().map((route) => filled(route.fullPath, UUID));
    const notKernel = pluginPaths.filter((path) => !byPatterns(path));
    expect(notKernel.length).toBeGreaterThan(50);
    // Every one of them is judged exactly: the index holds every kernel pattern segment by segment.
    expect(notKernel.filter((path) => paths.mayServe(path))).toEqual([]);
  });

  it('holds a pattern it cannot walk as matching whatever follows where it begins', () => {
    const own = new Router();
    own.get('/plain/:id', () => undefined);
    own.get('/files/{*rest}', () => undefined);
    own.get('/report/:name.json', () => undefined);
    const index = new KernelPaths(own);
    expect(index.mayServe('/plain/7')).toBe(true);
    expect(index.mayServe('/PLAIN/7/')).toBe(true);
    expect(index.mayServe('/plain/7/more')).toBe(false);
    expect(index.mayServe('/plain/')).toBe(false);
    expect(index.mayServe('/files/a/b/c')).toBe(true);
    expect(index.mayServe('/report/anything/at/all')).toBe(true);
    expect(index.mayServe('/elsewhere')).toBe(false);
    // A layer added after the first question is seen by the next one.
    own.get('/elsewhere', () => undefined);
    expect(index.mayServe('/elsewhere')).toBe(true);
  });
});

describe('requests around the index', () => {
  it('serves kernel routes, plugin routes, 405 and 404 as before', async () => {
    const health = await fetch(`${t.url}/API/health/`);
    expect(health.status).toBe(200);
    const wrongMethod = await fetch(`${t.url}/api/health`, { method: 'DELETE' });
    expect(wrongMethod.status).toBe(405);
    const nowhere = await fetch(`${t.url}/api/nowhere/at/all`);
    expect(nowhere.status).toBe(404);
    expect(await nowhere.json()).toMatchObject({ code: 'route_not_found' });
    // A first-party plugin's route, under an absolute path the kernel router never matches.
    const company = await t.api.post('/api/companies', { name: 'Paths' });
    const issuesPath = `/api/companies/${company.body.id}/issues`;
    expect(byPatterns(issuesPath)).toBe(false);
    const issues = await t.api.get(issuesPath);
    expect(issues.status).toBe(200);
    expect(Array.isArray(issues.body)).toBe(true);
  });
});
