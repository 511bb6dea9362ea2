import { MikroORM } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import type pg from 'pg';
import type { Logger } from 'pino';
import { installBridgeFunctions } from './bridge-functions.ts';
import { kernelMigrations } from './migrations/index.ts';
import { connectionConfig, IDLE_CONNECTIONS } from './connections.ts';
import type { CompanyCache } from './company-cache.ts';

/**
 * The kernel's access to PostgreSQL. MikroORM creates the pool and runs the migrations; kernel
 * services speak SQL (placeholders are `?`, or `$1` in a prepared statement) straight to that
 * pg pool, because their hot paths (actor resolution, the activity hash chain, row locks) need
 * exact statements rather than a unit of work, and a statement should cost its round trip and
 * nothing more. See kernel/db/README.md.
 */
export interface Queryable {
  /** All rows. */
  query<T = Row>(sql: string | PreparedStatement, params?: readonly unknown[]): Promise<T[]>;
  /** The first row, or undefined. */
  maybeOne<T = Row>(sql: string | PreparedStatement, params?: readonly unknown[]): Promise<T | undefined>;
  /** Affected row count of a statement. */
  exec(sql: string | PreparedStatement, params?: readonly unknown[]): Promise<number>;
}

export type Row = Record<string, any>;

/**
 * A statement on a hot path, parsed and planned once per connection instead of once per call:
 * its text has `$1`-style parameters, and its values travel beside it, never formatted into it
 * (as `?` statements are). Planning alone was about 40% of the database's statement time in a
 * busy fleet (test/bench/fleet.bench.ts), most of it for the same few statements run again and
 * again. In a transaction as outside one.
 */
export interface PreparedStatement { readonly name: string; readonly text: string }

const preparedNames = new Set<string>();

/** Declares a prepared statement once, at module level; its name is unique in the process. */
export function prepared(name: string, text: string): PreparedStatement {
  if (preparedNames.has(name)) throw new Error(`prepared statement ${name} is declared twice`);
  preparedNames.add(name);
  return { name: `keel_${name}`, text };
}

export interface Tx extends Queryable {
  /** Runs `fn` after the transaction commits (never when it rolls back). */
  afterCommit(fn: () => void | Promise<void>): void;
}

export class Database implements Queryable {
  readonly orm: MikroORM;
  /** Runs after every committed transaction (the kernel waits for cache invalidations here). */
  afterEveryCommit?: () => Promise<void>;
  /** Read-through cache of company rows, evicted by database notifications (company-cache.ts). */
  companyCache?: CompanyCache;
  /** The DATABASE_URL this pool connects with (possibly a host list): other connections of the kernel use it too. */
  readonly url: string;
  private readonly connection;

  private constructor(orm: MikroORM, url: string) {
    this.orm = orm;
    this.url = url;
    this.connection = orm.em.getConnection();
    this.platform = orm.em.getPlatform();
  }

  static async connect(url: string, options: { poolSize?: number; log?: Logger } = {}): Promise<Database> {
    // MikroORM reads one host from clientUrl; with a host list, the walking client class (connections.ts) picks the server.
    const { connectionString, Client } = connectionConfig(url);
    const orm = await MikroORM.init({
      clientUrl: connectionString,
      ...(Client ? { driverOptions: { Client } } : {}),
      entities: [],
      discovery: { warnWhenNoEntities: false },
      extensions: [Migrator],
      migrations: { migrationsList: kernelMigrations, tableName: 'kernel_migrations', silent: true, snapshot: false },
      pool: { ...IDLE_CONNECTIONS, max: options.poolSize ?? 20 },
      debug: false,
    });
    return new Database(orm, url);
  }

  /**
   * Applies pending kernel migrations (up to and including `to`, a database restore's recorded
   * state, when given); an advisory lock keeps concurrent kernels from racing. Migrated to the
   * latest (also when `to` is the latest), it then installs the capability folders' bridge functions
   * that changed, under the same lock (bridge-functions.ts); a restore to an earlier state leaves them as restored.
   */
  async migrate(to?: string): Promise<string[]> {
    const client = await (await this.pool()).connect();
    try {
      await client.query('select pg_advisory_lock(727001)');
      const applied = await this.orm.migrator.up(to === undefined ? undefined : { to });
      // At the latest state (a restore of a backup this version took is migrated to it by name),
      // the folders' bridge functions are this version's: a function no migration made exists only once installed.
      if (to === undefined || (await this.orm.migrator.getPending()).length === 0) await installBridgeFunctions(client);
      return applied.map((m) => m.name);
    } finally {
      await client.query('select pg_advisory_unlock(727001)').catch(() => undefined);
      client.release();
    }
  }

  async query<T = Row>(sql: string | PreparedStatement, params: readonly unknown[] = []): Promise<T[]> {
    return rowsOf(await this.pooled(sql, params)) as T[];
  }

  async maybeOne<T = Row>(sql: string | PreparedStatement, params: readonly unknown[] = []): Promise<T | undefined> {
    const rows = await this.query<T>(sql, params);
    return rows[0];
  }

  async exec(sql: string | PreparedStatement, params: readonly unknown[] = []): Promise<number> {
    return affectedBy(await this.pooled(sql, params));
  }

  /**
   * One statement on a pooled connection. Not pg's Pool.query: that closes the connection
   * whenever its statement fails, so a unique violation or a malformed id from a request
   * (answered 4xx) would cost a new connection and its prepared statements. A connection that
   * broke is dropped by the pool on release all the same.
   */
  private async pooled(sql: string | PreparedStatement, params: readonly unknown[]): Promise<pg.QueryResult | pg.QueryResult[]> {
    const client = await (await this.pool()).connect();
    try {
      return await this.send(client, sql, params);
    } finally {
      client.release();
    }
  }

  private nativePool?: pg.Pool;

  /** MikroORM's own pg pool: its connections, type parsers and failover (connections.ts). */
  private async pool(): Promise<pg.Pool> {
    this.nativePool ??= await (this.connection as unknown as { getNativeClient(): Promise<pg.Pool> }).getNativeClient();
    return this.nativePool;
  }

  /**
   * One statement on a connection (pooled, or a transaction's). A `?` statement has its values
   * formatted into its text as literals (MikroORM's platform formatting, as the kernel's SQL has
   * always been read); a prepared one is sent with its name and values, and the pg driver parses
   * it once per connection.
   */
  send(on: pg.PoolClient, sql: string | PreparedStatement, params: readonly unknown[]): Promise<pg.QueryResult | pg.QueryResult[]> {
    if (typeof sql !== 'string') return on.query({ name: sql.name, text: sql.text, values: params as unknown[] });
    return on.query(params.length === 0 ? sql : this.platform.formatQuery(sql, params as unknown[]));
  }

  private readonly platform;

  /**
   * Runs `fn` in one transaction on one connection; it commits when `fn` resolves and rolls
   * back when it throws. A connection whose rollback failed (it broke mid-transaction) is
   * closed, not pooled again.
   */
  async transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    const callbacks: Array<() => void | Promise<void>> = [];
    const client = await (await this.pool()).connect();
    let broken: Error | undefined;
    let result: T;
    try {
      try {
        await client.query('begin');
      } catch (error) {
        broken = error as Error;
        throw error;
      }
      try {
        result = await fn(new TransactionScope(this, client, callbacks));
        await client.query('commit');
      } catch (error) {
        await client.query('rollback').catch((failure: Error) => { broken = failure; });
        throw error;
      }
    } finally {
      client.release(broken);
    }
    if (this.afterEveryCommit) await this.afterEveryCommit();
    for (const callback of callbacks) {
      try { await callback(); } catch { /* after-commit work must not fail the committed request */ }
    }
    return result;
  }

  async close(): Promise<void> {
    await this.orm.close(true);
  }
}

/** A multi-statement text answers one result per statement: its rows are not any one statement's (none are returned). */
function rowsOf(result: pg.QueryResult | pg.QueryResult[]): Row[] {
  return Array.isArray(result) ? [] : result.rows ?? [];
}

/** Rows written by an INSERT, UPDATE, DELETE or MERGE; rows answered by anything else. */
function affectedBy(result: pg.QueryResult | pg.QueryResult[]): number {
  if (Array.isArray(result)) return 0;
  return ['INSERT', 'UPDATE', 'DELETE', 'MERGE'].includes(result.command) ? result.rowCount ?? 0 : (result.rows ?? []).length;
}

class TransactionScope implements Tx {
  private readonly db: Database;
  private readonly client: pg.PoolClient;
  private readonly callbacks: Array<() => void | Promise<void>>;

  constructor(db: Database, client: pg.PoolClient, callbacks: Array<() => void | Promise<void>>) {
    this.db = db;
    this.client = client;
    this.callbacks = callbacks;
  }

  async query<T = Row>(sql: string | PreparedStatement, params: readonly unknown[] = []): Promise<T[]> {
    return rowsOf(await this.db.send(this.client, sql, params)) as T[];
  }

  async maybeOne<T = Row>(sql: string | PreparedStatement, params: readonly unknown[] = []): Promise<T | undefined> {
    const rows = await this.query<T>(sql, params);
    return rows[0];
  }

  async exec(sql: string | PreparedStatement, params: readonly unknown[] = []): Promise<number> {
    return affectedBy(await this.db.send(this.client, sql, params));
  }

  afterCommit(fn: () => void | Promise<void>): void {
    this.callbacks.push(fn);
  }
}

/** PostgreSQL timestamps arrive as text; the API speaks ISO 8601. */
export function iso(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value.toISOString();
  return new Date(String(value)).toISOString();
}

/** bigint columns arrive as text; cents stay well inside the safe integer range. */
export function int(value: unknown): number {
  return value === null || value === undefined ? 0 : Number(value);
}
