import type pg from 'pg';

/**
 * Commits the client's transaction, or throws. COMMIT of a transaction that an earlier
 * statement aborted does not fail: PostgreSQL rolls it back and answers ROLLBACK. A plugin that
 * caught a failed query and returned normally would otherwise be acknowledged with nothing
 * stored.
 */
export async function commit(client: pg.PoolClient): Promise<void> {
  const result = await client.query('COMMIT');
  if (result.command !== 'COMMIT') throw new Error('the transaction was aborted by an earlier failed statement and was rolled back');
}
