import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../../support/harness.ts';
import { expectKernelAlive, installAndEnable, variant } from './support.ts';

/** SANDBOX.md class 5: SQL escape from the plugin's namespace. */
let t: TestKernel;
let companyA: any;
let companyB: any;
const P = '/api/plugins/attack-sql';
const RO = '/api/plugins/attack-sql-ro';

beforeAll(async () => {
  t = await startTestKernel();
  companyA = await createCompany(t.api);
  companyB = await createCompany(t.api);
  await installAndEnable(t, 'attack-sql-victim');
  await installAndEnable(t, 'attack-sql');
  await installAndEnable(t, 'attack-sql-ro');
});
afterAll(async () => { await t?.stop(); });

/** Each statement in its own call, outside a transaction (a failed statement would abort a transactional call's commit). */
async function sql(statement: string, params?: unknown[], path = `${P}/sql-free`): Promise<{ rows?: any[]; error?: { code: string; status: number; message: string } }> {
  const res = await t.api.post(path, { sql: statement, params });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

async function refused(statement: string, codes: string[], path?: string): Promise<void> {
  const out = await sql(statement, [], path);
  expect(out.rows, `${statement} returned rows`).toBeUndefined();
  expect(codes, `${statement}: ${JSON.stringify(out.error)}`).toContain(out.error?.code);
}

const DENIED = ['sql_42501'];
const GUARD = ['sql_refused'];

describe('kernel data', () => {
  it('cannot read kernel tables, the bridge key or the vault', async () => {
    for (const table of ['public.companies', 'public.secrets', 'public.secret_versions', 'public.activity_log', 'public.agent_api_keys', 'keel_private.bridge_key']) {
      await refused(`select * from ${table}`, DENIED);
    }
    await refused('select * from companies', ['sql_42P01']);
    await refused('select * from pg_catalog.pg_authid', DENIED);
    await refused("select pg_read_file('/etc/passwd')", DENIED);
    await refused("select pg_ls_dir('.')", DENIED);
    await refused("select current_setting('data_directory')", DENIED);
    await expectKernelAlive(t);
  });

  it('cannot reach other plugins\' schemas', async () => {
    await refused('select * from plugin_attack_victim.treasure', DENIED);
    await refused("insert into plugin_attack_victim.treasure (v) values ('stolen')", DENIED);
    await refused('select * from plugin_attack_sql_ro.items', DENIED);
    await refused('select * from plugin_attack_sql.loot', DENIED, `${RO}/sql-free`);
    expect((await t.sql.query('select v from plugin_attack_victim.treasure')).rows).toEqual([{ v: 'gold' }]);
  });

  it('cannot take another plugin\'s namespace by declaring it (install refused, the schema keeps its owner and data)', async () => {
    const before = (await t.sql.query("select pg_get_userbyid(nspowner) as owner from pg_namespace where nspname = 'plugin_attack_victim'")).rows[0].owner;
    const squatter = await variant('attack-sql-ro', (m) => ({ ...m, key: 'attack-sql-squat', database: { namespace: 'attack_victim', migrations: 'migrations' } }));
    const res = await t.api.post('/api/plugins/install', { localPath: squatter });
    expect(res.status, res.text).toBe(409);
    expect(res.body).toMatchObject({ code: 'database_namespace_taken', details: { namespace: 'attack_victim', heldBy: 'attack-sql-victim' } });
    expect((await t.sql.query("select pg_get_userbyid(nspowner) as owner from pg_namespace where nspname = 'plugin_attack_victim'")).rows[0].owner).toBe(before);
    expect((await t.sql.query('select v from plugin_attack_victim.treasure')).rows).toEqual([{ v: 'gold' }]);
    expect((await t.sql.query("select 1 from plugins where key = 'attack-sql-squat'")).rows).toEqual([]);
  });
});

describe('identity and transaction', () => {
  it('cannot change who it is: SET ROLE, RESET ROLE, SET SESSION AUTHORIZATION, set_config', async () => {
    for (const statement of ['SET ROLE postgres', 'set role none', 'RESET ROLE', 'SET SESSION AUTHORIZATION postgres', 'reset session authorization',
      '/* comment */ SeT role postgres', '-- comment\nset role postgres', '  \n\tset local role postgres']) {
      await refused(statement, GUARD);
    }
    await refused("select set_config('role', 'postgres', false)", DENIED);
    await refused("select set_config('session_authorization', 'postgres', false)", DENIED);
    await refused("update pg_settings set setting = 'postgres' where name = 'role'", DENIED);
    const who = await sql('select current_user as c, session_user as s');
    expect(who.rows![0].c).toBe(who.rows![0].s);
    expect(who.rows![0].c).toMatch(/^keel_p[0-9a-f]{6}_attack_sql$/);
  });

  it('runs one statement per call: multi-statement strings are refused by the server', async () => {
    await refused('select 1; select * from public.companies', ['sql_42601']);
    await refused("select 1; commit; insert into loot (v) values ('escaped')", ['sql_42601']);
    await refused("select $1::text; insert into loot (v) values ('escaped')", ['sql_42601']);
    expect((await t.sql.query("select count(*)::int as n from plugin_attack_sql.loot where v = 'escaped'")).rows[0].n).toBe(0);
  });

  it('cannot end the host\'s transaction: COMMIT then a write, in every spelling, leaves nothing after a failure', async () => {
    for (const statement of ['commit', 'COMMIT', 'end', 'abort', 'rollback', 'begin', 'start transaction', 'savepoint s', 'release s',
      "prepare transaction 'x'", "commit prepared 'x'", '/* x */ commit', '-- x\ncommit', ';commit', '(commit)']) {
      await refused(statement, GUARD);
    }
    const res = await t.api.post(`${P}/sequence`, { statements: ["insert into loot (v) values ('in-tx')", 'commit', "insert into loot (v) values ('after-commit')"], fail: true });
    expect(res.status).toBe(409);
    expect((await t.sql.query("select v from plugin_attack_sql.loot where v in ('in-tx', 'after-commit')")).rows).toEqual([]);
  });

  it('cannot persist settings or alter its own role', async () => {
    await refused("select set_config('search_path', 'public, pg_catalog', false)", DENIED);
    await refused("select set_config('statement_timeout', '0', false)", DENIED);
    await refused("update pg_settings set setting = '0' where name = 'statement_timeout'", DENIED);
    for (const statement of ['alter role current_user set search_path = public', 'ALTER USER CURRENT_USER SET statement_timeout = 0',
      "alter role current_user password 'known'", 'alter role current_user connection limit 1000']) {
      await refused(statement, GUARD);
    }
    const settings = await sql("select current_setting('search_path') as path, current_setting('statement_timeout') as timeout, (select rolconfig from pg_roles where rolname = current_user) as config");
    expect(settings.rows![0]).toEqual({ path: 'plugin_attack_sql', timeout: '30s', config: ['search_path=plugin_attack_sql'] });
  });

  it('leaves no session state on pooled connections: temp tables, LISTEN, held cursors, prepared statements, advisory locks', async () => {
    await refused('create temp table t (a int)', [...GUARD, ...DENIED]);
    await refused('select 1 into temp table t2', DENIED);
    for (const statement of ['listen keel_auth', 'unlisten *', "notify keel_auth, '{}'", 'discard all', 'prepare p as select 1', 'execute keel_s0', 'deallocate all', "load 'plpgsql'", 'vacuum loot', 'checkpoint', 'lock table loot']) {
      await refused(statement, GUARD);
    }
    // Advisory locks share one space with the kernel's own keys (migrations, agent short names).
    for (const statement of ['select pg_advisory_lock(727001)', 'select pg_try_advisory_lock(1)', "select pg_advisory_xact_lock(hashtext('keel.agent_shortnames'), 1)", 'select pg_advisory_unlock_all()']) {
      await refused(statement, DENIED);
    }
    // The host prepares frequent statements itself (named keel_s*); nothing else may persist.
    // A cursor WITH HOLD would outlive the transaction on a pooled connection: cursors are refused.
    await refused('declare c cursor with hold for select 1', GUARD);
    for (let i = 0; i < 20; i++) {
      const left = await sql('select (select count(*) from pg_cursors where name = \'c\')::int as cursors, (select count(*) from pg_locks l join pg_stat_activity a on a.pid = l.pid where l.locktype = \'advisory\' and a.usename = current_user)::int as locks');
      expect(left.rows![0]).toEqual({ cursors: 0, locks: 0 });
    }
    // The statements the host keeps prepared are not the plugin's to list (their texts are other invocations').
    await refused('select name, statement from pg_prepared_statements', DENIED);
  });

  it('sees nothing of another company\'s invocation on a pooled connection: no statement texts, no sequence values', async () => {
    const secret = `company-a-only-${Date.now()}`;
    const insertedOn = new Set<number>();
    let sameConnection = 0;
    for (let i = 0; i < 10; i++) {
      // Company A: a statement with a value written into its text (prepared and kept by the host), and an insert.
      const a = await t.api.post(`${P}/companies/${companyA.id}/sql-free`, { sql: `select pg_backend_pid() as pid, count(*)::int as n from loot where v = '${secret}'` });
      expect(a.status, a.text).toBe(200);
      const inserted = await t.api.post(`${P}/companies/${companyA.id}/sql`, { sql: `insert into loot (v) values ('${secret}') returning id, pg_backend_pid() as pid` });
      expect(inserted.body.rows, inserted.text).toHaveLength(1);
      insertedOn.add(inserted.body.rows[0].pid);
      // Company B, next on the same pool: what does its session show of A's?
      const texts = await sql('select pg_backend_pid() as pid, (select string_agg(statement, \' | \') from pg_prepared_statements) as texts', [], `${P}/companies/${companyB.id}/sql-free`);
      expect(JSON.stringify(texts), 'statement texts of another invocation').not.toContain(secret);
      // Transactional calls give their connection back before they answer: B's next call gets A's.
      const again = await t.api.post(`${P}/companies/${companyA.id}/sql`, { sql: `insert into loot (v) values ('${secret}') returning pg_backend_pid() as pid` });
      const last = await t.api.post(`${P}/companies/${companyB.id}/sql`, { sql: 'select lastval() as last' });
      expect(last.body.rows, `lastval() answered ${JSON.stringify(last.body.rows)}, the id company A's invocation inserted`).toBeUndefined();
      const pid = (await t.api.post(`${P}/companies/${companyB.id}/sql`, { sql: 'select pg_backend_pid() as pid' })).body.rows[0].pid;
      if (pid === again.body.rows[0].pid) sameConnection++;
    }
    // B did run on the connections A had inserted on.
    expect(sameConnection).toBeGreaterThan(0);
    // The host's own named statements keep working on the same connections.
    for (let i = 0; i < 5; i++) expect((await sql('select count(*)::int as n from loot')).rows).toHaveLength(1);
  });

  it('cannot signal the kernel: pg_notify on its channels and terminating other sessions are refused', async () => {
    await refused("select pg_notify('keel_auth', '{\"type\":\"all\"}')", DENIED);
    await refused("select pg_notify('keel_plugins', 'attack-sql-victim')", DENIED);
    await refused('select pg_terminate_backend(pid) from pg_stat_activity where usename <> current_user', DENIED);
    await refused('select pg_cancel_backend(pid) from pg_stat_activity where usename <> current_user', DENIED);
    await expectKernelAlive(t);
  });
});

describe('code and files', () => {
  it('cannot create functions, triggers or extensions, run DO blocks, COPY ... PROGRAM or use large objects', async () => {
    for (const statement of [
      "create function f() returns int language sql security definer as 'select 1'",
      "create or replace function public.now() returns timestamptz language sql as 'select null::timestamptz'",
      'create trigger t after insert on loot execute function f()',
      'create extension dblink', 'create extension pgcrypto',
      'do $$ begin perform 1; end $$',
      "copy loot to program 'id'", "copy loot from '/etc/passwd'", "copy (select 1) to '/tmp/keel-attack'",
      'call f()',
    ]) {
      await refused(statement, [...GUARD, ...DENIED]);
    }
    for (const statement of ["select lo_import('/etc/passwd')", 'select lo_create(0)', "select lo_from_bytea(0, 'x'::bytea)", "select lo_export(1, '/tmp/x')"]) {
      await refused(statement, DENIED);
    }
    expect((await t.sql.query('select count(*)::int as n from pg_largeobject_metadata')).rows[0].n).toBe(0);
  });

  it('cannot smuggle refused statements through query_to_xml', async () => {
    for (const statement of ["select query_to_xml('set role postgres', true, false, '')", "select query_to_xml('commit', true, false, '')",
      "select query_to_xml('select * from public.companies', true, false, '')", "select query_to_xml('do $x$ begin end $x$', true, false, '')",
      "select query_to_xml('select pg_notify(''keel_auth'', ''x'')', true, false, '')", "select query_to_xml('select set_config(''search_path'', ''public'', false)', true, false, '')"]) {
      const out = await sql(statement);
      expect(out.error, statement).toBeDefined();
    }
  });
});

describe('read-only plugins', () => {
  it('cannot write anything while granted database.namespace.read only', async () => {
    const path = `${RO}/sql-free`;
    for (const statement of ["insert into items (v) values ('x')", "update items set v = 'y'", 'delete from items', 'truncate items',
      "select nextval('items_id_seq')", "select setval('items_id_seq', 100)", 'select * from items for update', 'select lo_create(0)']) {
      await refused(statement, DENIED, path);
    }
    const read = await sql('select id, v from items', [], path);
    expect(read.rows).toEqual([{ id: '1', v: 'first' }]);
    expect((await t.sql.query('select id, v from plugin_attack_sql_ro.items')).rows).toEqual([{ id: '1', v: 'first' }]);
  });
});

describe('the activity bridge', () => {
  it('refuses record_activity with a forged invocation or signature', async () => {
    const role = (await sql('select current_user as r')).rows![0].r;
    const claims = (companyId: string, forRole: string) => JSON.stringify({ plugin: 'attack-sql', role: forRole, invocationId: 'x', companyId, actorType: 'user', actorId: 'local-board', agentId: null, runId: null, exp: 4102444800 });
    const attempts = [
      [claims(companyB.id, role), '0'.repeat(64)],
      [claims(companyB.id, role), ''],
      [claims(companyA.id, 'keel_p000000_attack_sql_victim'), 'f'.repeat(64)],
    ];
    for (const [invocation, signature] of attempts) {
      const out = await sql("select keel_bridge.record_activity($1, $2, 'forged.action', 'company', 'x', '{}'::jsonb)", [invocation, signature]);
      expect(out.error?.code).toBe('sql_42501');
      expect(out.error?.message).toBe('invalid invocation signature');
    }
    expect((await t.sql.query("select count(*)::int as n from activity_log where action = 'forged.action'")).rows[0].n).toBe(0);
  });
});

describe('code and comments in the catalogs', () => {
  /** A copy of the victim fixture with one more migration, under a key and namespace of its own. */
  async function victimWith(suffix: string, sql: string, functions?: boolean): Promise<{ key: string; res: any }> {
    const key = `attack-sql-victim-${suffix}`;
    const folder = await variant('attack-sql-victim', (m) => ({ ...m, key, database: { ...m.database, namespace: `attack_victim_${suffix}`, ...(functions ? { functions: true } : {}) } }));
    await writeFile(join(folder, 'migrations', '0002-code.sql'), sql);
    const installed = await t.api.post('/api/plugins/install', { localPath: folder });
    expect(installed.status, installed.text).toBe(201);
    return { key, res: await t.api.post(`/api/plugins/${key}/enable`, {}) };
  }
  const seen = async (marker: string) => (await sql(`select (select count(*) from pg_proc where prosrc like '%${marker}%')::int as bodies, (select count(*) from pg_description where description like '%${marker}%')::int as comments`)).rows![0];

  it('a plugin\'s migrations may not create functions, procedures or comments, nor smuggle them through DO, unless declared', async () => {
    const attempts: Record<string, string> = {
      fn: "create function treasure_count() returns bigint language sql as $$ select count(*) /* fn-secret-body */ from treasure $$;",
      proc: "create or replace procedure refill() language sql as $body$ insert into treasure (v) values ('proc-secret-body') $body$;",
      comment: "comment on table treasure is 'comment-secret: the vault code is 0000';",
      tricky: "insert into treasure (v) values ('create function is only text here; comment on nothing');\n/* a comment; */ CrEaTe -- line\n  FUNCTION tricky() returns int language sql as 'select 1 /* tricky-secret-body */';",
      smuggled: "do $$ begin execute 'create function smuggled() returns int language sql as ''select 1 /* smuggled-secret-body */'''; end $$;",
    };
    for (const [suffix, migration] of Object.entries(attempts)) {
      const { key, res } = await victimWith(suffix, migration);
      expect(res.status, `${suffix}: ${res.text}`).toBe(422);
      expect(res.body.code).toBe('plugin_migration_refused');
      expect(res.body.error).toContain('database.functions');
      expect((await t.sql.query('select count(*)::int as n from plugin_migrations where plugin_key = $1', [key])).rows[0].n, suffix).toBe(0);
    }
    for (const marker of ['fn-secret-body', 'proc-secret-body', 'comment-secret', 'tricky-secret-body', 'smuggled-secret-body']) {
      expect(await seen(marker), marker).toEqual({ bodies: 0, comments: 0 });
    }
    // Text that only mentions them is fine.
    const { res } = await victimWith('text', "insert into treasure (v) values ('create function f() ...; comment on x is y; do $$ $$');");
    expect(res.status, res.text).toBe(200);
  });

  it('the database itself refuses functions and DO to a migrator whose plugin did not declare them', async () => {
    const migrator = (await t.sql.query("select rolname from pg_roles where rolname like 'keel\\_m%\\_attack\\_sql\\_victim\\_fn'")).rows[0]?.rolname as string;
    expect(migrator).toBeTruthy();
    const client = await t.sql.connect();
    try {
      for (const statement of ["create function plugin_attack_victim_fn.f() returns int language sql as 'select 1'",
        "create function plugin_attack_victim_fn.g() returns int language plpgsql as 'begin return 1; end'", 'do $$ begin end $$']) {
        await client.query('begin');
        await client.query(`set local role ${migrator}`);
        const error = await client.query(statement).then(() => null, (e: { code: string }) => e.code);
        await client.query('rollback');
        expect(error, statement).toBe('42501');
      }
    } finally { client.release(); }
  });

  it('a plugin that declares database.functions may create them, and then their source is visible to every plugin (documented)', async () => {
    const { res } = await victimWith('declared', "create function treasure_total() returns bigint language sql as $$ select count(*) /* declared-visible-body */ from treasure $$;\ncomment on function treasure_total() is 'declared-visible-comment';", true);
    expect(res.status, res.text).toBe(200);
    expect(await seen('declared-visible')).toEqual({ bodies: 1, comments: 1 });
  });
});

describe('what the catalogs show', () => {
  it('reveals names (documented in docs/plugins/security.md) but no rows, no other session\'s queries and no server paths', async () => {
    // Names are visible to every role of the database: tables, roles, schemas.
    expect((await sql("select count(*)::int as n from pg_class where relname = 'secrets'")).rows![0].n).toBe(1);
    expect((await sql("select count(*)::int as n from pg_namespace where nspname = 'plugin_attack_victim'")).rows![0].n).toBe(1);
    // Other sessions' statements are hidden.
    const activity = await sql("select distinct query from pg_stat_activity where usename is distinct from current_user and backend_type = 'client backend'");
    for (const row of activity.rows!) expect(row.query).toBe('<insufficient privilege>');
    // Column statistics (pg_stats) are filtered to tables the role may read.
    expect((await sql("select count(*)::int as n from pg_stats where schemaname = 'public'")).rows![0].n).toBe(0);
    await refused('select * from pg_statistic', DENIED);
  });
});
