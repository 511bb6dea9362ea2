import type { PluginManifest, RouteManifest } from '../../../sdk/plugin/manifest.ts';
import { entityLookup, type EntityLookup } from './route-entities.ts';
import { normalisePath } from '../../../sdk/manifest/validate-manifest.ts';

/**
 * The routes plugins contribute, matched after the kernel's own routes. Relative routes live
 * under /api/plugins/{pluginKey}; absolute ones (granted http.routes.absolute) at the path
 * the manifest gives. Two claimants of one route are refused at enable, naming both.
 */
export interface PluginRoute {
  plugin: string;
  route: RouteManifest;
  fullPath: string;
  pattern: RegExp;
  params: string[];
  /** How an `entityParam` route finds its company (route-entities.ts). */
  entity?: EntityLookup;
}

export function compileRoute(manifest: PluginManifest, route: RouteManifest): PluginRoute {
  const plugin = manifest.key;
  const path = normalisePath(route.path);
  const fullPath = route.absolute ? path : `/api/plugins/${plugin}${path === '/' ? '' : path}`;
  const params: string[] = [];
  // A path declared with a trailing slash (`/api/waitlist/`) is served with and without it, as any other.
  const source = fullPath.split('/').map((segment) => {
    if (segment.startsWith(':')) { params.push(segment.slice(1)); return '([^/]+)'; }
    return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }).join('/').replace(/\/$/, '');
  return { plugin, route, fullPath, pattern: new RegExp(`^${source}/?$`), params, entity: entityLookup(manifest, route) };
}

/** A sample concrete path for a pattern, used to test overlaps. */
export function samplePath(fullPath: string): string {
  return fullPath.split('/').map((segment) => (segment.startsWith(':') ? '00000000-0000-4000-8000-000000000000' : segment)).join('/');
}

export function overlaps(a: PluginRoute, b: PluginRoute): boolean {
  if (a.route.method !== b.route.method) return false;
  return a.pattern.test(samplePath(b.fullPath)) || b.pattern.test(samplePath(a.fullPath));
}

export class RouteTable {
  private routes: PluginRoute[] = [];
  /** Routes of enables and upgrades in progress in this process: checked as if mounted, so two at once cannot both claim one path. */
  private readonly reserved = new Map<string, PluginRoute[]>();
  private changes = 0;
  private index = new RouteIndex([]);

  /** Changes whenever routes are mounted or unmounted: what is derived from the table (the OpenAPI document) is cached by it. */
  get version(): number {
    return this.changes;
  }

  add(routes: PluginRoute[]): void {
    this.changes++;
    this.routes.push(...routes);
    // Literal segments before parameters, so /x/stats wins over /x/:id.
    this.routes.sort((a, b) => specificity(b.fullPath) - specificity(a.fullPath));
    this.index = new RouteIndex(this.routes);
  }

  remove(plugin: string): void {
    this.changes++;
    this.routes = this.routes.filter((r) => r.plugin !== plugin);
    this.index = new RouteIndex(this.routes);
  }

  conflicts(candidate: PluginRoute): PluginRoute | undefined {
    const claimed = [...this.routes, ...[...this.reserved.values()].flat()];
    return claimed.find((existing) => existing.plugin !== candidate.plugin && overlaps(existing, candidate));
  }

  /** Holds a plugin's routes while its enable or upgrade runs (it mounts them at the end); answers the release. */
  reserve(plugin: string, routes: PluginRoute[]): () => void {
    this.reserved.set(plugin, routes);
    return () => { if (this.reserved.get(plugin) === routes) this.reserved.delete(plugin); };
  }

  /**
   * The route serving `method` on `path`, the methods the path allows when none does, or null.
   * Among routes matching a path, the one with literal segments earliest wins (/x/stats over
   * /x/:id), and a route whose parameter does not decode gives way to the next.
   */
  match(method: string, path: string): { route: PluginRoute; params: Record<string, string> } | { allowed: string[] } | null {
    const allowed: string[] = [];
    const found = this.index.match(method, pathSegments(path), allowed);
    return found ?? (allowed.length ? { allowed } : null);
  }

  all(): readonly PluginRoute[] {
    return this.routes;
  }
}

/** The route's parameters, percent-decoded; undefined when one does not decode. */
function decodedParams(names: string[], values: readonly string[]): Record<string, string> | undefined {
  // No prototype: a parameter's name is only ever its own key.
  const params: Record<string, string> = Object.create(null);
  try {
    names.forEach((name, index) => { params[name] = decodeURIComponent(values[index]!); });
  } catch {
    return undefined;
  }
  return params;
}

/** A path's segments as routes are matched: one trailing slash does not count (`/x/` is `/x`). */
function pathSegments(path: string): string[] {
  return (path.endsWith('/') ? path.slice(0, -1) : path).split('/');
}

interface RouteNode { literal: Map<string, RouteNode>; param: RouteNode | null; routes: PluginRoute[] }

const routeNode = (): RouteNode => ({ literal: new Map(), param: null, routes: [] });

/**
 * The mounted routes as a tree of path segments, so that a request walks its own segments
 * instead of trying every route's pattern in turn (170 patterns with every first-party plugin
 * enabled, up to 10 µs a request). It answers what the patterns answer, in the same order:
 * a literal child is tried before the parameter child, which is the table's order of
 * specificity, and a leaf keeps its routes in the table's order.
 */
class RouteIndex {
  private readonly root = routeNode();

  constructor(routes: readonly PluginRoute[]) {
    for (const route of routes) {
      let node = this.root;
      for (const segment of pathSegments(route.fullPath)) {
        if (segment.startsWith(':')) node = node.param ??= routeNode();
        else {
          let next = node.literal.get(segment);
          if (!next) node.literal.set(segment, next = routeNode());
          node = next;
        }
      }
      node.routes.push(route);
    }
  }

  match(method: string, segments: readonly string[], allowed: string[]): { route: PluginRoute; params: Record<string, string> } | null {
    return this.walk(this.root, method, segments, 0, [], allowed);
  }

  private walk(node: RouteNode, method: string, segments: readonly string[], at: number, values: string[], allowed: string[]): { route: PluginRoute; params: Record<string, string> } | null {
    if (at === segments.length) {
      for (const route of node.routes) {
        if (route.route.method !== method) { allowed.push(route.route.method); continue; }
        const params = decodedParams(route.params, values);
        // The path guard refuses such paths first; a route table on its own still never throws.
        if (params) return { route, params };
      }
      return null;
    }
    const segment = segments[at]!;
    const literal = node.literal.get(segment);
    const found = literal ? this.walk(literal, method, segments, at + 1, values, allowed) : null;
    if (found || !node.param || segment === '') return found;
    values.push(segment);
    const viaParam = this.walk(node.param, method, segments, at + 1, values, allowed);
    values.pop();
    return viaParam;
  }
}

function specificity(path: string): number {
  return path.split('/').reduce((score, segment) => score * 2 + (segment.startsWith(':') ? 0 : 1), 1);
}
