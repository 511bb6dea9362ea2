import { startKernelProcess, type KernelProcess } from './support/kernel-process.ts';
import { printTable } from './support/load.ts';
import { seedIssues } from './support/seed-issues.ts';

const BASE = '/api/instance/settings/experimental/issue-graph-liveness-auto-recovery';
const SEQUENTIAL = Number(process.env.LIVENESS_BENCH_CALLS ?? 10);
const CONCURRENT = 8;
const ISSUES = 200;
const EMPTY_COMPANIES = Number(process.env.LIVENESS_BENCH_EMPTY_COMPANIES ?? 300);

/**
 * The issue-graph liveness recovery routes (instance admin, served by the work plugin once per
 * company), in one run: preview and run on an instance whose one company has no issues, then
 * with a second company of 200 issues where every live issue is blocked by the next one (about
 * 50 findings of an unassigned blocker), then with 300 more companies that have no issues (an
 * instance that black-box runs filled with companies); each one call at a time and 8 at once.
 * The first run of the large company creates its escalations; the figures are of the runs
 * after it, which find them (a run's steady state).
 */
export async function run(): Promise<void> {
  const kernel = await startKernelProcess({}, ['test/bench/support/bench-kernel-main.ts']);
  try {
    await kernel.call('POST', '/api/companies', { name: 'Liveness Empty' });
    const rows = [await measure(kernel, 'one empty company')];
    const large = await kernel.call('POST', '/api/companies', { name: 'Liveness Large' });
    await seedBlocked(kernel, large);
    const first = await timed(() => kernel.call('POST', `${BASE}/run`, {}));
    rows.push(await measure(kernel, `+ one of ${ISSUES} issues (${first.value.counts.findings} findings)`));
    // Straight into the table: the empty companies need no agents or settings, only to be there.
    await (await kernel.sql()).query(`insert into companies (name, issue_prefix, status) select 'Empty ' || i, 'EMP' || i, 'active' from generate_series(1, $1::int) as i`, [EMPTY_COMPANIES]);
    rows.push(await measure(kernel, `+ ${EMPTY_COMPANIES} empty companies`));
    printTable(`issue-graph liveness recovery; first run of the large company (creating its escalations): ${Math.round(first.ms)} ms`, rows);
  } finally {
    await kernel.stop();
  }
}

async function measure(kernel: KernelProcess, label: string): Promise<Record<string, string | number>> {
  const row: Record<string, string | number> = { companies: label };
  for (const action of ['preview', 'run'] as const) {
    await kernel.call('POST', `${BASE}/${action}`, {});
    const one: number[] = [];
    for (let i = 0; i < SEQUENTIAL; i++) one.push((await timed(() => kernel.call('POST', `${BASE}/${action}`, {}))).ms);
    const started = performance.now();
    const each = await Promise.all(Array.from({ length: CONCURRENT }, () => timed(() => kernel.call('POST', `${BASE}/${action}`, {}))));
    const wall = performance.now() - started;
    row[`${action} p50 ms`] = pct(one, 50);
    row[`${action} x${CONCURRENT} wall ms`] = Math.round(wall);
    row[`${action} x${CONCURRENT} slowest ms`] = Math.round(Math.max(...each.map((e) => e.ms)));
  }
  return row;
}

/** Issues 1..200 (statuses cycling, nobody assigned), each blocked by the next. */
async function seedBlocked(kernel: KernelProcess, company: { id: string; issuePrefix: string }): Promise<void> {
  const sql = await kernel.sql();
  await seedIssues(sql, company, ISSUES);
  await sql.query(
    `insert into plugin_work.issue_blockers (company_id, issue_id, blocker_id)
     select $1::uuid, i.id, b.id from plugin_work.issues i join plugin_work.issues b on b.company_id = i.company_id and b.issue_number = i.issue_number + 1
      where i.company_id = $1::uuid`, [company.id]);
}

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await fn();
  return { ms: performance.now() - started, value };
}

function pct(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! * 10) / 10;
}
