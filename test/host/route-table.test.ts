import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { compileRoute, RouteTable, type PluginRoute } from '../../kernel/host/contributions/routes.ts';
import type { PluginManifest, RouteManifest } from '../../sdk/plugin/manifest.ts';

/**
 * The route table walks a tree of path segments. What it answers must be what trying each
 * mounted route's pattern in the table's order answers (the table's definition before the
 * tree): the same route, the same parameters, the same methods for a 405.
 */
function byPatterns(routes: readonly PluginRoute[], method: string, path: string): ReturnType<RouteTable['match']> {
  const allowed: string[] = [];
  for (const route of routes) {
    const match = route.pattern.exec(path);
    if (!match) continue;
    if (route.route.method !== method) { allowed.push(route.route.method); continue; }
    try {
      const params: Record<string, string> = Object.create(null);
      route.params.forEach((name, index) => { params[name] = decodeURIComponent(match[index + 1]!); });
      return { route, params };
    } catch {
      continue;
    }
  }
  return allowed.length ? { allowed } : null;
}

function manifest(key: string, routes: RouteManifest[]): PluginManifest {
  return { key, routes } as PluginManifest;
}

function route(method: string, path: string, absolute = false): RouteManifest {
  return { key: `${method} ${path}`, method, path, auth: 'any', ...(absolute ? { absolute: true } : {}) } as RouteManifest;
}

function table(...manifests: PluginManifest[]): RouteTable {
  const routes = new RouteTable();
  for (const m of manifests) routes.add((m.routes ?? []).map((r) => compileRoute(m, r)));
  return routes;
}

function same(routes: RouteTable, method: string, path: string): void {
  const answer = routes.match(method, path);
  const expected = byPatterns(routes.all(), method, path);
  expect({ method, path, answer: summary(answer) }).toEqual({ method, path, answer: summary(expected) });
}

function summary(answer: ReturnType<RouteTable['match']>): unknown {
  if (!answer) return null;
  if ('allowed' in answer) return { allowed: [...answer.allowed].sort() };
  return { route: `${answer.route.plugin} ${answer.route.route.method} ${answer.route.fullPath}`, params: { ...answer.params } };
}

describe('the plugin route table', () => {
  it('prefers literal segments to parameters, position by position', () => {
    const routes = table(manifest('p', [route('GET', '/x/:id'), route('GET', '/x/stats'), route('GET', '/:a/:b'), route('GET', '/:a/stats/deep'), route('GET', '/x/:id/deep')]));
    expect(summary(routes.match('GET', '/api/plugins/p/x/stats'))).toEqual({ route: 'p GET /api/plugins/p/x/stats', params: {} });
    expect(summary(routes.match('GET', '/api/plugins/p/x/7'))).toEqual({ route: 'p GET /api/plugins/p/x/:id', params: { id: '7' } });
    expect(summary(routes.match('GET', '/api/plugins/p/y/7'))).toEqual({ route: 'p GET /api/plugins/p/:a/:b', params: { a: 'y', b: '7' } });
    // The literal x wins over the parameter a at the first position where they differ.
    expect(summary(routes.match('GET', '/api/plugins/p/x/stats/deep'))).toEqual({ route: 'p GET /api/plugins/p/x/:id/deep', params: { id: 'stats' } });
  });

  it('serves a less specific route of the right method before answering 405, and lists every method otherwise', () => {
    const routes = table(manifest('p', [route('GET', '/x/stats'), route('POST', '/x/:id'), route('DELETE', '/x/stats')]));
    expect(summary(routes.match('POST', '/api/plugins/p/x/stats'))).toEqual({ route: 'p POST /api/plugins/p/x/:id', params: { id: 'stats' } });
    expect(summary(routes.match('PUT', '/api/plugins/p/x/stats'))).toEqual({ allowed: ['DELETE', 'GET', 'POST'] });
    expect(routes.match('GET', '/api/plugins/p/y/stats')).toBeNull();
  });

  it('takes one trailing slash as none, and no empty segment as a parameter', () => {
    const routes = table(manifest('p', [route('GET', '/items/:id'), route('GET', '/')]), manifest('site', [route('GET', '/', true), route('GET', '/api/waitlist/', true)]));
    expect(summary(routes.match('GET', '/api/plugins/p/items/1/'))).toEqual({ route: 'p GET /api/plugins/p/items/:id', params: { id: '1' } });
    expect(routes.match('GET', '/api/plugins/p/items/')).toBeNull();
    expect(routes.match('GET', '/api/plugins/p/items//')).toBeNull();
    expect(summary(routes.match('GET', '/api/plugins/p/'))).toEqual({ route: 'p GET /api/plugins/p', params: {} });
    expect(summary(routes.match('GET', '/'))).toEqual({ route: 'site GET /', params: {} });
    expect(summary(routes.match('GET', '/api/waitlist'))).toEqual({ route: 'site GET /api/waitlist/', params: {} });
    expect(routes.match('GET', '/api/waitlist//')).toBeNull();
  });

  it('gives way to the next route when a parameter does not decode', () => {
    const routes = table(manifest('p', [route('GET', '/items/:id'), route('GET', '/:any/%ZZ')]));
    expect(summary(routes.match('GET', '/api/plugins/p/items/%ZZ'))).toEqual({ route: 'p GET /api/plugins/p/:any/%ZZ', params: { any: 'items' } });
  });

  it('does not match, rather than throw, a path whose parameter does not decode', () => {
    const table = new RouteTable();
    table.add([compileRoute({ key: 'probe' } as PluginManifest, { key: 'get', method: 'GET', path: '/items/:itemId', auth: 'any' })]);
    expect(table.match('GET', '/api/plugins/probe/items/%ZZ')).toBeNull();
    expect(table.match('GET', '/api/plugins/probe/items/%ED%A0%80')).toBeNull();
    expect(table.match('GET', '/api/plugins/probe/items/a%2Fb')).toMatchObject({ params: { itemId: 'a/b' } });
  });

  it('forgets a plugin\'s routes when they are removed', () => {
    const routes = table(manifest('p', [route('GET', '/a')]), manifest('q', [route('GET', '/a')]));
    routes.remove('p');
    expect(routes.match('GET', '/api/plugins/p/a')).toBeNull();
    expect(summary(routes.match('GET', '/api/plugins/q/a'))).toMatchObject({ route: 'q GET /api/plugins/q/a' });
  });

  it('answers as the patterns do for every route of the first-party plugins and for paths near them', () => {
    const manifests: PluginManifest[] = [];
    for (const dir of readdirSync(new URL('../../plugins', import.meta.url))) {
      const text = (() => { try { return readFileSync(new URL(`../../plugins/${dir}/plugin.json`, import.meta.url), 'utf8'); } catch { return null; } })();
      if (text) manifests.push(JSON.parse(text));
    }
    const routes = table(...manifests);
    expect(routes.all().length).toBeGreaterThan(100);
    const id = '00000000-0000-4000-8000-000000000000';
    let checked = 0;
    for (const mounted of routes.all()) {
      const concrete = mounted.fullPath.split('/').map((segment) => (segment.startsWith(':') ? id : segment)).join('/');
      const variants = [concrete, `${concrete}/`, `${concrete}/extra`, concrete.replace(id, 'stats'), concrete.replace(/\/[^/]*$/, ''), concrete.replace(id, '%ZZ'), concrete.toUpperCase()];
      for (const path of variants) for (const method of ['GET', 'POST', 'PATCH', 'DELETE', 'PUT']) { same(routes, method, path); checked++; }
    }
    expect(checked).toBeGreaterThan(3000);
  });
});
