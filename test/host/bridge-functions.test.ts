import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bridgeSources, installBridgeFunctions, type BridgeSource } from '../../kernel/db/bridge-functions.ts';
import { Database } from '../../kernel/db/database.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';

/**
 * The keel_bridge functions of the capability folders (kernel/host/capabilities/<capability>/
 * bridge.sql) are installed by the migration runner, under its lock, whenever their text
 * changed: each stays SECURITY DEFINER with a pinned search_path and no EXECUTE for PUBLIC, a
 * file that would make one otherwise is refused and rolled back, and kernels starting at once
 * each come up with the file installed once.
 */
let t: TestKernel;
beforeAll(async () => { t = await startTestKernel(); });
afterAll(() => t?.stop());

function source(name: string, sql: string, functions: string[]): BridgeSource {
  return { source: name, sql, sha256: `test-${name}`, functions };
}

async function withClient<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: t.databaseUrl });
  await client.connect();
  try { return await fn(client); } finally { await client.end(); }
}

describe('capability bridge functions', () => {
  it('every folder bridge.sql is recorded as installed with its current text, and its functions are safe', async () => {
    const sources = await bridgeSources();
    expect(sources.map((entry) => entry.source)).toEqual(expect.arrayContaining(['agents-pause/bridge.sql', 'events-publish/bridge.sql', 'jobs-enqueue/bridge.sql']));
    const recorded = await t.sql.query<{ source: string; sha256: string }>('select source, sha256 from kernel_bridge_sources order by source');
    expect(recorded.rows).toEqual(sources.map((entry) => ({ source: entry.source, sha256: entry.sha256 })).sort((a, b) => a.source.localeCompare(b.source)));
    const functions = await t.sql.query<{ name: string; definer: boolean; config: string[] | null; public_execute: boolean }>(
      `select p.proname as name, p.prosecdef as definer, p.proconfig as config, has_function_privilege('public', p.oid, 'execute') as public_execute
         from pg_proc p join pg_namespace n on n.oid = p.pronamespace
        where n.nspname = 'keel_bridge' and p.proname = any ($1::text[])`, [sources.flatMap((entry) => entry.functions)]);
    expect(new Set(functions.rows.map((row) => row.name))).toEqual(new Set(sources.flatMap((entry) => entry.functions)));
    for (const row of functions.rows) {
      expect(row, row.name).toMatchObject({ definer: true, public_execute: false });
      expect(row.config, row.name).toContain('search_path=public, pg_temp');
    }
  });

  it('refuses a bridge function that is not SECURITY DEFINER, or is executable by PUBLIC, and installs nothing of that file', async () => {
    const invoker = source('probe-invoker/bridge.sql', `
      create or replace function keel_bridge.probe_invoker() returns integer language sql set search_path = public, pg_temp as $$ select 1 $$;
      revoke all on function keel_bridge.probe_invoker() from public;`, ['probe_invoker']);
    const open = source('probe-public/bridge.sql', `
      create or replace function keel_bridge.probe_public() returns integer language sql security definer set search_path = public, pg_temp as $$ select 1 $$;`, ['probe_public']);
    const unpinned = source('probe-path/bridge.sql', `
      create or replace function keel_bridge.probe_path() returns integer language sql security definer as $$ select 1 $$;
      revoke all on function keel_bridge.probe_path() from public;`, ['probe_path']);
    await withClient(async (client) => {
      await expect(installBridgeFunctions(client, [invoker])).rejects.toThrow(/probe_invoker\(\) must be SECURITY DEFINER/);
      await expect(installBridgeFunctions(client, [open])).rejects.toThrow(/probe_public\(\) must be SECURITY DEFINER/);
      await expect(installBridgeFunctions(client, [unpinned])).rejects.toThrow(/probe_path\(\) must be SECURITY DEFINER/);
    });
    const left = await t.sql.query(`select proname from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'keel_bridge' and proname like 'probe_%'`);
    expect(left.rows).toEqual([]);
    const recorded = await t.sql.query(`select source from kernel_bridge_sources where source like 'probe-%'`);
    expect(recorded.rows).toEqual([]);
  });

  it('a changed file is installed again by the next migration run, once, when kernels start at once', async () => {
    // A stale record stands for a bridge.sql edited since it was installed; the function is dropped to see it come back.
    await t.sql.query(`update kernel_bridge_sources set sha256 = 'stale' where source = 'runs-open/bridge.sql'`);
    await t.sql.query('drop function keel_bridge.confirm_opened_runs(text, text)');
    const processes = await Promise.all([0, 1].map(() => Database.connect(t.databaseUrl, { poolSize: 2 })));
    try {
      await Promise.all(processes.map((db) => db.migrate()));
    } finally {
      await Promise.all(processes.map((db) => db.close()));
    }
    const [runsOpen] = (await bridgeSources()).filter((entry) => entry.source === 'runs-open/bridge.sql');
    const recorded = await t.sql.query('select sha256 from kernel_bridge_sources where source = $1', ['runs-open/bridge.sql']);
    expect(recorded.rows).toEqual([{ sha256: runsOpen!.sha256 }]);
    const restored = await t.sql.query(`select p.prosecdef as definer from pg_proc p where p.oid = to_regprocedure('keel_bridge.confirm_opened_runs(text, text)')`);
    expect(restored.rows).toEqual([{ definer: true }]);
  });

  it('a function of a folder changed by anything else (a migration) is put back to the folder text at the next start', async () => {
    await t.sql.query(`create or replace function keel_bridge.hold_company(invocation text, signature text, held boolean, reason text)
      returns jsonb language sql security definer set search_path = public, pg_temp as $$ select jsonb_build_object('found', false) $$`);
    const db = await Database.connect(t.databaseUrl, { poolSize: 2 });
    try { await db.migrate(); } finally { await db.close(); }
    const { rows } = await t.sql.query<{ body: string }>(`select prosrc as body from pg_proc where oid = to_regprocedure('keel_bridge.hold_company(text, text, boolean, text)')`);
    expect(rows[0]!.body).toContain('keel_private.plugin_hold');
  });

  it('no migration after the folders took them over defines a function a folder defines: its folder bridge.sql is the place', async () => {
    // The definitions these migrations made are history (a database migrating from scratch runs
    // them); the folder's text replaces them after the migrations. A change goes in the folder.
    const history = new Set(['0009-budget-bridge.sql', '0014-event-outbox.sql', '0018-staged-jobs.sql', '0020-scope-holds.sql', '0021-issue-numbers.sql',
      '0026-run-confirmations.sql', '0029-issue-number-ranges.sql', '0033-event-publish-scope.sql', '0042-events-published-at-commit.sql']);
    const owned = (await bridgeSources()).flatMap((entry) => entry.functions);
    const folder = new URL('../../kernel/db/migrations/', import.meta.url);
    const redefining = readdirSync(folder).filter((file) => file.endsWith('.sql') && !history.has(file)).flatMap((file) => {
      const sql = readFileSync(new URL(file, folder), 'utf8').toLowerCase();
      return owned.filter((name) => new RegExp(`function\\s+keel_bridge\\.${name}\\s*\\(`).test(sql)).map((name) => `${file}: keel_bridge.${name}`);
    });
    expect(redefining).toEqual([]);
  });
});
