import { startKernelProcess } from './support/kernel-process.ts';
import { printTable } from './support/load.ts';
import { seedIssues } from './support/seed-issues.ts';

const ISSUES = Number(process.env.PORTABILITY_BENCH_ISSUES ?? 10_000);

/**
 * Company portability at size: a company of 10^4 issues (with descriptions, every tenth a
 * child of the one before) exported as a package (`POST /api/companies/{id}/exports`) and the
 * package imported into a new company (`POST /api/companies/import`), each timed end to end
 * over HTTP, with the package's size and the issues the new company holds afterwards.
 */
export async function run(): Promise<void> {
  const kernel = await startKernelProcess({}, ['test/bench/support/bench-kernel-main.ts']);
  try {
    const company = await kernel.call('POST', '/api/companies', { name: 'Portable Bench' });
    const sql = await kernel.sql();
    await seedIssues(sql, company, ISSUES);
    await sql.query(
      `update plugin_work.issues a set parent_id = b.id from plugin_work.issues b
        where a.company_id = $1 and b.company_id = $1 and b.issue_number = a.issue_number - 1 and a.issue_number % 10 = 0`, [company.id]);

    const exportStarted = performance.now();
    const res = await fetch(`${kernel.url}/api/companies/${company.id}/exports`, { method: 'POST' });
    const text = await res.text();
    const exportMs = performance.now() - exportStarted;
    if (res.status !== 200) throw new Error(`export answered ${res.status}: ${text.slice(0, 500)}`);
    const pkg = JSON.parse(text);

    const importStarted = performance.now();
    const imported = await kernel.call('POST', '/api/companies/import', { package: pkg, target: { mode: 'new_company', name: 'Portable Bench copy' } });
    const importMs = performance.now() - importStarted;
    const { rows } = await sql.query(
      'select count(*)::int as issues, count(parent_id)::int as children, count(distinct issue_number)::int as numbers from plugin_work.issues where company_id = $1', [imported.companyId]);

    printTable(`company package of ${ISSUES.toLocaleString('en')} issues (descriptions as package files)`, [
      { measure: 'export: POST /api/companies/{id}/exports', value: `${(exportMs / 1000).toFixed(2)} s, ${(text.length / 1024 / 1024).toFixed(1)} MiB` },
      { measure: 'import into a new company: POST /api/companies/import', value: `${(importMs / 1000).toFixed(2)} s` },
      { measure: 'issues imported (with parents; distinct numbers)', value: `${rows[0].issues} (${rows[0].children}; ${rows[0].numbers})` },
    ]);
  } finally {
    await kernel.stop();
  }
}
