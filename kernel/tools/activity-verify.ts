import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { verifyActivityChains, type ChainReport } from '../activity/verify-chain.ts';
import { defaultDataDir } from '../config/load.ts';
import type { Database } from '../db/database.ts';
import type { EmbeddedDatabase } from '../db/embedded-postgres.ts';

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
  const { Database } = await import('../db/database.ts');
  let url = process.env.DATABASE_URL;
  let embedded: EmbeddedDatabase | undefined;
  if (!url) {
    const credentialsFile = join(dataDir, 'db.json');
    if (!existsSync(credentialsFile)) {
      throw new UsageError(`No embedded database in ${dataDir} (db.json is missing); set DATABASE_URL or pass --data-dir`);
    }
    const credentials = JSON.parse(readFileSync(credentialsFile, 'utf8')) as { password: string; port: number };
    const adminUrl = `postgres://keel:${encodeURIComponent(credentials.password)}@127.0.0.1:${credentials.port}/postgres`;
    if (!(await reachable(adminUrl))) {
      // Not running: start the data directory's server just for this check.
      const { startEmbeddedPostgres } = await import('../db/embedded-postgres.ts');
      const { createLogger } = await import('../logger.ts');
      embedded = await startEmbeddedPostgres(dataDir, createLogger('warn'));
      url = embedded.url;
    } else {
      url = adminUrl;
    }
    url = url.replace(/\/postgres$/, '/keel');
  }
  let db: Database;
  try {
    db = await Database.connect(url, { poolSize: 2 });
    await db.query('select 1 from activity_log limit 1');
  } catch (error) {
    await embedded?.stop();
    throw new UsageError(`Could not read the activity log: ${(error as Error).message}`);
  }
  return {
    db,
    async close() {
      await db.close();
      await embedded?.stop();
    },
  };
}

/** Only a refused connection means "not running"; anything else (bad password) must not start a second server. */
async function reachable(url: string): Promise<boolean> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === 'ECONNREFUSED') return false;
    throw new UsageError(`Could not connect to the embedded database: ${(error as Error).message}`);
  } finally {
    await client.end().catch(() => undefined);
  }
}

if (import.meta.main) {
  // Exit explicitly: the embedded PostgreSQL library installs an exit hook that would otherwise exit with 0.
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: Error) => {
      console.error(error instanceof UsageError || error.name === 'TypeError' ? error.message : `activity:verify failed: ${error.message}`);
      process.exit(2);
    },
  );
}
