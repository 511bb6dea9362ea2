import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database, prepared } from '../../kernel/db/database.ts';
import { JobEngineDatabase } from '../../kernel/db/job-engine-database.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';

/**
 * Statements of hot paths are prepared once per connection and then only bound and executed
 * (kernel/db/database.ts `prepared`, and the job engine's parameterized statements): their
 * values travel apart from the text, and PostgreSQL plans them once instead of on every call.
 * Each Database below has one connection, so what its session has prepared is what the pool did.
 */
let t: TestKernel;
beforeAll(async () => { t = await startTestKernel(); });
afterAll(() => t?.stop());

const SQUARE = prepared('test_square', 'select $1::int * $1::int as n, $2::text as label');
const PREPARED_HERE = prepared('test_prepared_here', `select name, (generic_plans + custom_plans)::int as plans from pg_prepared_statements where name like 'keel_test_%' order by name`);

describe('prepared statements of the kernel', () => {
  it('are parsed once per connection and run with their values apart from the text', async () => {
    const db = await Database.connect(t.databaseUrl, { poolSize: 1 });
    try {
      for (const n of [2, 3, 4, 5, 6, 7, 8]) expect(await db.maybeOne(SQUARE, [n, `it's ${n}`])).toEqual({ n: n * n, label: `it's ${n}` });
      // A value is never SQL: quotes and semicolons come back as they went in.
      expect(await db.maybeOne(SQUARE, [1, "'); drop table companies; --"])).toEqual({ n: 1, label: "'); drop table companies; --" });
      expect(await db.query(PREPARED_HERE)).toEqual([{ name: 'keel_test_prepared_here', plans: 1 }, { name: 'keel_test_square', plans: 8 }]);
      expect(await db.exec(prepared('test_exec', 'update companies set name = name where id = $1::uuid'), ['00000000-0000-0000-0000-000000000000'])).toBe(0);
    } finally {
      await db.close();
    }
  });

  it('refuses two declarations under one name', () => {
    expect(() => prepared('test_square', 'select 1')).toThrow('prepared statement test_square is declared twice');
  });

  it("reports a statement's error as a failed query, and the same connection serves the next one", async () => {
    const db = await Database.connect(t.databaseUrl, { poolSize: 1 });
    try {
      const backend = await db.maybeOne<{ pid: number }>('select pg_backend_pid() as pid');
      await expect(db.query(SQUARE, ['not a number', 'x'])).rejects.toThrow(/invalid input syntax for type integer/);
      await expect(db.query(prepared('test_broken', 'select from no_such_table where x = $1'), [1])).rejects.toThrow(/no_such_table/);
      await expect(db.query('select * from companies where id = ?', ['not-a-uuid'])).rejects.toThrow(/invalid input syntax for type uuid/);
      await expect(db.transaction((tx) => tx.query('insert into no_such_table values (1)'))).rejects.toThrow(/no_such_table/);
      expect(await db.maybeOne(SQUARE, [9, 'after'])).toEqual({ n: 81, label: 'after' });
      // Failed statements (a 4xx's malformed id, a unique violation) cost no new connection and no new preparing.
      expect(await db.maybeOne('select pg_backend_pid() as pid')).toEqual(backend);
    } finally {
      await db.close();
    }
  });
});

describe("the job engine's statements", () => {
  it('with values are prepared once per connection; without values they run as sent, several statements at once', async () => {
    const engine = new JobEngineDatabase(t.databaseUrl, { max: 1, applicationName: 'prepared-test', log: pino({ level: 'silent' }) });
    await engine.open();
    try {
      for (const n of [1, 2, 3]) expect((await engine.executeSql('select $1::int + 1 as n', [n])).rows).toEqual([{ n: n + 1 }]);
      const multi = await engine.executeSql('select 1 as a; select 2 as b') as unknown as Array<{ rows: unknown[] }>;
      expect(multi.map((result) => result.rows)).toEqual([[{ a: 1 }], [{ b: 2 }]]);
      const here = await engine.executeSql(`select count(*)::int as statements, sum(generic_plans + custom_plans)::int as plans from pg_prepared_statements where name like 'keel_jobs_%' and statement like $1`, ['select $1::int + 1%']);
      expect(here.rows).toEqual([{ statements: 1, plans: 3 }]);
    } finally {
      await engine.close();
    }
  });
});
