import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';

const ECHO = fileURLToPath(new URL('./fixtures/echo', import.meta.url));
let t: TestKernel;
let company: any;

beforeAll(async () => {
  t = await startTestKernel();
  company = await createCompany(t.api);
  await installAndEnable(t, ECHO);
});
afterAll(async () => { await t?.stop(); });

describe('plugin routes', () => {
  it('echoes through the isolate', async () => {
    const res = await t.api.post('/api/plugins/echo/echo?x=1', { hello: 'world' });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ body: { hello: 'world' }, query: { x: '1' } });
  });

  it('writes and reads its own table, with activity in the same transaction', async () => {
    const created = await t.api.post(`/api/plugins/echo/companies/${company.id}/notes`, { text: 'first' });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toEqual({ id: 1, text: 'first' });
    const list = await t.api.get(`/api/plugins/echo/companies/${company.id}/notes`);
    expect(list.body).toEqual([{ id: '1', text: 'first' }]);
    const activity = await t.sql.query("select action, actor_id, details from activity_log where company_id = $1 and action like 'echo.%'", [company.id]);
    expect(activity.rows).toEqual([{ action: 'echo.note_created', actor_id: 'local-board', details: { length: 5, plugin: 'echo' } }]);
  });

  it('validates bodies before the isolate runs', async () => {
    const res = await t.api.post(`/api/plugins/echo/companies/${company.id}/notes`, { text: '' });
    expect(res.status).toBe(400);
  });

  it('rolls back a failed handler completely', async () => {
    const before = (await t.sql.query('select count(*)::int as n from plugin_echo.notes')).rows[0].n;
    const res = await t.api.post(`/api/plugins/echo/companies/${company.id}/fail`, {});
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'deliberate_failure' });
    expect((await t.sql.query('select count(*)::int as n from plugin_echo.notes')).rows[0].n).toBe(before);
  });

  it("answers a plugin's validation issues at the top level of the error body, and drops a list that is not one", async () => {
    const issues = [{ path: 'name', message: 'is required' }, { path: ['rules', 0, 'id'], message: 'must be unique', code: 'duplicate' }];
    const res = await t.api.post('/api/plugins/echo/refuse', { issues });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ error: 'Invalid echo', code: 'echo_invalid', details: { note: 'details stay' }, issues });
    for (const bad of [[{ path: 'name' }], [{ path: { nested: true }, message: 'x' }], 'not a list', [null]]) {
      const refused = await t.api.post('/api/plugins/echo/refuse', { issues: bad });
      expect(refused.status).toBe(422);
      expect(refused.body, JSON.stringify(bad)).toEqual({ error: 'Invalid echo', code: 'echo_invalid', details: { note: 'details stay' } });
    }
  });

  it('answers a database error the plugin does not catch with its code, and the database text only in the plugin logs', async () => {
    const cases: Array<[string, unknown[], number, string, RegExp]> = [
      ['select $1::uuid', ['not-a-uuid'], 400, 'sql_22P02', /invalid input syntax for type uuid/],
      ['select * from no_such_table', [], 400, 'sql_42P01', /relation "no_such_table" does not exist/],
      ['select * from public.companies', [], 403, 'sql_42501', /permission denied/],
      ['insert into notes (company_id, text) values ($1, null)', [company.id], 400, 'sql_23502', /violates not-null constraint/],
    ];
    for (const [sql, params, status, code, text] of cases) {
      const res = await t.api.post('/api/plugins/echo/sql', { sql, params });
      expect([sql, res.status, res.body.code]).toEqual([sql, status, code]);
      expect(res.body.error).toBe(`The plugin's database query failed (SQLSTATE ${code.slice(4)})`);
      const logs = (await t.api.get('/api/plugins/echo/logs')).body.logs as Array<{ message: string }>;
      expect(logs.some((line) => text.test(line.message)), `${sql} in the logs`).toBe(true);
    }
  });

  it('runs GET and readOnly routes in a READ ONLY transaction without activity', async () => {
    const before = (await t.sql.query('select count(*)::int as n from plugin_echo.notes')).rows[0].n;
    const activityBefore = (await t.sql.query('select count(*)::int as n from activity_log')).rows[0].n;
    const sneak = await t.api.get(`/api/plugins/echo/companies/${company.id}/sneak`);
    expect([sneak.status, sneak.body.code]).toEqual([400, 'sql_25006']);
    const search = await t.api.post('/api/plugins/echo/search', {});
    expect(search.status).toBe(403);
    expect(search.body.code).toBe('activity_read_only');
    expect((await t.sql.query('select count(*)::int as n from plugin_echo.notes')).rows[0].n).toBe(before);
    expect((await t.sql.query('select count(*)::int as n from activity_log')).rows[0].n).toBe(activityBefore);
  });

  it('runs plugin code without Node or host objects', async () => {
    const res = await t.api.post('/api/plugins/echo/probe', {});
    expect(res.body).toEqual({ require: 'undefined', process: 'undefined', webAssembly: 'undefined', sharedArrayBuffer: 'undefined', hostKeys: ['__keel_dispatch', '__keel_host', '__keel_init', '__keel_settle'] });
  });

  it('executes tools', async () => {
    const tools = await t.api.get('/api/plugins/tools');
    expect(tools.body).toContainEqual(expect.objectContaining({ key: 'echo.shout' }));
    const res = await t.api.post('/api/plugins/tools/execute', { tool: 'echo.shout', input: { text: 'hi' } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ tool: 'echo.shout', result: { text: 'HI' } });
  });

  it('keeps the kernel serving while a plugin loops, hangs, throws or runs out of memory', async () => {
    for (const path of ['spin', 'hang', 'oom', 'throw']) {
      const started = Date.now();
      const [res, health] = await Promise.all([t.api.post(`/api/plugins/echo/${path}`, {}), t.api.get('/api/health')]);
      // The kernel answers; health may name the misbehaving plugin's worker (restarting), nothing else.
      expect(health.status).toBe(200);
      expect((health.body.down ?? []).filter((name: string) => name !== 'plugins.echo')).toEqual([]);
      expect(res.status, `${path}: ${res.text}`).toBeGreaterThanOrEqual(500);
      expect(Date.now() - started).toBeLessThan(10_000);
    }
    // The supervisor brings the worker back.
    let echo;
    for (let i = 0; i < 50; i++) {
      echo = await t.api.post('/api/plugins/echo/echo', { again: true });
      if (echo.status === 200) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(echo!.status).toBe(200);
    const health = await t.api.get('/api/plugins/echo/health');
    expect(health.body.worker.restarts).toBeGreaterThan(0);
  }, 60_000);
});
