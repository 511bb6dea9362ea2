import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startKernelProcess } from './support/kernel-process.ts';
import { printTable } from './support/load.ts';

const PAGES = Number(process.env.WIKI_BENCH_PAGES ?? 10_000);
const SEARCHES = Number(process.env.WIKI_BENCH_SEARCHES ?? 500);
const DISK_CHANGES = 20;
const VOCABULARY = 5_000;
const WRITERS = 8;

/**
 * The knowledge wiki at 10^4 pages: latency of `wiki_search` (one word of a 5,000-word
 * vocabulary, each page 200 words of it, so a query matches about 400 pages and ranks them),
 * one request at a time through POST /api/plugins/tools/execute; and how long a page written on
 * disk outside Keel takes to become searchable (folder watch, job, index), polled every 10 ms.
 */
export async function run(): Promise<void> {
  const root = await realpath(await mkdtemp(join(tmpdir(), 'keel-wiki-bench-')));
  const kernel = await startKernelProcess({}, ['test/bench/support/bench-kernel-main.ts']);
  try {
    await kernel.call('POST', '/api/plugins/install', { packageName: '@keel/plugin-wiki' });
    await kernel.call('POST', '/api/plugins/llm-wiki/enable', {});
    const company = await kernel.call('POST', '/api/companies', { name: 'Wiki Bench' });
    await kernel.call('PUT', `/api/plugins/llm-wiki/companies/${company.id}/local-folders/wiki-root`, { path: root });
    await kernel.call('POST', '/api/plugins/llm-wiki/bootstrap', { companyId: company.id });
    const scope = { companyId: company.id, wikiId: 'default' };
    const execute = (tool: string, input: Record<string, unknown>) => kernel.call('POST', '/api/plugins/tools/execute', { tool: `llm-wiki.${tool}`, companyId: company.id, input: { ...scope, ...input } });

    let seed = 42;
    const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
    const word = () => `w${Math.floor(random() * VOCABULARY)}`;
    const started = performance.now();
    let next = 0;
    await Promise.all(Array.from({ length: WRITERS }, async () => {
      while (next < PAGES) {
        const i = next++;
        const body = Array.from({ length: 200 }, word).join(' ');
        await execute('wiki_write_page', { path: `concepts/group-${i % 100}/page-${i}.md`, content: `# Page ${i} ${word()}\n\n${body}\n` });
      }
    }));
    const fillSeconds = (performance.now() - started) / 1000;

    for (let i = 0; i < 50; i++) await execute('wiki_search', { query: word() });
    const search: number[] = [];
    let matched = 0;
    for (let i = 0; i < SEARCHES; i++) {
      const t0 = performance.now();
      const answer = await execute('wiki_search', { query: word(), limit: 20 });
      search.push(performance.now() - t0);
      matched += answer.result.results.length;
    }

    const disk: number[] = [];
    for (let i = 0; i < DISK_CHANGES; i++) {
      const marker = `diskmarker${i}x${Math.floor(random() * 1e9)}`;
      const t0 = performance.now();
      await writeFile(join(root, 'wiki', 'concepts', `disk-${i}.md`), `# Disk ${i}\n\n${marker}\n`);
      for (;;) {
        const answer = await execute('wiki_search', { query: marker });
        if (answer.result.results.length) break;
        if (performance.now() - t0 > 30_000) throw new Error(`page written on disk not searchable after 30 s (${marker})`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      disk.push(performance.now() - t0);
    }

    printTable(`knowledge wiki, ${PAGES} pages (filled in ${Math.round(fillSeconds)} s by ${WRITERS} writers through wiki_write_page)`, [
      { measure: `wiki_search, one word (mean ${Math.round(matched / SEARCHES)} of 20 results shown), HTTP client-timed`, 'p50 ms': pct(search, 50), 'p99 ms': pct(search, 99) },
      { measure: 'page written on disk -> found by wiki_search (watch + job + index)', 'p50 ms': pct(disk, 50), 'p99 ms': pct(disk, 99) },
    ]);
  } finally {
    await kernel.stop();
    await rm(root, { recursive: true, force: true });
  }
}

const round = (value: number) => Math.round(value * 100) / 100;
function pct(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!);
}
