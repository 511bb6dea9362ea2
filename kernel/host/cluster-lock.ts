import type pg from 'pg';
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
 * Runs `fn` while holding the advisory lock `key` on a connection of its own, so that the
 * work inside may use the pool (and transactions) freely. The lock is released when `fn`
 * settles; if releasing fails the connection is destroyed, which releases it as well.
 */
export async function withClusterLock<T>(db: Database, key: number, fn: () => Promise<T>): Promise<T> {
  const pool = await (db.orm.em.getConnection() as unknown as { getNativeClient(): Promise<pg.Pool> }).getNativeClient();
  const client = await pool.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [key]);
  } catch (error) {
    client.release(error as Error);
    throw error;
  }
  try {
    return await fn();
  } finally {
    await client.query('select pg_advisory_unlock($1)', [key]).then(() => client.release(), (error: Error) => client.release(error));
  }
}
