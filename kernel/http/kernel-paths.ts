import type { Router } from '@koa/router';

interface PathNode { literal: Map<string, PathNode>; param: PathNode | null; ends: boolean; anyBelow: boolean }

const pathNode = (): PathNode => ({ literal: new Map(), param: null, ends: false, anyBelow: false });

/** A segment the tree can hold as it is: a plain literal, or a whole-segment `:name` parameter. */
const PLAIN_SEGMENT = /^(?::[A-Za-z_$][\w$]*|[A-Za-z0-9._~-]*)$/;
/** A request path the tree can judge: printable ASCII only (anything else is left to the router). */
const PLAIN_PATH = /^[\x21-\x7e]*$/;

/**
 * Whether any of the kernel router's routes could serve a path, answered by walking the
 * path's segments through a tree of the routes' segments. A request for a plugin route
 * otherwise pays for the router trying each of the kernel's few hundred patterns before it
 * gives way (about 11 µs of the kernel's time on every plugin route). The answer may say yes
 * where no route matches (the router then decides, as before), never no where one does: the
 * tree folds case and one trailing slash as the router does (neither `sensitive` nor
 * `strict`), and a route whose pattern it cannot hold segment by segment (a wildcard, an
 * optional part, a prefix-only layer) counts as matching whatever follows where it begins.
 */
export class KernelPaths {
  private readonly router: Router;
  private root = pathNode();
  private builtFrom = -1;

  constructor(router: Router) {
    this.router = router;
  }

  mayServe(path: string): boolean {
    // Layers are registered before the app serves; a test may still add one later.
    if (this.builtFrom !== this.router.stack.length) this.build();
    if (!PLAIN_PATH.test(path)) return true;
    return reaches(this.root, segmentsOf(path.toLowerCase()), 0);
  }

  private build(): void {
    const root = pathNode();
    for (const layer of this.router.stack) {
      const pattern = typeof layer.path === 'string' ? layer.path : null;
      const prefixOnly = (layer.opts as { end?: boolean }).end === false;
      let node = root;
      let held = pattern !== null;
      for (const segment of pattern === null ? [] : segmentsOf(pattern.toLowerCase())) {
        if (!PLAIN_SEGMENT.test(segment)) { held = false; break; }
        if (segment.startsWith(':')) node = node.param ??= pathNode();
        else {
          let next = node.literal.get(segment);
          if (!next) node.literal.set(segment, next = pathNode());
          node = next;
        }
      }
      if (held && !prefixOnly) node.ends = true;
      else node.anyBelow = true;
    }
    this.root = root;
    this.builtFrom = this.router.stack.length;
  }
}

/** A path's segments as the router matches them: one trailing slash does not count. */
function segmentsOf(path: string): string[] {
  return (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path).split('/');
}

function reaches(node: PathNode, segments: readonly string[], at: number): boolean {
  if (node.anyBelow) return true;
  if (at === segments.length) return node.ends;
  const segment = segments[at]!;
  const literal = node.literal.get(segment);
  if (literal && reaches(literal, segments, at + 1)) return true;
  // A parameter matches one segment that is not empty.
  return node.param !== null && segment !== '' && reaches(node.param, segments, at + 1);
}
