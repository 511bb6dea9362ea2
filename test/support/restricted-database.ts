import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';

/**
 * A database as a managed PostgreSQL service hands it out: an empty database owned by a login
 * role that is not a superuser and, unless told otherwise, may create roles (CREATEROLE).
 * Keel migrates it itself, so every kernel object is owned by that role, as in production.
 * Set up through the test run's superuser connection; `drop()` removes the database, the
 * owner and the plugin roles Keel made for this database.
 */
export interface RestrictedDatabase {
  /** The connection string of the owning role. */
  url: string;
  role: string;
  name: string;
  /** Names of the plugin roles Keel makes in this database (roles are global to the cluster). */
  pluginRoles(key: string): { runtime: string; migrator: string };
  /** Runs SQL as the test run's superuser on this database. */
  asSuperuser<T extends pg.QueryResultRow = any>(sql: string, params?: unknown[]): Promise<pg.QueryResult<T>>;
  drop(): Promise<void>;
}

export async function createRestrictedDatabase(options: { createRole?: boolean } = {}): Promise<RestrictedDatabase> {
  const adminUrl = inject('adminDatabaseUrl');
  const suffix = randomBytes(5).toString('hex');
  const role = `keel_owner_${suffix}`;
  const name = `t_owned_${suffix}`;
  const password = randomBytes(12).toString('hex');
  await withClient(adminUrl, async (admin) => {
    await admin.query(`create role ${role} login ${options.createRole === false ? 'nocreaterole' : 'createrole'} nosuperuser nocreatedb password '${password}'`);
    await admin.query(`create database ${name} owner ${role} template template0`);
  });
  const databaseUrl = new URL(adminUrl.replace(/\/[^/]*$/, `/${name}`));
  const superUrl = databaseUrl.href;
  databaseUrl.username = role;
  databaseUrl.password = password;
  // Plugin roles carry a tag of their database's name (see kernel/host/plugin-databases.ts).
  const tag = createHash('sha256').update(name).digest('hex').slice(0, 6);
  return {
    url: databaseUrl.href, role, name,
    pluginRoles: (key) => ({ runtime: `keel_p${tag}_${key.replaceAll('-', '_')}`, migrator: `keel_m${tag}_${key.replaceAll('-', '_')}` }),
    asSuperuser: (sql, params) => withClient(superUrl, (client) => client.query(sql, params)),
    async drop() {
      await withClient(adminUrl, async (admin) => {
        await admin.query(`drop database if exists ${name} with (force)`);
        const { rows } = await admin.query<{ rolname: string }>('select rolname from pg_roles where rolname like $1 or rolname like $2', [`keel_p${tag}_%`, `keel_m${tag}_%`]);
        for (const { rolname } of rows) await admin.query(`drop role if exists "${rolname}"`);
        await admin.query(`drop role if exists ${role}`);
      });
    },
  };
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
