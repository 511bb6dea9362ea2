import { defineCapability, method } from './define.ts';
import { text } from './schemas.ts';

export interface QueryResult<T> { rows: T[]; rowCount: number }

export interface DatabaseCapability {
  /** One statement, `$1`-style parameters, run in the plugin's own schema under its own role. */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<QueryResult<T>>;
}

const query = method('worker', [text(100_000), { type: 'array', maxItems: 1000 }], { type: 'object', required: ['rows', 'rowCount'], properties: { rows: { type: 'array' }, rowCount: { type: 'integer' } } }, { required: 1, scope: 'instance' });

export const databaseRead = defineCapability<{ db: DatabaseCapability }>()({
  id: 'database.namespace.read',
  summary: "Read the tables of the plugin's own schema",
  members: { db: { query } },
});

export const databaseWrite = defineCapability<{ db: DatabaseCapability }>()({
  id: 'database.namespace.write',
  summary: "Read and write the tables of the plugin's own schema",
  members: { db: { query } },
});

export const databaseMigrate = defineCapability()({
  id: 'database.namespace.migrate',
  summary: "Create and change the plugin's own schema with its migrations",
  members: {},
});

/** The manifest's database section needs one of the three (checked in validate-manifest). */
export const DATABASE_CAPABILITIES = [databaseRead.id, databaseWrite.id, databaseMigrate.id] as const;
