import type { Database } from '../db/database.ts';

/**
 * Built-in functions PostgreSQL lets every role execute (PUBLIC) that a plugin role must not
 * have, because privileges cannot be taken from one member of PUBLIC only:
 * - set_config (and UPDATE on pg_settings, which calls it): a plugin would change its own
 *   statement_timeout or search_path, and the change would outlive its call on the session;
 * - pg_notify: the kernel listens on channels (keel_auth, keel_plugins) and acts on them;
 * - advisory locks: one lock space for the whole database, shared with the kernel's own keys
 *   (migrations, agent short names), so a plugin could block the kernel;
 * - large objects: storage outside the plugin's schema, writable even by a read-only plugin;
 * - temporary tables (a database privilege): session state on pooled connections;
 * - USAGE on the languages sql and plpgsql: functions and DO blocks, whose source every role can
 *   read, are for plugins that declare database.functions only;
 * - pg_prepared_statement (behind the pg_prepared_statements view): the texts and plan counts of
 *   the statements the host keeps prepared on a pooled connection, which other companies'
 *   invocations ran (a text may carry their values).
 * The kernel's own role keeps them (explicitly granted first, for a kernel that is not a
 * superuser). Taking them needs the kernel to own the functions (a superuser): for any other
 * role PostgreSQL answers GRANT and REVOKE with warnings, not errors, and changes nothing, so
 * the outcome is read back from the catalogs rather than assumed. Where they stay, the host
 * says so and plugin connections are reset after every use instead (resetSessions); the
 * remaining exposure is documented in docs/plugins/security.md.
 */
const REVOKED_FUNCTIONS = [
  'set_config', 'pg_notify',
  'pg_advisory_lock', 'pg_advisory_lock_shared', 'pg_advisory_xact_lock', 'pg_advisory_xact_lock_shared',
  'pg_try_advisory_lock', 'pg_try_advisory_lock_shared', 'pg_try_advisory_xact_lock', 'pg_try_advisory_xact_lock_shared',
  'pg_advisory_unlock', 'pg_advisory_unlock_shared', 'pg_advisory_unlock_all',
  'lo_creat', 'lo_create', 'lo_from_bytea', 'lo_put', 'lo_open', 'lo_close', 'loread', 'lowrite', 'lo_lseek', 'lo_lseek64',
  'lo_tell', 'lo_tell64', 'lo_truncate', 'lo_truncate64', 'lo_unlink', 'lo_get', 'lo_import', 'lo_export',
  'pg_prepared_statement',
];

/**
 * Languages in which a role may write functions and DO blocks. Their source is readable by
 * every role (pg_proc.prosrc): a plugin's migrator gets USAGE only when its manifest declares
 * database.functions (plugin-databases.ts). The kernel's own migrations keep them.
 */
const CODE_LANGUAGES = ['plpgsql', 'sql'];

const hardened = new WeakMap<Database, Promise<boolean>>();

/** Resolves true when the database now refuses these to plugin roles. */
export function hardenDatabaseForPlugins(db: Database, warn: (message: string) => void): Promise<boolean> {
  const known = hardened.get(db);
  if (known) return known;
  const attempt = (async () => {
    const functions = await stillPublic(db);
    try {
      await db.transaction(async (tx) => {
        for (const { signature } of functions) {
          await tx.query(`grant execute on function ${signature} to current_user`);
          await tx.query(`revoke execute on function ${signature} from public`);
        }
        await tx.query('grant update on pg_catalog.pg_settings to current_user');
        await tx.query('revoke update on pg_catalog.pg_settings from public');
        await tx.query(`grant usage on language ${CODE_LANGUAGES.join(', ')} to current_user`);
        await tx.query(`revoke usage on language ${CODE_LANGUAGES.join(', ')} from public`);
      });
    } catch (error) {
      warn(`plugin database hardening skipped: ${(error as Error).message}`);
      return false;
    }
    // Also in the kernel's migration, but database privileges do not survive CREATE DATABASE
    // ... TEMPLATE or a restore into a new database: temporary tables are session state. The
    // database's owner may do this without being a superuser, so it is not tied to the above.
    const database = (await db.maybeOne<{ name: string }>('select current_database() as name'))!.name.replaceAll('"', '""');
    await db.query(`grant temporary on database "${database}" to current_user`).catch(() => undefined);
    await db.query(`revoke temporary on database "${database}" from public`).catch(() => undefined);
    const exposed = [...new Set((await stillPublic(db)).map((f) => f.name))];
    const settings = await db.maybeOne<{ update: boolean; temporary: boolean }>(
      "select has_table_privilege('public', 'pg_catalog.pg_settings', 'update') as update, has_database_privilege('public', current_database(), 'temporary') as temporary");
    if (settings?.update) exposed.push('UPDATE on pg_settings');
    if (settings?.temporary) exposed.push('TEMPORARY on the database');
    const languages = await db.query<{ name: string }>(
      "select lanname as name from pg_language where lanname = any(?::text[]) and has_language_privilege('public', oid, 'usage')", [`{${CODE_LANGUAGES.join(',')}}`]);
    for (const { name } of languages) exposed.push(`USAGE on language ${name}`);
    if (exposed.length === 0) return true;
    const kernelRole = (await db.maybeOne<{ name: string }>('select current_user as name'))!.name;
    const named = exposed.length > 4 ? `${exposed.slice(0, 4).join(', ')} and ${exposed.length - 4} more` : exposed.join(', ');
    warn(`plugin database hardening skipped: ${kernelRole} cannot revoke from PUBLIC ${named}; only a superuser can. `
      + 'Plugin database connections are reset after every use instead; see docs/plugins/security.md');
    return false;
  })().catch((error) => { hardened.delete(db); throw error; });
  hardened.set(db, attempt);
  return attempt;
}

/** The functions above that PUBLIC may still execute, in the order listed there. */
async function stillPublic(db: Database): Promise<Array<{ name: string; signature: string }>> {
  const rows = await db.query<{ name: string; signature: string }>(
    `select p.proname as name, p.oid::regprocedure::text as signature from pg_proc p
      where p.pronamespace = 'pg_catalog'::regnamespace and p.proname = any(?::text[])
        and has_function_privilege('public', p.oid, 'execute')`, [`{${REVOKED_FUNCTIONS.join(',')}}`]);
  return rows.sort((a, b) => REVOKED_FUNCTIONS.indexOf(a.name) - REVOKED_FUNCTIONS.indexOf(b.name));
}
