import type { Page } from 'playwright-core';
import { launchChromium } from '../console/browser.ts';
import { startKernelProcess } from './support/kernel-process.ts';
import { printTable } from './support/load.ts';

const ISSUES = Number(process.env.CONSOLE_BENCH_ISSUES ?? 10_000);
const LOADS = Number(process.env.CONSOLE_BENCH_LOADS ?? 5);
const PAINT_GOAL_MS = 1000;
const SIZE_GOAL_BYTES = 400 * 1024;

/**
 * The console in Debian's Chromium against Keel started as operators start it: the issues
 * board of a company with 10^4 issues, from navigation start to the first issue card on screen
 * (the board's first meaningful paint), on a cold load (empty cache) and a warm one; and the
 * bytes transferred (compressed, headers included) by the cold load of the console itself and of
 * everything the board page loads.
 */
export async function run(): Promise<void> {
  const kernel = await startKernelProcess();
  const browser = await launchChromium();
  try {
    const company = await kernel.call('POST', '/api/companies', { name: 'Board Bench' });
    const sql = await kernel.sql();
    await sql.query(
      `insert into plugin_work.issues (company_id, issue_number, identifier, title, description, status, priority, created_at)
       select $1::uuid, i, $2 || '-' || i, 'Seeded issue ' || i, 'Body of issue ' || i,
              (array['backlog', 'todo', 'in_progress', 'in_review', 'done', 'blocked'])[1 + i % 6], (array['low', 'medium', 'high'])[1 + i % 3],
              now() - (($3::int - i) * interval '1 second')
         from generate_series(1, $3::int) as i`, [company.id, company.issuePrefix, ISSUES]);
    await sql.query('update companies set issue_counter = $2 where id = $1', [company.id, ISSUES]);
    await sql.query('analyze plugin_work.issues');
    const url = `${kernel.url}/companies/${company.id}/issues`;

    const rows: Array<Record<string, string | number>> = [];
    let transfer = { console: 0, all: 0, encodings: new Set<string>() };
    for (let load = 0; load < LOADS; load++) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      const cold = await measure(page, url);
      const warm = await measure(page, url);
      if (load === 0) transfer = cold.transfer;
      rows.push({ load: load + 1, 'cold: board shown (ms)': cold.boardMs, 'cold: first contentful paint (ms)': cold.fcpMs, 'warm: board shown (ms)': warm.boardMs, 'issues on first page': cold.cards });
      await context.close();
    }
    printTable(`issues board, ${ISSUES.toLocaleString('en')} issues in the company, ${LOADS} fresh browser contexts`, rows);
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const coldBoard = median(rows.map((row) => Number(row['cold: board shown (ms)'])));
    printTable('console first load, transferred (compressed, with headers)', [{
      'console (html, js, css, icon)': kb(transfer.console), 'everything the board page loads (with API answers)': kb(transfer.all),
      encodings: [...transfer.encodings].join(', ') || 'none', goal: `< ${kb(SIZE_GOAL_BYTES)}`,
    }]);
    console.log(`\nboard shown, cold, median: ${coldBoard} ms (goal < ${PAINT_GOAL_MS} ms: ${coldBoard < PAINT_GOAL_MS ? 'met' : 'missed'}); console transferred: ${kb(transfer.console)} (goal < ${kb(SIZE_GOAL_BYTES)}: ${transfer.console < SIZE_GOAL_BYTES ? 'met' : 'missed'})`);
  } finally {
    await browser.close();
    await kernel.stop();
  }
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

async function measure(page: Page, url: string) {
  const transfer = { console: 0, all: 0, encodings: new Set<string>() };
  const pending: Array<Promise<void>> = [];
  const onResponse = (response: import('playwright-core').Response) => {
    pending.push((async () => {
      const sizes = await response.request().sizes().catch(() => null);
      if (!sizes) return;
      const bytes = sizes.responseBodySize + sizes.responseHeadersSize;
      transfer.all += bytes;
      const path = new URL(response.url()).pathname;
      if (!path.startsWith('/api/')) {
        transfer.console += bytes;
        const encoding = response.headers()['content-encoding'];
        if (encoding) transfer.encodings.add(encoding);
      }
    })());
  };
  page.on('response', onResponse);
  await page.goto(url, { waitUntil: 'commit' });
  // The first animation frame with an issue card in the document: the board's first meaningful paint, from navigation start.
  const boardMs = await (await page.waitForFunction(() => (document.querySelector('.issue-card') ? Math.round(performance.now()) : false), undefined, { polling: 'raf', timeout: 30_000 })).jsonValue() as number;
  const fcpMs = await page.evaluate(() => Math.round(performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1));
  const cards = await page.locator('.issue-card').count();
  await page.waitForLoadState('networkidle');
  page.off('response', onResponse);
  await Promise.all(pending);
  return { boardMs, fcpMs, cards, transfer };
}
