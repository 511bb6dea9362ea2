import type { Router } from '@koa/router';
import type { PluginManifest, RouteManifest } from '../../sdk/plugin/manifest.ts';
import { isRootPath } from '../../sdk/capabilities/http.ts';
import { conflict } from '../http/errors.ts';
import { compileRoute, samplePath, type PluginRoute, type RouteTable } from './contributions/routes.ts';

/** The routes a plugin serves with these grants (absolute and public root routes only with their capability). */
export function claimedRoutes(manifest: PluginManifest, grants: readonly string[]): PluginRoute[] {
  if (!grants.includes('http.routes')) return [];
  const granted = (route: RouteManifest) => !route.absolute || grants.includes(isRootPath(route.path) ? 'http.routes.public' : 'http.routes.absolute');
  return (manifest.routes ?? []).filter(granted).map((route) => compileRoute(manifest, route));
}

/**
 * Which plugin serves which path: a route claimed by two plugins, or by a plugin and the kernel,
 * is refused when the second claims it, never decided by whichever process started first.
 */
export class RouteClaims {
  private readonly routes: RouteTable;
  /** The kernel's own routes, which plugin routes may never claim. */
  private kernelRouter: Router | null = null;

  constructor(routes: RouteTable) {
    this.routes = routes;
  }

  attachKernelRouter(router: Router): void {
    this.kernelRouter = router;
  }

  /**
   * Runs an enable or upgrade with its routes checked and held: two lifecycle changes of
   * different plugins may run at once (their locks are per plugin), and the second to claim a
   * path is refused here, before anything of it is stored, rather than failing at activation.
   */
  async withRoutesReserved<T>(key: string, routes: PluginRoute[], fn: () => Promise<T>): Promise<T> {
    this.assertNoRouteConflicts(key, routes);
    const release = this.routes.reserve(key, routes);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  assertNoRouteConflicts(key: string, routes: PluginRoute[]): void {
    for (const route of routes) {
      const other = this.routes.conflicts(route);
      if (other) throw conflict(`${key} claims ${route.route.method} ${route.fullPath}, which ${other.plugin} already serves (${other.route.method} ${other.fullPath})`, { plugins: [key, other.plugin] }, 'route_conflict');
      const sample = samplePath(route.fullPath);
      for (const layer of this.kernelRouter?.stack ?? []) {
        if (!layer.methods.includes(route.route.method)) continue;
        if (layer.match(sample) || route.pattern.test(samplePath(String(layer.path)))) {
          throw conflict(`${key} claims ${route.route.method} ${route.fullPath}, which the kernel serves (${route.route.method} ${String(layer.path)})`, { plugins: [key, 'kernel'] }, 'route_conflict');
        }
      }
    }
  }
}
