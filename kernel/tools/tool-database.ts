import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { createLogger } from '../logger.ts';
import { Database } from '../db/database.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../db/embedded-postgres.ts';

/**
 * Database access for operator commands. With DATABASE_URL the command uses it; otherwise it
 * reaches the embedded server of the data directory, which a running kernel already serves,
 * and starts that server itself for the duration of the command when no kernel is running.
 */
export async function openToolDatabase(dataDir: string): Promise<{ db: Database; close(): Promise<void> }> {
  if (process.env.DATABASE_URL) {
    const db = await Database.connect(process.env.DATABASE_URL, { poolSize: 4 });
    return { db, close: () => db.close() };
  }
  let embedded: EmbeddedDatabase | undefined;
  let url: string | undefined;
  try {
    const credentials = JSON.parse(await readFile(join(dataDir, 'db.json'), 'utf8')) as { password: string; port: number };
    const candidate = `postgres://keel:${encodeURIComponent(credentials.password)}@127.0.0.1:${credentials.port}/keel`;
    const probe = new pg.Client({ connectionString: candidate });
    await probe.connect();
    await probe.end();
    url = candidate;
  } catch {
    embedded = await startEmbeddedPostgres(dataDir, createLogger('warn'));
    url = embedded.url.replace(/\/postgres$/, '/keel');
  }
  const db = await Database.connect(url, { poolSize: 4 });
  return {
    db,
    async close() {
      await db.close();
      await embedded?.stop();
    },
  };
}
