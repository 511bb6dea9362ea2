import type { Queryable } from '../db/database.ts';

/**
 * The plugin login roles, made and kept by a kernel whose own role is either a superuser or,
 * as on managed PostgreSQL services, a role with CREATEROLE that owns the database.
 *
 * What a CREATEROLE role may do changed in PostgreSQL 16: it may alter or drop only roles it
 * holds ADMIN OPTION on (it gets that on roles it creates), it may not even mention SUPERUSER,
 * REPLICATION or BYPASSRLS in ALTER ROLE, nor CREATEDB unless it has CREATEDB itself, and
 * it gets no SET or INHERIT on the roles it creates. Without SET it cannot hand a schema to
 * the plugin's migrator (CREATE SCHEMA ... AUTHORIZATION, ALTER DEFAULT PRIVILEGES FOR ROLE:
 * "must be able to SET ROLE"); without INHERIT it cannot grant on the migrator's tables, end
 * the plugin's sessions or DROP OWNED on uninstall. So it grants itself membership in each
 * plugin role with SET and INHERIT. That gives the kernel nothing it could not already reach
 * (it owns the database), and the plugin roles nothing at all: membership runs one way.
 */
export interface KernelRole {
  name: string;
  superuser: boolean;
  /** server_version_num: the PostgreSQL 16 rules above apply from 160000. */
  serverVersion: number;
}

export async function readKernelRole(db: Queryable): Promise<KernelRole> {
  const row = await db.maybeOne<{ name: string; superuser: boolean; version: number }>(
    "select current_user as name, r.rolsuper as superuser, current_setting('server_version_num')::int as version from pg_roles r where r.rolname = current_user");
  return { name: row!.name, superuser: row!.superuser, serverVersion: row!.version };
}

interface ExistingRole {
  rolsuper: boolean;
  rolcreatedb: boolean;
  rolreplication: boolean;
  rolbypassrls: boolean;
  admin: boolean;
}

/**
 * Creates the login role with exactly the attributes a plugin role has, or brings an existing
 * one back to them (and to the password derived from the instance secret), then makes sure
 * the kernel may act as it. Runs inside the provisioning transaction, under its lock.
 */
export async function ensurePluginLoginRole(tx: Queryable, kernel: KernelRole, role: string, password: string): Promise<void> {
  const existing = await tx.maybeOne<ExistingRole>(
    `select rolsuper, rolcreatedb, rolreplication, rolbypassrls, pg_has_role(current_user, oid, 'member with admin option') as admin
       from pg_roles where rolname = ?`, [role]);
  const common = `login noinherit nocreaterole connection limit 40 password ${literal(password)}`;
  if (!existing) {
    await explainDenied(kernel, role, () => tx.query(`create role ${ident(role)} with ${common} nosuperuser nocreatedb noreplication nobypassrls`));
  } else {
    // Before PostgreSQL 16 CREATEROLE alone let a role alter any role that is not a superuser.
    if (!kernel.superuser && kernel.serverVersion >= 160000 && !existing.admin) {
      throw new Error(`The database role ${role} exists but ${kernel.name}, the role Keel connects as, has no ADMIN OPTION on it (another role created it). `
        + `Grant it (GRANT ${role} TO ${kernel.name} WITH ADMIN OPTION) or drop the role so that Keel creates it again.`);
    }
    // Only the attributes a CREATEROLE role may name; the privileged ones only when they must be
    // taken away, which then needs a superuser (and fails saying so otherwise).
    const revoke = [existing.rolsuper && 'nosuperuser', existing.rolcreatedb && 'nocreatedb', existing.rolreplication && 'noreplication', existing.rolbypassrls && 'nobypassrls'].filter(Boolean);
    await explainDenied(kernel, role, () => tx.query(`alter role ${ident(role)} with ${common} ${revoke.join(' ')}`));
  }
  if (kernel.superuser) return;
  const modern = kernel.serverVersion >= 160000;
  const acting = await tx.maybeOne<{ ok: boolean }>(modern ? "select pg_has_role(?, 'usage') and pg_has_role(?, 'set') as ok" : "select pg_has_role(?, 'usage') as ok", modern ? [role, role] : [role]);
  if (acting?.ok) return;
  await tx.query(modern ? `grant ${ident(role)} to current_user with inherit true, set true` : `grant ${ident(role)} to current_user`);
}

/** A refused CREATE or ALTER ROLE says which privilege the kernel's role lacks. */
async function explainDenied(kernel: KernelRole, role: string, run: () => Promise<unknown>): Promise<void> {
  try {
    await run();
  } catch (error) {
    if ((error as { code?: string }).code !== '42501') throw error;
    throw new Error(`${(error as Error).message} (making plugin role ${role}): the role Keel connects as, ${kernel.name}, needs CREATEROLE and ownership of the database; see "The database role" in README.md`, { cause: error });
  }
}

export function ident(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`unsafe identifier ${name}`);
  return `"${name}"`;
}

export function literal(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}
