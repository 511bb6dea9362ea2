import { newClient } from '../db/connections.ts';
import type { Database } from '../db/database.ts';

/**
 * Session-level advisory locks that serialise host work across every kernel process on one
 * database. Keys sit next to the kernel migrations' 727001 (kernel/db/database.ts).
 * - lifecycle: the first-party bootstrap and every lifecycle change (install, enable, disable,
 *   upgrade, uninstall), so that a check-then-act (is costs installed?) is one step cluster-wide;
 * - pluginDatabases: role, schema and privilege provisioning and plugin migrations. Two
 *   processes running the same GRANT or ALTER ROLE at once fail `tuple concurrently updated`,
 *   and two running one plugin migration would apply it twice. Every process takes it when it
 *   activates a plugin, including reconciliations, which do not take the lifecycle lock.
 * Always taken in that order (lifecycle, then pluginDatabases), never the other way round.
 */
export const CLUSTER_LOCKS = { lifecycle: 727002, pluginDatabases: 727003 } as const;

/**
 * Runs `fn` while holding the advisory lock `key` on a connection of its own, opened for it
 * rather than taken from the kernel's pool: the work inside uses the pool (a transaction,
 * queries), and the pool also holds the LISTEN connections, so a small pool could otherwise
 * wait on itself. Ending the connection releases the lock, also when this process dies.
 */
export async function withClusterLock<T>(db: Database, key: number, fn: () => Promise<T>): Promise<T> {
  const client = newClient(db.url, { application_name: 'keel-host-lock' });
  // A connection lost while held loses the lock with it; the work in hand carries on.
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [key]);
    return await fn();
  } finally {
    await client.end().catch(() => undefined);
  }
}
