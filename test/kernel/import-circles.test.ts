import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

/**
 * No import circle in kernel/ or sdk/ spans more than five files (issue 31): a circle that large
 * means a module that reaches everything (as `BrokeredCall.host: ExtensionHost` once tied the
 * broker, every capability and the host together, and the manifest's schema once tied every
 * capability declaration to the manifest type). Type-only imports count: they tie the modules as
 * tightly for a reader. Each circle is found as a strongly connected component of the import graph.
 */
const MAX_CIRCLE = 5;
const root = fileURLToPath(new URL('../..', import.meta.url));
const IMPORT = /(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g;

function sourceFiles(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

function importGraph(folder: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(folder)) {
    const targets = new Set<string>();
    for (const match of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const target = resolve(dirname(file), match[1] ?? match[2]!);
      if (target.startsWith(folder) && existsSync(target)) targets.add(target);
    }
    graph.set(file, [...targets]);
  }
  return graph;
}

/** Tarjan's strongly connected components with more than one file. */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, next);
    low.set(file, next++);
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file)!, index.get(target)!));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1) found.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

for (const folder of ['kernel', 'sdk']) {
  it(`no import circle in ${folder}/ spans more than ${MAX_CIRCLE} files`, () => {
    const graph = importGraph(join(root, folder));
    expect(graph.size).toBeGreaterThan(100);
    const large = circles(graph).filter((component) => component.length > MAX_CIRCLE);
    expect(large.map((component) => component.map((path) => relative(root, path)))).toEqual([]);
  });
}

it('finds a circle when there is one', () => {
  const graph = new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]]);
  expect(circles(graph)).toEqual([['a', 'b', 'c']]);
});
