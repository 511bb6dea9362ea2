import { createWriteStream } from 'node:fs';
import { open, rename, rm, stat } from 'node:fs/promises';
import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import { createGzip, type Gzip } from 'node:zlib';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { newClient } from '../db/connections.ts';
import {
  END_OF_FILE, END_OF_TABLE, KERNEL_SCHEMAS, MAGIC, MIGRATION_TABLES, qualified, quoteIdent, TABLE_PREFIX,
  type BackupHeader, type BackupPlugin, type BackupSequence,
} from './snapshot-format.ts';

export interface SnapshotProgress {
  /** `schema.table` being copied now, or null once every table is done. */
  table: string | null;
  tablesDone: number;
  tablesTotal: number;
  /** Uncompressed bytes of row data copied so far. */
  bytes: number;
}

export interface SnapshotResult { header: BackupHeader; sizeBytes: number; dataBytes: number }

/**
 * Writes a consistent snapshot of the kernel's and the plugins' tables to `file` (format in
 * snapshot-format.ts): one REPEATABLE READ READ ONLY transaction on a connection of its own,
 * every table streamed with COPY ... TO STDOUT into gzip. The file appears only when complete
 * (written as `<file>.partial`, then renamed); a failed backup leaves nothing behind. The
 * partial file is created exclusively: a name already taken fails this backup rather than
 * interleaving two writers in one file.
 */
export async function writeSnapshot(databaseUrl: string, file: string, onProgress?: (progress: SnapshotProgress) => void): Promise<SnapshotResult> {
  const partial = `${file}.partial`;
  // Opened before anything else: an existing partial file of that name is someone else's.
  const handle = await open(partial, 'wx', 0o600);
  const client = newClient(databaseUrl, { application_name: 'keel-backup' });
  client.on('error', () => undefined);
  const gzip = createGzip({ level: 6 });
  const out = createWriteStream(partial, { fd: handle });
  gzip.pipe(out);
  const written = finished(out);
  let dataBytes = 0;
  try {
    await client.connect();
    await client.query('begin isolation level repeatable read read only');
    const header = await readHeader(client);
    await write(gzip, `${MAGIC}\n${JSON.stringify(header)}\n`);
    let done = 0;
    for (const table of header.tables) {
      const name = `${table.schema}.${table.table}`;
      onProgress?.({ table: name, tablesDone: done, tablesTotal: header.tables.length, bytes: dataBytes });
      await write(gzip, `${TABLE_PREFIX}${JSON.stringify(table)}\n`);
      const rows = client.query(copyTo(`copy ${qualified(table.schema, table.table)} (${table.columns.map(quoteIdent).join(', ')}) to stdout`));
      for await (const chunk of rows as AsyncIterable<Buffer>) {
        dataBytes += chunk.length;
        await write(gzip, chunk);
      }
      await write(gzip, `${END_OF_TABLE}\n`);
      done++;
    }
    await write(gzip, `${END_OF_FILE}\n`);
    await client.query('commit');
    gzip.end();
    await written;
    await rename(partial, file);
    onProgress?.({ table: null, tablesDone: done, tablesTotal: header.tables.length, bytes: dataBytes });
    return { header, sizeBytes: (await stat(file)).size, dataBytes };
  } catch (error) {
    gzip.destroy();
    out.destroy();
    await written.catch(() => undefined);
    await rm(partial, { force: true });
    throw error;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function write(gzip: Gzip, data: string | Buffer): Promise<void> {
  if (!gzip.write(data)) await once(gzip, 'drain');
}

async function readHeader(client: pg.Client): Promise<BackupHeader> {
  const { rows: [info] } = await client.query<{ version: string; database: string }>(
    `select current_setting('server_version') as version, current_database() as database`);
  const { rows: kernel } = await client.query<{ name: string }>('select name from kernel_migrations order by id');
  const { rows: pluginRows } = await client.query<{ key: string; version: string; display_name: string; source_kind: string; source_path: string; manifest: Record<string, unknown>; db_namespace: string }>(
    `select p.key, p.version, p.display_name, p.source_kind, p.source_path, p.manifest, p.db_namespace
       from plugins p join pg_namespace n on n.nspname = 'plugin_' || p.db_namespace
      where p.db_namespace is not null order by p.key`);
  const { rows: applied } = await client.query<{ plugin_key: string; name: string; checksum: string }>(
    'select plugin_key, name, checksum from plugin_migrations order by plugin_key, name');
  const plugins: BackupPlugin[] = pluginRows.map((row) => ({
    key: row.key,
    schema: `plugin_${row.db_namespace}`,
    row: { key: row.key, version: row.version, displayName: row.display_name, sourceKind: row.source_kind, sourcePath: row.source_path, manifest: row.manifest, dbNamespace: row.db_namespace },
    migrations: applied.filter((m) => m.plugin_key === row.key).map((m) => ({ name: m.name, checksum: m.checksum })),
  }));
  const schemas = [...KERNEL_SCHEMAS, ...plugins.map((p) => p.schema)];
  const { rows: relations } = await client.query<{ schema: string; name: string; kind: string; columns: string[] | null }>(
    `select n.nspname as schema, c.relname as name, c.relkind::text as kind,
            array(select a.attname::text from pg_attribute a
                   where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''
                   order by a.attnum) as columns
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = any($1) and c.relkind in ('r', 'S')
      order by n.nspname, c.relname`, [schemas]);
  const tables = relations
    .filter((r) => r.kind === 'r' && !MIGRATION_TABLES.has(`${r.schema}.${r.name}`))
    .map((r) => ({ schema: r.schema, table: r.name, columns: r.columns ?? [] }));
  const sequences: BackupSequence[] = [];
  for (const r of relations.filter((rel) => rel.kind === 'S')) {
    // Sequences are outside the snapshot: a value read now may be ahead of the rows, which only leaves a gap.
    const { rows: [value] } = await client.query<{ last_value: string; is_called: boolean }>(
      `select last_value::text, is_called from ${qualified(r.schema, r.name)}`);
    sequences.push({ schema: r.schema, name: r.name, lastValue: value!.last_value, isCalled: value!.is_called });
  }
  return {
    format: 1, createdAt: new Date().toISOString(), serverVersion: info!.version, database: info!.database,
    kernelMigrations: kernel.map((k) => k.name), plugins, sequences, tables,
  };
}
