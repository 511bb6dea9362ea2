import { newClient } from '../db/connections.ts';
import type { Database } from '../db/database.ts';

/**
 * Session-level advisory locks that serialise host work across every kernel process on one
 * database. Keys sit next to the kernel migrations' 727001 (kernel/db/database.ts).
 * - lifecycle, per plugin key (lifecycle-queue.ts): every lifecycle change of one plugin
 *   (install, enable, disable, upgrade, uninstall, the first-party bootstrap of it), so that
 *   its check-then-act (is it installed? enabled?) is one step cluster-wide. Plugins do not
 *   wait for each other's lifecycle work. A database namespace is locked likewise (install and
 *   upgrade claim one), so that two plugins cannot both be given it.
 * - pluginDatabases, per plugin key: the plugin's own provisioning and migrations, so that no
 *   two processes apply one plugin migration twice. Every process takes it when it activates a
 *   plugin, including reconciliations, which do not take the lifecycle lock.
 * - pluginDatabases, instance-wide, held only for the short provisioning transaction: it
 *   grants on objects every plugin shares (the database, keel_bridge), and two processes
 *   running a GRANT on one object at once fail `tuple concurrently updated`.
 * Always taken in that order (lifecycle, then a namespace, then the plugin's pluginDatabases,
 * then the instance-wide one), never the other way round.
 */
export const CLUSTER_LOCKS = { lifecycle: 727002, pluginDatabases: 727003 } as const;

/**
 * An advisory lock: one number (instance-wide), or a lock family and a name in it (a plugin
 * key), locked as the pair (family, hashtext(name)). The two-number form is a key space of its
 * own in PostgreSQL: it never meets the one-number locks. Two names that hash alike only share
 * a lock (they wait for each other), which is safe.
 */
export type ClusterLockKey = number | readonly [family: number, name: string];

/**
 * Runs `fn` while holding the advisory lock `key` on a connection of its own, opened for it
 * rather than taken from the kernel's pool: the work inside uses the pool (a transaction,
 * queries), and the pool also holds the LISTEN connections, so a small pool could otherwise
 * wait on itself. Ending the connection releases the lock, also when this process dies.
 */
export async function withClusterLock<T>(db: Database, key: ClusterLockKey, fn: () => Promise<T>): Promise<T> {
  const client = newClient(db.url, { application_name: 'keel-host-lock' });
  // A connection lost while held loses the lock with it; the work in hand carries on.
  client.on('error', () => undefined);
  await client.connect();
  try {
    if (typeof key === 'number') await client.query('select pg_advisory_lock($1)', [key]);
    else await client.query('select pg_advisory_lock($1, hashtext($2))', [key[0], key[1]]);
    return await fn();
  } finally {
    await client.end().catch(() => undefined);
  }
}
