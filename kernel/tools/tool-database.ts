import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DataDirInUseError, DataDirLock } from '../config/data-dir-lock.ts';
import { createLogger } from '../logger.ts';
import { Database } from '../db/database.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../db/embedded-postgres.ts';

export class ToolDatabaseError extends Error {}

/**
 * Database access for operator commands. With DATABASE_URL the command uses it. Otherwise,
 * when a server holds the data directory, the command connects to the embedded PostgreSQL
 * that server runs; when none does, the command takes the data directory's lock itself and
 * runs the embedded server for its own duration, so that a server started meanwhile is
 * refused instead of sharing (or stopping) the cluster.
 */
export async function openToolDatabase(dataDir: string, options: { poolSize?: number } = {}): Promise<{ db: Database; close(): Promise<void> }> {
  const poolSize = options.poolSize ?? 4;
  if (process.env.DATABASE_URL) {
    const db = await Database.connect(process.env.DATABASE_URL, { poolSize });
    return { db, close: () => db.close() };
  }
  const credentialsFile = join(dataDir, 'db.json');
  if (!existsSync(credentialsFile)) throw new ToolDatabaseError(`No embedded database in ${dataDir} (db.json is missing); set DATABASE_URL or pass --data-dir`);
  let lock: DataDirLock | undefined;
  let embedded: EmbeddedDatabase | undefined;
  let url: string;
  try {
    lock = await DataDirLock.acquire(dataDir);
  } catch (error) {
    if (!(error instanceof DataDirInUseError)) throw error;
  }
  if (lock) {
    try {
      embedded = await startEmbeddedPostgres(dataDir, createLogger('warn'));
    } catch (error) {
      await lock.release();
      throw error;
    }
    url = embedded.url.replace(/\/postgres$/, '/keel');
  } else {
    const credentials = JSON.parse(await readFile(credentialsFile, 'utf8')) as { password: string; port: number };
    url = `postgres://keel:${encodeURIComponent(credentials.password)}@127.0.0.1:${credentials.port}/keel`;
  }
  let db: Database;
  try {
    db = await Database.connect(url, { poolSize });
  } catch (error) {
    await embedded?.stop();
    await lock?.release();
    throw error;
  }
  return {
    db,
    async close() {
      await db.close();
      await embedded?.stop();
      await lock?.release();
    },
  };
}
