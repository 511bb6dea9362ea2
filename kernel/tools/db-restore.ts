import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { AgentJwt } from '../auth/agent-jwt.ts';
import { RestoreError, restoreSnapshot } from '../backup/restore-snapshot.ts';
import { loadConfig } from '../config/load.ts';
import { DataDirInUseError, DataDirLock } from '../config/data-dir-lock.ts';
import { Database } from '../db/database.ts';
import { ensureDatabase } from '../db/ensure-database.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../db/embedded-postgres.ts';
import { createLogger } from '../logger.ts';
import { KEYRING_FILE } from '../vault/keyring.ts';

/**
 * Restores a database backup into an empty database:
 *   npm run db:restore -- FILE [--data-dir DIR]
 *
 * With DATABASE_URL the target is that (empty) database; otherwise the embedded PostgreSQL
 * of the data directory, which must not be in use by a running server (it is initialised
 * when new). The data directory must hold the original instance's keys (secrets-master.keys
 * and agent-jwt.secret, or the same configured secrets): the backup carries encrypted secrets,
 * never the keys. The same plugins must be installed (kernel/backup/restore-snapshot.ts).
 * Prints progress to stderr and "OK: N rows in M tables" (exit 0); failures exit 1, usage 2.
 */
class UsageError extends Error {}

const FIRST_PARTY_DIR = fileURLToPath(new URL('../../plugins', import.meta.url));

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv, allowPositionals: true, strict: true,
    options: { 'data-dir': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    console.log('Usage: npm run db:restore -- FILE [--data-dir DIR]');
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError('Name exactly one backup file: npm run db:restore -- FILE [--data-dir DIR]');
  const file = resolve(positionals[0]!);
  if (!existsSync(file)) throw new UsageError(`No such file: ${file}`);
  const config = loadConfig({ env: process.env, flags: values['data-dir'] ? { dataDir: values['data-dir'] } : {} });
  if (!config.auth.agentJwtSecret && !existsSync(join(config.dataDir, 'agent-jwt.secret'))) {
    throw new UsageError(`${config.dataDir} holds no agent-jwt.secret: copy it and ${KEYRING_FILE} from the original data directory first`);
  }
  if (!existsSync(join(config.dataDir, KEYRING_FILE))) {
    throw new UsageError(`${config.dataDir} holds no ${KEYRING_FILE}: copy it and agent-jwt.secret from the original data directory first, or the restored secrets cannot be read`);
  }
  const target = await openTarget(config.dataDir, config.database.url);
  try {
    const jwt = await AgentJwt.load(config.dataDir, config.auth.agentJwtSecret);
    let lastTable: string | null = null;
    const { header, rows } = await restoreSnapshot({
      db: target.db, databaseUrl: target.url, file,
      hostSecret: jwt.derive('plugin-database-roles'), firstPartyDir: FIRST_PARTY_DIR,
      onProgress: (progress) => {
        if (progress.table && progress.table !== lastTable) {
          lastTable = progress.table;
          process.stderr.write(`restoring ${progress.tablesDone + 1}/${progress.tablesTotal} ${progress.table} (${progress.rows} rows so far)\n`);
        }
      },
    });
    console.log(`OK: ${rows} rows in ${header.tables.length} tables (backup of ${header.createdAt})`);
    return 0;
  } finally {
    await target.close();
  }
}

async function openTarget(dataDir: string, databaseUrl: string | undefined): Promise<{ db: Database; url: string; close(): Promise<void> }> {
  if (databaseUrl) {
    const db = await Database.connect(databaseUrl, { poolSize: 4 });
    return { db, url: databaseUrl, close: () => db.close() };
  }
  let lock: DataDirLock;
  try {
    lock = await DataDirLock.acquire(dataDir);
  } catch (error) {
    if (error instanceof DataDirInUseError) throw new UsageError(`${error.message} Stop it first: a restore needs the database to itself.`);
    throw error;
  }
  let embedded: EmbeddedDatabase | undefined;
  try {
    embedded = await startEmbeddedPostgres(dataDir, createLogger('warn'));
    await ensureDatabase(embedded.url, 'keel');
    const url = embedded.url.replace(/\/postgres$/, '/keel');
    const db = await Database.connect(url, { poolSize: 4 });
    return {
      db, url,
      async close() {
        await db.close();
        await embedded!.stop();
        await lock.release();
      },
    };
  } catch (error) {
    await embedded?.stop();
    await lock.release();
    throw error;
  }
}

main(process.argv.slice(2)).then((code) => { process.exitCode = code; }, (error: unknown) => {
  if (error instanceof UsageError || (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    console.error((error as Error).message);
    process.exitCode = 2;
  } else if (error instanceof RestoreError) {
    console.error(`Restore failed: ${error.message}`);
    process.exitCode = 1;
  } else {
    console.error(`Restore failed: ${(error as Error).stack ?? String(error)}`);
    process.exitCode = 1;
  }
});
