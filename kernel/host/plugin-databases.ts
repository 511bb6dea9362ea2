import { createHash, createHmac } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import type { PluginManifest } from '../../sdk/plugin/manifest.ts';
import { newClient } from '../db/connections.ts';
import type { Database } from '../db/database.ts';
import { withCredentials } from '../db/database-url.ts';
import { KeelError } from '../http/errors.ts';
import { bridgeGrants } from './capabilities/unit.ts';
import { KERNEL_UNITS } from './capabilities/units.ts';
import { CLUSTER_LOCKS, withClusterLock } from './cluster-lock.ts';
import { hardenDatabaseForPlugins } from './database-hardening.ts';
import { refusedMigration } from './migration-guard.ts';
import { ensurePluginLoginRole, ident, readKernelRole, type KernelRole } from './plugin-login-roles.ts';

/** Kernel bridge functions a plugin's runtime role may execute, each behind its capability (registered with its unit). */
const grantedBridgeFunctions = (): ReadonlyArray<[string, string]> => bridgeGrants(KERNEL_UNITS);

/**
 * Each plugin gets two PostgreSQL login roles: a migrator that owns the plugin's schema and
 * runs its SQL migrations, and a runtime role the worker connects as, which may only use the
 * tables the migrator made (read-only unless database.namespace.write is granted). Neither
 * can reach another schema, make temporary tables or become anyone else; isolation is the
 * database's, not the host's string checks. Passwords are derived from the instance secret.
 */
export interface PluginRoles { runtime: string; migrator: string; schema: string | null }

export class PluginDatabases {
  private readonly db: Database;
  private readonly secret: Buffer;
  /** The kernel's DATABASE_URL (possibly a host list); plugin roles connect to the same servers. */
  private readonly baseUrl: string;
  /**
   * Roles are global to a PostgreSQL cluster while plugins belong to one database: role names
   * carry a short tag of the database so two instances on one cluster never share a role.
   */
  private tag = '';
  /** Whether the database refuses session-state functions to plugin roles (see database-hardening.ts). */
  hardened = false;

  constructor(db: Database, secret: Buffer, databaseUrl: string) {
    this.db = db;
    this.secret = secret;
    this.baseUrl = databaseUrl;
  }

  /** Who the kernel is in the database: a superuser or a role with CREATEROLE (see plugin-login-roles.ts). */
  private kernel: KernelRole | null = null;

  async init(): Promise<void> {
    const database = (await this.db.maybeOne<{ name: string }>('select current_database() as name'))!.name;
    this.tag = createHash('sha256').update(database).digest('hex').slice(0, 6);
    this.kernel = await readKernelRole(this.db);
  }

  private kernelRole(): KernelRole {
    if (!this.kernel) throw new Error('PluginDatabases.init() has not run');
    return this.kernel;
  }

  roles(manifest: Pick<PluginManifest, 'key' | 'database'>): PluginRoles {
    if (!this.tag) throw new Error('PluginDatabases.init() has not run');
    const slug = manifest.key.replaceAll('-', '_');
    return { runtime: `keel_p${this.tag}_${slug}`, migrator: `keel_m${this.tag}_${slug}`, schema: manifest.database ? `plugin_${manifest.database.namespace}` : null };
  }

  private password(role: string): string {
    return createHmac('sha256', this.secret).update(`plugin-db-role:${role}`).digest('base64url');
  }

  url(role: string): string {
    return withCredentials(this.baseUrl, role, this.password(role));
  }

  /**
   * Makes a plugin's database ready for its worker: roles, schema and privileges, then its
   * pending migrations (`migrate`). Every kernel process does this when it activates the
   * plugin, so it runs under the plugin's lock shared by all of them (cluster-lock.ts); only
   * the provisioning transaction, which grants on objects all plugins share, waits for other
   * plugins' provisioning, never for their migrations.
   */
  prepare(manifest: PluginManifest, grants: readonly string[], folder: string, options: { migrate: boolean; upTo?: ReadonlyMap<string, string> }): Promise<PluginRoles> {
    return withClusterLock(this.db, [CLUSTER_LOCKS.pluginDatabases, manifest.key], async () => {
      const roles = await withClusterLock(this.db, CLUSTER_LOCKS.pluginDatabases, () => this.provision(manifest, grants));
      if (options.migrate) await this.migrate(manifest, folder, options.upTo);
      return roles;
    });
  }

  /**
   * Creates or refreshes the roles, schema and privileges of a plugin; idempotent. One
   * transaction: the plugin's workers in other processes keep running meanwhile, and must
   * never see its table privileges revoked and not yet granted again.
   */
  private async provision(manifest: PluginManifest, grants: readonly string[]): Promise<PluginRoles> {
    const roles = this.roles(manifest);
    const write = grants.includes('database.namespace.write');
    this.hardened = await hardenDatabaseForPlugins(this.db, (message) => process.emitWarning(message));
    await this.assertNamespaceFree(manifest);
    await this.db.transaction(async (tx) => {
      const q = (sql: string) => tx.query(sql);
      const database = (await tx.maybeOne<{ name: string }>('select current_database() as name'))!.name;
      for (const role of [roles.runtime, roles.migrator]) {
        await ensurePluginLoginRole(tx, this.kernelRole(), role, this.password(role));
        await q(`grant connect on database ${ident(database)} to ${ident(role)}`);
      }
      await q(`grant usage on schema keel_bridge to ${ident(roles.runtime)}`);
      await q(`grant execute on function keel_bridge.record_activity(text, text, text, text, text, jsonb) to ${ident(roles.runtime)}`);
      await q(`grant execute on function keel_bridge.record_activities(jsonb) to ${ident(roles.runtime)}`);
      await q(`grant execute on function keel_bridge.activity_entity_refusal(text, text, text, text) to ${ident(roles.runtime)}`);
      // Bridge functions that write kernel rows are executable only with their capability granted.
      // One a capability folder defines and no migration made exists only once the folders are
      // installed (at the latest migration): a database restored at an earlier version's state
      // has none yet. It is left out here and granted when the plugin is provisioned after the
      // start that installs it; until then the plugin's role cannot execute it (fails closed).
      const bridged = grantedBridgeFunctions();
      const present = new Set((await tx.query<{ signature: string }>(
        'select s as signature from jsonb_array_elements_text(?::jsonb) s where to_regprocedure(s) is not null', [JSON.stringify(bridged.map(([signature]) => signature))])).map((row) => row.signature));
      for (const [signature, grant] of bridged) {
        if (!present.has(signature)) continue;
        await q(grants.includes(grant) ? `grant execute on function ${signature} to ${ident(roles.runtime)}` : `revoke execute on function ${signature} from ${ident(roles.runtime)}`);
      }
      if (roles.schema) {
        await q(`create schema if not exists ${ident(roles.schema)} authorization ${ident(roles.migrator)}`);
        await q(`alter schema ${ident(roles.schema)} owner to ${ident(roles.migrator)}`);
        await q(`revoke all on schema ${ident(roles.schema)} from public`);
        await q(`grant usage on schema ${ident(roles.schema)} to ${ident(roles.runtime)}`);
        const tablePrivileges = write ? 'select, insert, update, delete' : 'select';
        const sequencePrivileges = write ? 'usage, select, update' : 'select';
        await q(`revoke all on all tables in schema ${ident(roles.schema)} from ${ident(roles.runtime)}`);
        await q(`grant ${tablePrivileges} on all tables in schema ${ident(roles.schema)} to ${ident(roles.runtime)}`);
        await q(`grant ${sequencePrivileges} on all sequences in schema ${ident(roles.schema)} to ${ident(roles.runtime)}`);
        await q(`alter default privileges for role ${ident(roles.migrator)} in schema ${ident(roles.schema)} revoke all on tables from ${ident(roles.runtime)}`);
        await q(`alter default privileges for role ${ident(roles.migrator)} in schema ${ident(roles.schema)} grant ${tablePrivileges} on tables to ${ident(roles.runtime)}`);
        await q(`alter default privileges for role ${ident(roles.migrator)} in schema ${ident(roles.schema)} grant ${sequencePrivileges} on sequences to ${ident(roles.runtime)}`);
        await q(`alter default privileges for role ${ident(roles.migrator)} revoke execute on functions from public`);
      }
      if (this.hardened) {
        // Where PUBLIC no longer has them (database-hardening.ts), only a migrator whose plugin
        // declared database.functions may write code: the database refuses the others' CREATE
        // FUNCTION and DO, whatever the migration check let through.
        const code = manifest.database?.functions === true;
        await q(`${code ? 'grant' : 'revoke'} usage on language plpgsql, sql ${code ? 'to' : 'from'} ${ident(roles.migrator)}`);
      }
      for (const role of [roles.runtime, roles.migrator]) {
        // A role may change its own defaults (a migration can run ALTER ROLE CURRENT_USER SET ...): wipe them.
        await q(`alter role ${ident(role)} reset all`);
        await q(`alter role ${ident(role)} set search_path = ${roles.schema ? ident(roles.schema) : 'pg_catalog'}`);
      }
    });
    return roles;
  }

  /**
   * A namespace belongs to one plugin. Another plugin declaring it would otherwise be handed
   * the schema (ownership, table grants) on enable, and drop it with everything in it on
   * uninstall.
   */
  async assertNamespaceFree(manifest: Pick<PluginManifest, 'key' | 'database'>): Promise<void> {
    const roles = this.roles(manifest);
    if (!roles.schema) return;
    const other = await this.db.maybeOne<{ key: string }>('select key from plugins where db_namespace = ? and key <> ?', [manifest.database!.namespace, manifest.key]);
    const owner = await this.schemaOwner(roles.schema);
    if (other || (owner !== null && owner !== roles.migrator)) {
      throw new KeelError(409, 'database_namespace_taken', `${manifest.key} declares the database namespace ${manifest.database!.namespace}, which ${other ? `plugin ${other.key}` : 'another owner'} already holds`, { details: { namespace: manifest.database!.namespace, heldBy: other?.key ?? null } });
    }
  }

  private async schemaOwner(schema: string): Promise<string | null> {
    const row = await this.db.maybeOne<{ owner: string }>('select pg_get_userbyid(nspowner) as owner from pg_namespace where nspname = ?', [schema]);
    return row?.owner ?? null;
  }

  /**
   * Applies the plugin's pending migrations (NNNN-name.sql, in name order) as its migrator
   * role, each in its own transaction; an applied migration whose file changed is refused.
   * Runs under the plugin's provisioning lock (prepare), so no two processes apply one migration.
   * `upTo` (a database restore) names exactly the migrations to apply, with the checksum each
   * had when it was applied: a file missing or different is refused, later files are left.
   */
  private async migrate(manifest: PluginManifest, folder: string, upTo?: ReadonlyMap<string, string>): Promise<string[]> {
    const roles = this.roles(manifest);
    if (!roles.schema || !manifest.database?.migrations) return [];
    const dir = join(folder, manifest.database.migrations);
    let files = (await readdir(dir).catch(() => [] as string[])).filter((f) => /^\d{4}-[a-z0-9-]+\.sql$/.test(f)).sort();
    if (upTo) {
      const missing = [...upTo.keys()].filter((name) => !files.includes(name));
      if (missing.length > 0) throw new KeelError(409, 'plugin_migration_missing', `${manifest.key}: migration${missing.length > 1 ? 's' : ''} ${missing.join(', ')} of the backup ${missing.length > 1 ? 'are' : 'is'} not in ${dir}; install the plugin version the backup was taken with`);
      files = files.filter((name) => upTo.has(name));
    }
    const applied = new Map((await this.db.query<{ name: string; checksum: string }>('select name, checksum from plugin_migrations where plugin_key = ?', [manifest.key])).map((r) => [r.name, r.checksum]));
    const ran: string[] = [];
    const pending: Array<{ name: string; sql: string; checksum: string }> = [];
    for (const file of files) {
      const sql = await readFile(join(dir, file), 'utf8');
      const checksum = createHash('sha256').update(sql).digest('hex');
      const previous = applied.get(file);
      if (previous && previous !== checksum) throw new KeelError(409, 'plugin_migration_changed', `${manifest.key}: migration ${file} was changed after it was applied; add a new migration instead`);
      if (upTo && upTo.get(file) !== checksum) throw new KeelError(409, 'plugin_migration_changed', `${manifest.key}: migration ${file} differs from the one the backup was taken with`);
      if (!previous) pending.push({ name: file, sql, checksum });
    }
    if (pending.length === 0) return [];
    // Checked before any of them runs: a refused migration leaves nothing applied.
    if (!manifest.database.functions) {
      for (const migration of pending) {
        const refused = refusedMigration(migration.sql);
        if (refused) {
          throw new KeelError(422, 'plugin_migration_refused', `${manifest.key}: migration ${migration.name} ${refused}. Function sources and comments are readable by every plugin of the database; declare database.functions: true in plugin.json if the schema needs them`);
        }
      }
    }
    const client = newClient(this.url(roles.migrator), { options: `-c search_path=${roles.schema}` } as pg.ClientConfig);
    await client.connect();
    try {
      for (const migration of pending) {
        try {
          await client.query('begin');
          await client.query(migration.sql);
          await client.query('commit');
        } catch (error) {
          await client.query('rollback').catch(() => undefined);
          throw new KeelError(422, 'plugin_migration_failed', `${manifest.key}: migration ${migration.name} failed: ${(error as Error).message}`);
        }
        await this.db.query('insert into plugin_migrations (plugin_key, name, checksum) values (?, ?, ?)', [manifest.key, migration.name, migration.checksum]);
        ran.push(migration.name);
      }
    } finally {
      await client.end().catch(() => undefined);
    }
    // Tables made by migrations get the runtime privileges through default privileges; refresh anyway.
    return ran;
  }

  /**
   * Ends the sessions a plugin worker process left behind when it stopped, and so whatever
   * statements they still run: a process that crashed or was killed cancelled nothing itself.
   * Sessions are matched by the worker's own application name and the plugin's runtime role.
   */
  async endWorkerSessions(role: string, applicationName: string): Promise<void> {
    await this.db.query('select pg_terminate_backend(pid) from pg_stat_activity where usename = ? and application_name = ? and pid <> pg_backend_pid()', [role, applicationName]);
  }

  /** Removes the plugin's schema, data and roles (uninstall), under its provisioning lock and the instance-wide one (DROP OWNED revokes on shared objects). */
  drop(manifest: PluginManifest): Promise<void> {
    return withClusterLock(this.db, [CLUSTER_LOCKS.pluginDatabases, manifest.key], () => withClusterLock(this.db, CLUSTER_LOCKS.pluginDatabases, () => this.dropNow(manifest)));
  }

  private async dropNow(manifest: PluginManifest): Promise<void> {
    const roles = this.roles(manifest);
    // Only a schema this plugin's migrator owns: never another plugin's, whatever the manifest says.
    if (roles.schema && await this.schemaOwner(roles.schema) === roles.migrator) await this.db.query(`drop schema if exists ${ident(roles.schema)} cascade`);
    for (const role of [roles.runtime, roles.migrator]) {
      const exists = await this.db.maybeOne('select 1 as x from pg_roles where rolname = ?', [role]);
      if (!exists) continue;
      await this.db.query(`select pg_terminate_backend(pid) from pg_stat_activity where usename = ?`, [role]);
      await this.db.query(`drop owned by ${ident(role)} cascade`);
      await this.db.query(`drop role if exists ${ident(role)}`);
    }
  }
}
