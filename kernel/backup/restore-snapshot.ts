import { createReadStream, existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { newClient } from '../db/connections.ts';
import type { PluginManifest } from '../../sdk/plugin/manifest.ts';
import type { Database } from '../db/database.ts';
import { PluginDatabases } from '../host/plugin-databases.ts';
import {
  END_OF_FILE, END_OF_TABLE, MAGIC, qualified, quoteIdent, TABLE_PREFIX,
  type BackupHeader, type TableSection,
} from './snapshot-format.ts';

export class RestoreError extends Error {}

export interface RestoreProgress { table: string | null; tablesDone: number; tablesTotal: number; rows: number }

export interface RestoreOptions {
  db: Database;
  databaseUrl: string;
  file: string;
  /** Secret the plugin roles' passwords derive from (the kernel's, so the roles match the kernel's). */
  hostSecret: Buffer;
  /** Where first-party plugins live, for a plugin whose recorded folder is gone. */
  firstPartyDir: string;
  onProgress?: (progress: RestoreProgress) => void;
}

/**
 * Restores a backup (snapshot-format.ts) into an empty database: the kernel's migrations up to
 * the recorded one, each plugin's migrations exactly as recorded (same names, same checksums:
 * the same plugins must be installed), then every table's rows with COPY FROM in one
 * transaction, triggers and foreign-key checks off (session_replication_role = replica, which
 * needs a superuser: the embedded PostgreSQL's own), then the sequences. A failure before the
 * data transaction leaves migrated but empty tables: drop the database and run it again.
 */
export async function restoreSnapshot(options: RestoreOptions): Promise<{ header: BackupHeader; rows: number }> {
  const header = await readHeader(options.file);
  await assertEmpty(options.db);
  await migrateKernel(options.db, header);
  await migratePlugins(options, header);
  const rows = await copyRows(options, header);
  return { header, rows };
}

async function readHeader(file: string): Promise<BackupHeader> {
  const lines = lineReader(file);
  try {
    const first = await lines.next();
    if (first.value !== MAGIC) throw new RestoreError(`${file} is not a Keel database backup`);
    const header = await lines.next();
    return JSON.parse(header.value as string) as BackupHeader;
  } catch (error) {
    if (error instanceof RestoreError) throw error;
    throw new RestoreError(`${file} is not a readable Keel database backup: ${(error as Error).message}`);
  } finally {
    await lines.return(undefined);
  }
}

async function* lineReader(file: string): AsyncGenerator<string, void, undefined> {
  const input = createReadStream(file).pipe(createGunzip());
  const lines = createInterface({ input, crlfDelay: Infinity });
  try {
    yield* lines;
  } finally {
    lines.close();
    input.destroy();
  }
}

async function assertEmpty(db: Database): Promise<void> {
  const kernel = await db.maybeOne<{ exists: boolean }>(`select to_regclass('public.kernel_migrations') is not null as exists`);
  const applied = kernel?.exists ? await db.maybeOne<{ n: number }>('select count(*)::int as n from kernel_migrations') : undefined;
  const pluginSchemas = await db.maybeOne<{ n: number }>(`select count(*)::int as n from pg_namespace where nspname like 'plugin\\_%'`);
  if ((applied?.n ?? 0) > 0 || (pluginSchemas?.n ?? 0) > 0) {
    throw new RestoreError('The target database is not empty; restore into a new database (a new data directory, or an empty DATABASE_URL)');
  }
}

async function migrateKernel(db: Database, header: BackupHeader): Promise<void> {
  const last = header.kernelMigrations.at(-1);
  if (!last) throw new RestoreError('The backup records no kernel migrations');
  const known = (await db.orm.migrator.getPending()).map((m) => m.name);
  const missing = header.kernelMigrations.filter((name) => !known.includes(name));
  if (missing.length > 0) throw new RestoreError(`This Keel lacks kernel migrations the backup was taken with (${missing.join(', ')}); restore with the same or a newer version`);
  await db.migrate(last);
  const applied = (await db.query<{ name: string }>('select name from kernel_migrations order by id')).map((r) => r.name);
  if (applied.join('\n') !== header.kernelMigrations.join('\n')) {
    throw new RestoreError(`Kernel migrations ran as ${applied.join(', ')}, not as the backup records`);
  }
}

async function migratePlugins(options: RestoreOptions, header: BackupHeader): Promise<void> {
  if (header.plugins.length === 0) return;
  const databases = new PluginDatabases(options.db, options.hostSecret, options.databaseUrl);
  await databases.init();
  for (const plugin of header.plugins) {
    const { row } = plugin;
    // The plugin's row first: its migrations are recorded against it. The data copy replaces it.
    await options.db.exec(
      `insert into plugins (key, version, display_name, source_kind, source_path, manifest, db_namespace)
       values (?, ?, ?, ?, ?, ?::jsonb, ?)`,
      [row.key, row.version, row.displayName, row.sourceKind, row.sourcePath, JSON.stringify(row.manifest), row.dbNamespace]);
    const folder = [row.sourcePath, join(options.firstPartyDir, row.key)].find((dir) => dir && existsSync(join(dir, 'plugin.json')));
    if (!folder) throw new RestoreError(`Plugin ${row.key} is not installed here (looked in ${row.sourcePath}); install the plugins the backup was taken with`);
    const upTo = new Map(plugin.migrations.map((m) => [m.name, m.checksum]));
    try {
      await databases.prepare(row.manifest as unknown as PluginManifest, [], folder, { migrate: true, upTo });
    } catch (error) {
      throw new RestoreError(`Plugin ${row.key}: ${(error as Error).message}`);
    }
  }
}

async function copyRows(options: RestoreOptions, header: BackupHeader): Promise<number> {
  const client = newClient(options.databaseUrl, { application_name: 'keel-restore' });
  client.on('error', () => undefined);
  await client.connect();
  const lines = lineReader(options.file);
  let rows = 0;
  try {
    await client.query('begin');
    await client.query('set local session_replication_role = replica');
    // Migrations may have seeded rows: the backup's rows replace them, all tables at once.
    if (header.tables.length > 0) await client.query(`truncate ${header.tables.map((t) => qualified(t.schema, t.table)).join(', ')}`);
    await lines.next();
    await lines.next();
    let done = 0;
    for (;;) {
      const next = await lines.next();
      if (next.done) throw new RestoreError('The backup file ends early (it is truncated)');
      if (next.value === END_OF_FILE) break;
      if (!next.value.startsWith(TABLE_PREFIX)) throw new RestoreError('The backup file is damaged (a table section was expected)');
      const table = JSON.parse(next.value.slice(TABLE_PREFIX.length)) as TableSection;
      const name = `${table.schema}.${table.table}`;
      options.onProgress?.({ table: name, tablesDone: done, tablesTotal: header.tables.length, rows });
      const copy = client.query(copyFrom(`copy ${qualified(table.schema, table.table)} (${table.columns.map(quoteIdent).join(', ')}) from stdin`));
      const copied = finished(copy);
      copied.catch(() => undefined);
      let batch: string[] = [];
      for (;;) {
        const line = await lines.next();
        if (line.done) throw new RestoreError(`The backup file ends inside table ${name} (it is truncated)`);
        if (line.value === END_OF_TABLE) break;
        batch.push(line.value);
        rows++;
        if (batch.length >= 1000) {
          if (!copy.write(`${batch.join('\n')}\n`)) await Promise.race([once(copy, 'drain'), copied]);
          batch = [];
        }
      }
      if (batch.length > 0) copy.write(`${batch.join('\n')}\n`);
      copy.end();
      await copied;
      done++;
    }
    for (const sequence of header.sequences) {
      await client.query(`select setval($1::regclass, $2::bigint, $3)`, [qualified(sequence.schema, sequence.name), sequence.lastValue, sequence.isCalled]);
    }
    await client.query('commit');
    options.onProgress?.({ table: null, tablesDone: done, tablesTotal: header.tables.length, rows });
    return rows;
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  } finally {
    await lines.return(undefined);
    await client.end().catch(() => undefined);
  }
}
