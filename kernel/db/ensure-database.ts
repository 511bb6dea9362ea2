import { newClient } from './connections.ts';

/** Creates the database `name` through the server's admin connection unless it exists. */
export async function ensureDatabase(adminUrl: string, name: string): Promise<void> {
  const client = newClient(adminUrl);
  await client.connect();
  try {
    const exists = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (exists.rowCount === 0) await client.query(`create database ${name}`);
  } finally {
    await client.end();
  }
}
