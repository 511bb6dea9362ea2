import { readdir } from 'node:fs/promises';

/**
 * Runs the benchmarks in test/bench (`*.bench.ts`), or those whose name contains one of the
 * arguments: `npm run bench -- auth`. Each prints ratios measured in one run; none asserts.
 */
const filters = process.argv.slice(2);
const files = (await readdir(new URL('.', import.meta.url))).filter((f) => f.endsWith('.bench.ts')).sort();
for (const file of files) {
  if (filters.length && !filters.some((f) => file.includes(f))) continue;
  console.log(`\n=== ${file} ===`);
  const module = await import(new URL(file, import.meta.url).href) as { run(): Promise<void> };
  await module.run();
}
