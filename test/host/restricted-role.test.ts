import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { eventually } from '../support/server-process.ts';
import { installAndEnable, installPlugin } from '../support/plugins.ts';
import { createRestrictedDatabase, type RestrictedDatabase } from '../support/restricted-database.ts';

/**
 * Keel on a managed PostgreSQL service: the database role owns its database and has CREATEROLE,
 * but is no superuser. Two kernels share the database, as several processes would.
 */
const ATTACK_SQL = fileURLToPath(new URL('./fixtures/attack-sql', import.meta.url));
const ECHO = fileURLToPath(new URL('./fixtures/echo', import.meta.url));
let database: RestrictedDatabase;
let a: TestKernel;
let b: TestKernel;

beforeAll(async () => {
  database = await createRestrictedDatabase();
  // Kernels sharing a database share the secret the plugin roles' passwords derive from. The
  // second has a small pool: two LISTEN connections hold two of its three connections for good,
  // so lifecycle work must not need more than the one left (the locks have their own).
  const shared = { auth: { agentJwtSecret: randomBytes(32).toString('hex') } };
  a = await startTestKernel(shared, { databaseUrl: database.url, firstPartyDir: FIRST_PARTY_PLUGINS });
  b = await startTestKernel({ ...shared, database: { url: database.url, poolSize: 3 } }, { databaseUrl: database.url, firstPartyDir: FIRST_PARTY_PLUGINS });
});
afterAll(async () => {
  await b?.stop();
  await a?.stop();
  await database?.drop();
});

const summary = (t: TestKernel, companyId: string) => t.api.get(`/api/companies/${companyId}/costs/summary`);
const plugin = (t: TestKernel, key: string) => t.api.get(`/api/plugins/${key}`);

/** Runs one statement as the attack-sql plugin's runtime role, outside a transaction. */
async function pluginSql(t: TestKernel, sql: string): Promise<{ rows?: any[]; error?: { code: string; message: string } }> {
  const res = await t.api.post('/api/plugins/attack-sql/sql-free', { sql });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

describe('a database role with CREATEROLE that is not a superuser', () => {
  it('migrates, bootstraps the first-party plugins once and runs their SQL in both kernels', async () => {
    const { rows: [role] } = await database.asSuperuser('select rolsuper, rolcreaterole from pg_roles where rolname = $1', [database.role]);
    expect(role).toEqual({ rolsuper: false, rolcreaterole: true });
    for (const t of [a, b]) expect((await plugin(t, 'costs')).body).toMatchObject({ status: 'enabled', running: 'running' });
    const company = await createCompany(a.api);
    const agent = await createAgent(b.api, company.id);
    const posted = await b.api.post(`/api/companies/${company.id}/cost-events`, { agentId: agent.id, provider: 'alpha', model: 'm', costCents: 42, occurredAt: new Date().toISOString() });
    expect(posted.status, posted.text).toBe(201);
    expect((await summary(a, company.id)).body.spendCents).toBe(42);
    // The kernel's own reads of the plugin's view (month-to-date spend) work under this role too.
    expect((await a.api.get(`/api/companies/${company.id}`)).body.spentMonthlyCents).toBe(42);
    expect((await b.api.get(`/api/agents/${agent.id}`)).body.spentMonthlyCents).toBe(42);
    const { rows } = await database.asSuperuser("select action from activity_log where entity_type = 'plugin' and entity_id = 'costs' order by seq");
    expect(rows.map((r) => r.action)).toEqual(['plugin.installed', 'plugin.enabled']);
    // Made by Keel's role, which may act as them; they are members of nothing.
    const { runtime, migrator } = database.pluginRoles('costs');
    const { rows: memberships } = await database.asSuperuser(
      `select pg_get_userbyid(m.roleid) as role, pg_get_userbyid(m.member) as member, m.inherit_option, m.set_option
         from pg_auth_members m where pg_get_userbyid(m.member) in ($1, $2) or pg_get_userbyid(m.roleid) in ($1, $2) order by 1, 2, m.inherit_option`, [runtime, migrator]);
    expect(memberships.filter((m) => m.inherit_option)).toEqual([
      { role: migrator, member: database.role, inherit_option: true, set_option: true },
      { role: runtime, member: database.role, inherit_option: true, set_option: true },
    ]);
    expect(memberships.every((m) => m.member === database.role)).toBe(true);
  });

  it('says the database is not hardened, so plugin connections are reset after every use', () => {
    // Only a superuser can take set_config, pg_notify, advisory locks and large objects from PUBLIC.
    for (const t of [a, b]) expect(t.kernel.host.databases.hardened).toBe(false);
  });

  it('enables, disables and re-enables a plugin through either kernel, both following', async () => {
    await installAndEnable(a, ATTACK_SQL);
    const followed = await eventually(() => b.api.post('/api/plugins/attack-sql/sql-free', { sql: 'select 1 as one' }), (r) => r.status === 200);
    expect(followed.body, followed.text).toEqual({ rows: [{ one: 1 }] });
    expect((await b.api.post('/api/plugins/attack-sql/disable', {})).status).toBe(200);
    expect((await eventually(() => a.api.post('/api/plugins/attack-sql/sql-free', { sql: 'select 1' }), (r) => r.status === 404)).status).toBe(404);
    const enabled = await b.api.post('/api/plugins/attack-sql/enable', {});
    expect(enabled.status, enabled.text).toBe(200);
    for (const t of [a, b]) {
      const served = await eventually(() => t.api.post('/api/plugins/attack-sql/sql-free', { sql: 'select 1 as one' }), (r) => r.status === 200);
      expect(served.body).toEqual({ rows: [{ one: 1 }] });
    }
  });

  it('keeps plugin roles inside their own schema', async () => {
    for (const table of ['public.companies', 'public.activity_log', 'keel_private.bridge_key', 'plugin_costs.cost_events', 'keel_jobs.job']) {
      expect((await pluginSql(a, `select * from ${table}`)).error?.code, table).toBe('sql_42501');
    }
    expect((await pluginSql(a, 'create table public.planted (a int)')).error?.code).toMatch(/^sql_(42501|refused)$/);
    // The kernel's role may act as the plugin roles; never the other way round.
    const member = await pluginSql(a, `select pg_has_role('${database.role}', 'MEMBER') as m`);
    expect(member.rows).toEqual([{ m: false }]);
    expect((await pluginSql(a, 'select * from loot')).rows).toBeDefined();
  });

  it('ends a plugin\'s advisory lock with its call: it cannot block lifecycle changes', async () => {
    // Unhardened, plugins keep pg_advisory_lock; the reset of their connections is what releases it.
    // The locks costs' lifecycle and provisioning take (cluster-lock.ts): its own, and the instance-wide provisioning one.
    const held = await pluginSql(a, "select pg_advisory_lock(727002, hashtext('costs')) as locked, pg_advisory_lock(727003, hashtext('costs')) as own, pg_advisory_lock(727003) as also");
    expect(held.error).toBeUndefined();
    const toggled = await Promise.race([
      (async () => {
        expect((await a.api.post('/api/plugins/costs/disable', {})).status).toBe(200);
        return (await a.api.post('/api/plugins/costs/enable', {})).status;
      })(),
      new Promise((resolve) => setTimeout(() => resolve('blocked'), 20_000)),
    ]);
    expect(toggled).toBe(200);
  }, 40_000);

  it('refuses, saying how to fix it, a plugin role that another role made and Keel\'s role has no ADMIN OPTION on', async () => {
    const { runtime } = database.pluginRoles('echo');
    await database.asSuperuser(`create role ${runtime} login`);
    await installPlugin(a, ECHO);
    const refused = await a.api.post('/api/plugins/echo/enable', {});
    expect(refused.status).toBe(422);
    expect(refused.body.error).toContain(`${runtime} exists but ${database.role}, the role Keel connects as, has no ADMIN OPTION on it`);
    expect(refused.body.error).toContain(`GRANT ${runtime} TO ${database.role} WITH ADMIN OPTION`);
    await database.asSuperuser(`grant ${runtime} to ${database.role} with admin option`);
    const enabled = await a.api.post('/api/plugins/echo/enable', {});
    expect(enabled.status, enabled.text).toBe(200);
  });

  it('uninstalls a plugin: its schema and both roles are gone, and neither kernel serves it', async () => {
    const removed = await a.api.delete('/api/plugins/attack-sql');
    expect(removed.status, removed.text).toBe(200);
    const { runtime, migrator } = database.pluginRoles('attack-sql');
    const { rows: roles } = await database.asSuperuser('select rolname from pg_roles where rolname in ($1, $2)', [runtime, migrator]);
    expect(roles).toEqual([]);
    const { rows: schemas } = await database.asSuperuser("select nspname from pg_namespace where nspname = 'plugin_attack_sql'");
    expect(schemas).toEqual([]);
    expect((await eventually(() => b.api.post('/api/plugins/attack-sql/sql-free', { sql: 'select 1' }), (r) => r.status === 404)).status).toBe(404);
  });
});
