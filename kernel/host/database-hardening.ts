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
 * - temporary tables (a database privilege): session state on pooled connections.
 * The kernel's own role keeps them (explicitly granted first, for a kernel that is not a
 * superuser). Needs the kernel to own the functions (a superuser); otherwise it logs and the
 * remaining exposure is documented in docs/plugins/security.md.
 */
const REVOKED_FUNCTIONS = [
  'set_config', 'pg_notify',
  'pg_advisory_lock', 'pg_advisory_lock_shared', 'pg_advisory_xact_lock', 'pg_advisory_xact_lock_shared',
  'pg_try_advisory_lock', 'pg_try_advisory_lock_shared', 'pg_try_advisory_xact_lock', 'pg_try_advisory_xact_lock_shared',
  'pg_advisory_unlock', 'pg_advisory_unlock_shared', 'pg_advisory_unlock_all',
  'lo_creat', 'lo_create', 'lo_from_bytea', 'lo_put', 'lo_open', 'lo_close', 'loread', 'lowrite', 'lo_lseek', 'lo_lseek64',
  'lo_tell', 'lo_tell64', 'lo_truncate', 'lo_truncate64', 'lo_unlink', 'lo_get', 'lo_import', 'lo_export',
];

const hardened = new WeakMap<Database, Promise<boolean>>();

/** Resolves true when the database now refuses these to plugin roles. */
export function hardenDatabaseForPlugins(db: Database, warn: (message: string) => void): Promise<boolean> {
  const known = hardened.get(db);
  if (known) return known;
  const attempt = (async () => {
    const rows = await db.query<{ signature: string }>(
      `select p.oid::regprocedure::text as signature from pg_proc p
        where p.pronamespace = 'pg_catalog'::regnamespace and p.proname = any(?::text[])
          and has_function_privilege('public', p.oid, 'execute')`, [`{${REVOKED_FUNCTIONS.join(',')}}`]);
    try {
      await db.transaction(async (tx) => {
        for (const { signature } of rows) {
          await tx.query(`grant execute on function ${signature} to current_user`);
          await tx.query(`revoke execute on function ${signature} from public`);
        }
        await tx.query('grant update on pg_catalog.pg_settings to current_user');
        await tx.query('revoke update on pg_catalog.pg_settings from public');
        // Also in the kernel's migration, but database privileges do not survive CREATE DATABASE
        // ... TEMPLATE or a restore into a new database: temporary tables are session state.
        const database = (await tx.maybeOne<{ name: string }>('select current_database() as name'))!.name.replaceAll('"', '""');
        await tx.query(`grant temporary on database "${database}" to current_user`);
        await tx.query(`revoke temporary on database "${database}" from public`);
      });
      return true;
    } catch (error) {
      warn(`plugin database hardening skipped: ${(error as Error).message}`);
      return false;
    }
  })().catch((error) => { hardened.delete(db); throw error; });
  hardened.set(db, attempt);
  return attempt;
}
