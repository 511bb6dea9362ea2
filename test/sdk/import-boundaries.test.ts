import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The layout's import rules (ARCHITECTURE.md): sdk/ imports nothing from kernel/, so it can be
 * packed and published on its own; plugins and examples import the SDK only.
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
});
