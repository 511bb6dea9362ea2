import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { startKernelProcess, type KernelProcess } from './support/kernel-process.ts';
import { printTable } from './support/load.ts';
import { seedIssues } from './support/seed-issues.ts';

const COST_EVENTS = Number(process.env.BACKUP_BENCH_COST_EVENTS ?? 100_000);
const ISSUES = Number(process.env.BACKUP_BENCH_ISSUES ?? 10_000);
const run$ = promisify(execFile);

/**
 * Database backup and restore of an instance with 10^5 cost events and 10^4 issues (with a
 * blocker on every tenth issue), on the embedded PostgreSQL: the time of
 * POST /api/instance/database-backups and the size of its file, then the time of
 * `npm run db:restore` into an empty database of the same server (the command's whole run:
 * process start, the kernel's and plugins' migrations, the copy), with the row counts compared.
 */
export async function run(): Promise<void> {
  const kernel = await startKernelProcess();
  const restoredDir = await mkdtemp(join(tmpdir(), 'keel-bench-restore-'));
  let admin: pg.Client | undefined;
  try {
    const company = await kernel.call('POST', '/api/companies', { name: 'Backup Bench' });
    const agents: string[] = [];
    for (let i = 0; i < 5; i++) {
      const created = await kernel.call('POST', `/api/companies/${company.id}/agents`, { name: `Bench ${i}`, role: 'engineer' });
      agents.push((created.agent ?? created).id);
    }
    await seed(kernel, company, agents);
    const backup = await kernel.call('POST', '/api/instance/database-backups');

    admin = new pg.Client({ connectionString: await kernel.databaseUrl() });
    await admin.connect();
    await admin.query('drop database if exists keel_bench_restore');
    await admin.query('create database keel_bench_restore');
    const restoredUrl = (await kernel.databaseUrl()).replace(/\/keel$/, '/keel_bench_restore');
    for (const file of ['agent-jwt.secret', 'secrets-master.keys']) await copyFile(join(kernel.dataDir, file), join(restoredDir, file));
    const started = performance.now();
    await run$(process.execPath, ['--no-node-snapshot', 'kernel/tools/db-restore.ts', backup.file, '--data-dir', restoredDir], { env: { ...process.env, DATABASE_URL: restoredUrl }, maxBuffer: 16 * 1024 * 1024 });
    const restoreMs = performance.now() - started;

    const restored = new pg.Client({ connectionString: restoredUrl });
    await restored.connect();
    const count = async (c: pg.Client, table: string) => Number((await c.query(`select count(*)::int as n from ${table}`)).rows[0].n);
    const same = await count(admin, 'plugin_costs.cost_events') === await count(restored, 'plugin_costs.cost_events')
      && await count(admin, 'plugin_work.issues') === await count(restored, 'plugin_work.issues');
    await restored.end();
    await admin.query('drop database if exists keel_bench_restore with (force)');
    printTable('database backup and restore (embedded PostgreSQL)', [{
      'cost events': COST_EVENTS.toLocaleString('en'),
      issues: ISSUES.toLocaleString('en'),
      'backup s': (backup.durationMs / 1000).toFixed(2),
      'file MiB': (backup.sizeBytes / 1048576).toFixed(2),
      'restore s (command)': (restoreMs / 1000).toFixed(2),
      'rows equal': String(same),
    }]);
  } finally {
    await admin?.end().catch(() => undefined);
    await kernel.stop();
    await rm(restoredDir, { recursive: true, force: true });
  }
}

/** Rows added straight into the plugins' tables, as the costs and work benches seed them. */
async function seed(kernel: KernelProcess, company: { id: string; issuePrefix: string }, agents: string[]): Promise<void> {
  const sql = await kernel.sql();
  await sql.query(
    `insert into plugin_costs.cost_events (id, company_id, agent_id, provider, biller, model, billing_type, cost_cents, input_tokens, cached_input_tokens, output_tokens, occurred_at)
     select gen_random_uuid(), $1::uuid, ($2::uuid[])[1 + (i % $3::int)], 'alpha', 'alpha', 'large', 'metered_api',
            1 + (i % 20), 1200, 0, 300, now() - random() * interval '30 days'
       from generate_series(1, $4::int) as i`, [company.id, agents, agents.length, COST_EVENTS]);
  await seedIssues(sql, company, ISSUES);
  await sql.query(
    `insert into plugin_work.issue_blockers (company_id, issue_id, blocker_id)
     select $1::uuid, a.id, b.id from plugin_work.issues a join plugin_work.issues b on b.company_id = a.company_id and b.issue_number = a.issue_number - 1
      where a.company_id = $1 and a.issue_number % 10 = 0`, [company.id]);
  await sql.query('checkpoint');
}
