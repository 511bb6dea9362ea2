import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The layout's import rules (ARCHITECTURE.md): sdk/ imports nothing from kernel/, so it can be
 * packed and published on its own; plugins and examples import the SDK only; and no circle of
 * imports in kernel/ or sdk/ ties more than five files together.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules' || name.startsWith('.')) return [];
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.(ts|tsx|mts)$/.test(name) ? [path] : [];
  });
}

function relativeImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(IMPORT)].map((match) => match[1] ?? match[2]!).filter((spec) => spec.startsWith('.'))
    .map((spec) => relative(ROOT, resolve(dirname(file), spec)));
}

describe('import boundaries', () => {
  it('sdk/ imports nothing from kernel/', () => {
    const offending = sourceFiles(join(ROOT, 'sdk')).flatMap((file) => relativeImports(file).filter((target) => target.startsWith('kernel/')).map((target) => `${relative(ROOT, file)} -> ${target}`));
    expect(offending).toEqual([]);
  });

  it('every package sdk/ imports is a dependency of @keel/sdk, so a fresh install has it', () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'sdk', 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
    const declared = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})]);
    const packageOf = (spec: string) => spec.split('/').slice(0, spec.startsWith('@') ? 2 : 1).join('/');
    const missing = sourceFiles(join(ROOT, 'sdk')).filter((file) => !file.includes(`${join(ROOT, 'sdk', 'pack')}/`)).flatMap((file) => {
      const text = readFileSync(file, 'utf8');
      return [...text.matchAll(IMPORT)].map((match) => match[1] ?? match[2]!)
        .filter((spec) => !spec.startsWith('.') && !spec.startsWith('node:') && !spec.startsWith('@keel/sdk/') && !spec.includes('${'))
        .filter((spec) => !declared.has(packageOf(spec))).map((spec) => `${relative(ROOT, file)} -> ${spec}`);
    });
    expect(missing).toEqual([]);
  });

  it('plugins and examples import nothing from kernel/ or test/', () => {
    const files = [...sourceFiles(join(ROOT, 'plugins')), ...sourceFiles(join(ROOT, 'examples'))].filter((file) => !file.endsWith('.test.ts'));
    const offending = files.flatMap((file) => relativeImports(file).filter((target) => target.startsWith('kernel/') || target.startsWith('test/')).map((target) => `${relative(ROOT, file)} -> ${target}`));
    expect(offending).toEqual([]);
  });

  it('ties no more than five files of kernel/ and sdk/ into one circle of imports (type imports included)', () => {
    const files = [...sourceFiles(join(ROOT, 'kernel')), ...sourceFiles(join(ROOT, 'sdk'))].map((file) => relative(ROOT, file));
    const known = new Set(files);
    const edges = new Map(files.map((file) => [file, relativeImports(join(ROOT, file)).filter((target) => known.has(target))]));
    const circles = stronglyConnected(files, edges).filter((circle) => circle.length > 1);
    expect(circles.length).toBeGreaterThan(0);
    expect(circles.filter((circle) => circle.length > 5).map((circle) => circle.sort().join(', '))).toEqual([]);
  });
});

/** Tarjan's strongly connected components: each is a set of files every one of which imports, through the others, every other. */
function stronglyConnected(nodes: string[], edges: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of edges.get(node) ?? []) {
      if (!index.has(next)) { visit(next); low.set(node, Math.min(low.get(node)!, low.get(next)!)); }
      else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do { member = stack.pop()!; onStack.delete(member); component.push(member); } while (member !== node);
    components.push(component);
  };
  for (const node of nodes) if (!index.has(node)) visit(node);
  return components;
}
