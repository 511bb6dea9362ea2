import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { verifyActivityChains, type ChainReport } from '../activity/verify-chain.ts';
import { defaultDataDir } from '../config/load.ts';
import type { Database } from '../db/database.ts';

/**
 * Verifies the activity log's hash chains:
 *   npm run activity:verify -- [--data-dir DIR] [--company ID]
 *
 * Connects with DATABASE_URL or, without it, to the embedded PostgreSQL of the data
 * directory using the credentials in <dataDir>/db.json; when that server is not running it
 * is started for the duration of the check and stopped again. Prints
 * "OK: N entries in M chains" (exit 0) or "BROKEN: chain C at seq S (entry ID): reason"
 * (exit 1). Usage and connection problems exit 2.
 */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

class UsageError extends Error {}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { 'data-dir': { type: 'string' }, company: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    strict: true,
  });
  if (values.help) {
    console.log('Usage: npm run activity:verify -- [--data-dir DIR] [--company ID]');
    return 0;
  }
  const company = values.company;
  if (company !== undefined && !UUID.test(company)) throw new UsageError(`--company must be a company id (uuid), got "${company}"`);
  const dataDir = resolve(values['data-dir'] ?? defaultDataDir());
  const connection = await connect(dataDir);
  try {
    const report = await verifyActivityChains(connection.db, company?.toLowerCase());
    console.log(formatReport(report));
    return report.firstBreak ? 1 : 0;
  } finally {
    await connection.close();
  }
}

export function formatReport(report: ChainReport): string {
  const broken = report.firstBreak;
  if (!broken) return `OK: ${report.entries} entries in ${report.chains} chains`;
  return `BROKEN: chain ${broken.chain} at seq ${broken.seq} (entry ${broken.entryId ?? 'none'}): ${broken.reason}`;
}

async function connect(dataDir: string): Promise<{ db: Database; close(): Promise<void> }> {
  // Loaded here so that usage errors answer without loading the database stack.
  const { openToolDatabase, ToolDatabaseError } = await import('./tool-database.ts');
  let connection: { db: Database; close(): Promise<void> };
  try {
    connection = await openToolDatabase(dataDir, { poolSize: 2 });
  } catch (error) {
    if (error instanceof ToolDatabaseError) throw new UsageError(error.message);
    throw new UsageError(`Could not connect to the database: ${(error as Error).message}`);
  }
  try {
    await connection.db.query('select 1 from activity_log limit 1');
  } catch (error) {
    await connection.close();
    throw new UsageError(`Could not read the activity log: ${(error as Error).message}`);
  }
  return connection;
}

if (import.meta.main) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: Error) => {
      console.error(error instanceof UsageError || error.name === 'TypeError' ? error.message : `activity:verify failed: ${error.message}`);
      process.exit(2);
    },
  );
}
