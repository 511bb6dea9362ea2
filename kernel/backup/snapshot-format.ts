/**
 * The database backup file: gzip of
 *
 *   KEEL-DATABASE-BACKUP 1\n
 *   <header JSON>\n
 *   then for every table:
 *   @table <JSON {schema, table, columns}>\n
 *   <the table's rows in PostgreSQL's COPY text format, one line a row>
 *   \.\n
 *   and last: @end\n
 *
 * COPY text escapes every backslash and newline inside a value, so no row is ever the line
 * `\.`: a reader takes every line after `@table` as a row until that terminator.
 *
 * Why not pg_dump: the embedded server is PostgreSQL 18 and ships no client tools, and no
 * pg_dump this machine can install accepts an 18 server. The snapshot is taken by the server
 * itself (COPY in one REPEATABLE READ transaction), so it is consistent and version-exact;
 * the schema is not in the file but rebuilt by the kernel's and the plugins' own migrations
 * up to the state the header records (restore.ts).
 */
export const MAGIC = 'KEEL-DATABASE-BACKUP 1';
export const TABLE_PREFIX = '@table ';
export const END_OF_TABLE = '\\.';
export const END_OF_FILE = '@end';

/** Schemas of the kernel whose tables are backed up (the job queue's own schema is not). */
export const KERNEL_SCHEMAS = ['public', 'keel_private', 'keel_host', 'keel_events', 'keel_bridge'] as const;

/**
 * The kernel's migration state is rebuilt by running its migrations, never copied. (The
 * plugins' plugin_migrations rows are copied like any table: the restore's migrations wrote the
 * same rows, and the table's foreign key to plugins makes it part of the truncate-and-copy.)
 */
export const MIGRATION_TABLES = new Set(['public.kernel_migrations']);

export interface BackupPlugin {
  key: string;
  /** Database schema of the plugin (`plugin_<namespace>`). */
  schema: string;
  /** Row of the plugins table the restore needs before the plugin's migrations can run. */
  row: { key: string; version: string; displayName: string; sourceKind: string; sourcePath: string; manifest: Record<string, unknown>; dbNamespace: string };
  /** Applied migrations in order, with the checksum of the file that was applied. */
  migrations: Array<{ name: string; checksum: string }>;
}

export interface BackupSequence { schema: string; name: string; lastValue: string; isCalled: boolean }

export interface BackupHeader {
  format: 1;
  createdAt: string;
  serverVersion: string;
  database: string;
  /** Kernel migrations applied, in order. */
  kernelMigrations: string[];
  plugins: BackupPlugin[];
  sequences: BackupSequence[];
  tables: Array<{ schema: string; table: string; columns: string[] }>;
}

export interface TableSection { schema: string; table: string; columns: string[] }

/** Double-quoted SQL identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

export function qualified(schema: string, table: string): string {
  return `${quoteIdent(schema)}.${quoteIdent(table)}`;
}
