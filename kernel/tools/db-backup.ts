import { parseArgs } from 'node:util';
import { takeDatabaseBackup } from '../backup/database-backup.ts';
import { loadConfig } from '../config/load.ts';
import { createLogger } from '../logger.ts';
import { openToolDatabase, ToolDatabaseError } from './tool-database.ts';

/**
 * Takes a database backup from the command line, as POST /api/instance/database-backups does:
 *   npm run db:backup -- [--data-dir DIR]
 *
 * Same file, retention and record as the route; progress of each table goes to stderr, the
 * result as JSON to stdout. Works beside a running server (the snapshot is one read-only
 * transaction) and, without one, starts the embedded PostgreSQL for its own duration.
 */
async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, strict: true, options: { 'data-dir': { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
  if (values.help) {
    console.log('Usage: npm run db:backup -- [--data-dir DIR]');
    return 0;
  }
  const config = loadConfig({ env: process.env, flags: values['data-dir'] ? { dataDir: values['data-dir'] } : {} });
  let connection;
  try {
    connection = await openToolDatabase(config.dataDir, { poolSize: 2 });
  } catch (error) {
    console.error(error instanceof ToolDatabaseError ? error.message : `Could not connect to the database: ${(error as Error).message}`);
    return 2;
  }
  try {
    let lastTable: string | null = null;
    const result = await takeDatabaseBackup({ db: connection.db, config, log: createLogger('warn') }, 'manual', (progress) => {
      if (progress.table && progress.table !== lastTable) {
        lastTable = progress.table;
        process.stderr.write(`backing up ${progress.tablesDone + 1}/${progress.tablesTotal} ${progress.table} (${(progress.bytes / 1048576).toFixed(1)} MiB so far)\n`);
      }
    });
    console.log(JSON.stringify(result, null, 2));
    return 0;
  } finally {
    await connection.close();
  }
}

main(process.argv.slice(2)).then((code) => { process.exitCode = code; }, (error: unknown) => {
  console.error(`Backup failed: ${(error as Error).message}`);
  process.exitCode = 1;
});
