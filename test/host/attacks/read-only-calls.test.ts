import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../../support/harness.ts';
import { installAndEnable } from './support.ts';

/**
 * SANDBOX.md class 5 (session state on pooled connections) and 6 (one call's state in
 * another's), for calls that run without a transaction of their own: a read-only call runs
 * each statement on a pooled connection, in a READ ONLY transaction opened and ended around
 * that statement alone, with the session reset queued behind it. The fixture declares
 * database.functions, so its functions can SET what the SQL guard refuses to it directly.
 */
let t: TestKernel;
let companyA: any;
let companyB: any;
const P = '/api/plugins/attack-ro-session';

interface Outcome { rows?: any[]; error?: { code: string; message: string } }

beforeAll(async () => {
  t = await startTestKernel();
  companyA = await createCompany(t.api);
  companyB = await createCompany(t.api);
  await installAndEnable(t, 'attack-ro-session');
});
afterAll(async () => { await t?.stop(); });

async function run(company: { id: string }, how: 'read' | 'free' | 'write', statements: string[]): Promise<Outcome[]> {
  const res = await t.api.post(`${P}/companies/${company.id}/${how}`, { statements });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

const notes = async () => (await t.sql.query('select count(*)::int as n from plugin_attack_ro_session.notes')).rows[0].n as number;

describe('a read-only call without a transaction of its own', () => {
  it('runs every statement read-only, in a transaction of that statement alone', async () => {
    const statement = "select current_setting('transaction_read_only') as ro, transaction_timestamp()::text as began";
    const [first, second] = await run(companyA, 'read', [statement, statement]);
    expect(first!.rows).toEqual([{ ro: 'on', began: expect.any(String) }]);
    expect(second!.rows).toEqual([{ ro: 'on', began: expect.any(String) }]);
    // A transaction for the whole call would have begun once.
    expect(second!.rows![0].began).not.toBe(first!.rows![0].began);
  });

  it('cannot write: not directly, not after making its session writable, not by turning its transaction read-write', async () => {
    const before = await notes();
    const outcomes = await run(companyA, 'read', [
      "insert into notes (company_id, body) values ('00000000-0000-0000-0000-000000000000', 'direct')",
      'select allow_writes() as allowed',
      "insert into notes (company_id, body) values ('00000000-0000-0000-0000-000000000000', 'after allow_writes')",
      "select write_anyway('flipped') as id",
    ]);
    expect(outcomes[0]!.error?.code, JSON.stringify(outcomes)).toBe('sql_25006');
    // The function ran (SET is allowed in a read-only transaction): what it set must not reach the next statement.
    expect(outcomes[1]!.rows, JSON.stringify(outcomes)).toEqual([{ allowed: 'off' }]);
    expect(outcomes[2]!.error?.code, JSON.stringify(outcomes)).toBe('sql_25006');
    expect(outcomes[3]!.error?.code, JSON.stringify(outcomes)).toMatch(/^sql_(25006|25001)$/);
    // And not in a later read-only call either, on whichever connection it gets.
    for (let i = 0; i < 5; i++) {
      const [later] = await run(companyB, 'read', ["insert into notes (company_id, body) values ('00000000-0000-0000-0000-000000000000', 'later')"]);
      expect(later!.error?.code).toBe('sql_25006');
    }
    expect(await notes()).toBe(before);
  });
});

describe('a read-only tool', () => {
  it('runs as a read-only route does: each statement READ ONLY, no write, no activity entry', async () => {
    const before = await notes();
    const entries = async () => (await t.sql.query("select count(*)::int as n from activity_log where action like 'plugin.attack-ro-session.tool.%'")).rows[0].n as number;
    const statement = "select current_setting('transaction_read_only') as ro, transaction_timestamp()::text as began";
    const res = await t.api.post('/api/plugins/tools/execute', { tool: 'attack-ro-session.statements', companyId: companyA.id, input: {
      statements: [statement, statement, "insert into notes (company_id, body) values ('00000000-0000-0000-0000-000000000000', 'from a tool')"],
    } });
    expect(res.status, res.text).toBe(200);
    const [first, second, write] = res.body.result as Outcome[];
    expect(first!.rows![0].ro).toBe('on');
    expect(second!.rows![0].began).not.toBe(first!.rows![0].began);
    expect(write!.error?.code).toBe('sql_25006');
    expect(await notes()).toBe(before);
    expect(await entries()).toBe(0);
  });
});

describe('no call sees another call\'s session state', () => {
  /** Company A leaves settings on its connection; company B's next call, on the same pool, reads them. */
  async function leaveThenLook(leaveHow: 'read' | 'free' | 'write', lookHow: 'read' | 'free' | 'write'): Promise<number> {
    let sameConnection = 0;
    for (let i = 0; i < 10; i++) {
      const secret = `company-a-${leaveHow}-${i}`;
      const [left] = await run(companyA, leaveHow, [
        `select leave_setting('keel_probe.company', '${secret}') as company, leave_setting('statement_timeout', '0') as timeout, leave_setting('search_path', 'pg_catalog') as path, pg_backend_pid() as pid`,
      ]);
      // The settings were made: the attack is real.
      expect(left!.rows, JSON.stringify(left)).toEqual([{ company: secret, timeout: '0', path: 'pg_catalog', pid: expect.any(Number) }]);
      // Three looks at once: the host may still hold a second connection for its own writes
      // when the answer arrives, and give it back after the first, so one look alone could
      // take that one every time; three take the pool's three most recently returned.
      const looks = await Promise.all([0, 1, 2].map(() => run(companyB, lookHow, [
        "select current_setting('keel_probe.company', true) as company, current_setting('statement_timeout') as timeout, current_setting('search_path') as path, pg_backend_pid() as pid",
      ])));
      const rows = looks.map(([seen]) => seen!.rows![0]);
      for (const row of rows) {
        expect(row.company || null, `${leaveHow} -> ${lookHow}: ${JSON.stringify(row)}`).toBeNull();
        expect({ timeout: row.timeout, path: row.path }).toEqual({ timeout: '30s', path: 'plugin_attack_ro_session' });
      }
      if (rows.some((row) => row.pid === left!.rows![0].pid)) sameConnection++;
    }
    return sameConnection;
  }

  it('a read-only call leaves nothing for the next read-only call (of another company) on its connection', async () => {
    // The next call did get the connection the settings were left on (else this would prove nothing).
    expect(await leaveThenLook('read', 'read')).toBeGreaterThan(0);
  });

  it('nor for the next call of any other kind, nor does any other kind leave anything for a read-only call', async () => {
    expect(await leaveThenLook('read', 'write')).toBeGreaterThan(0);
    expect(await leaveThenLook('free', 'read')).toBeGreaterThan(0);
    expect(await leaveThenLook('write', 'read')).toBeGreaterThan(0);
  });

  it('not even the settings of its own earlier statement, with calls of two companies running at once', async () => {
    const calls = Array.from({ length: 24 }, (_, i) => run(i % 2 ? companyA : companyB, 'read', [
      `select leave_setting('keel_probe.company', 'call-${i}') as company`,
      "select current_setting('keel_probe.company', true) as company",
    ]));
    for (const [left, seen] of await Promise.all(calls)) {
      expect(left!.rows![0].company).toMatch(/^call-\d+$/);
      expect(seen!.rows![0].company || null, JSON.stringify(seen)).toBeNull();
    }
  });

  it('serves the company the kernel resolved: a read-only route reads the rows of the call\'s company only', async () => {
    await run(companyA, 'write', [`insert into notes (company_id, body) values ('${companyA.id}', 'a-note')`]);
    await run(companyB, 'write', [`insert into notes (company_id, body) values ('${companyB.id}', 'b-note')`]);
    const a = await t.api.get(`${P}/companies/${companyA.id}/notes`);
    const b = await t.api.get(`${P}/companies/${companyB.id}/notes`);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body).toEqual([{ body: 'a-note' }]);
    expect(b.body).toEqual([{ body: 'b-note' }]);
  });
});
