import pg from 'pg';
import type { Invocation } from '../invocation.ts';
import { refusedStatement } from '../../../../sdk/shared/sql-guard.ts';
import { cancelStatement } from '../statement-cancel.ts';
import { CapabilityError, type WorkerCapability } from './types.ts';
import { isolateJsonTypes } from './timestamp-text.ts';
import { connectionConfig, IDLE_CONNECTIONS } from '../../../db/connections.ts';
import { StatementNames } from '../../../db/statement-names.ts';
import { DATABASE_UNAVAILABLE, isDatabaseUnavailable } from '../../../db/connection-errors.ts';
import { READ_WRITE } from '../read-write.ts';

const MAX_SQL_LENGTH = 100_000;
const MAX_PARAMS = 1000;
const MAX_ROWS = 10_000;
const MAX_NAMED_STATEMENTS = 200;
/** Connections each plugin's pool holds in a worker (one pool per plugin, shared by its concurrent calls). */
export const PLUGIN_POOL_CONNECTIONS = 16;
/** Connections of the second pool for statements that commit on their own (PluginDatabase.autonomous). */
const AUTONOMOUS_CONNECTIONS = 2;
/**
 * A plugin connection is read-only unless a transaction says otherwise (BEGIN READ WRITE): a
 * statement outside a transaction (a read-only call's) is read-only by the session's default,
 * and a write that lost its BEGIN fails rather than commits. It is set once the connection is
 * open, and again after every reset, never in the startup packet: a session that starts
 * read-only by default is not `read-write` to a multi-host DATABASE_URL's server choice
 * (kernel/db/connections.ts), which would then find no primary at all.
 */
const READ_ONLY_DEFAULT = 'SET default_transaction_read_only = on';
/** The full reset where sessions are reset, then the read-only default again (two statements: DISCARD ALL refuses to run in a multi-statement query). */
const DISCARD_ALL = ['DISCARD ALL', READ_ONLY_DEFAULT];

/**
 * What DISCARD ALL would reset that a plugin can still set on a hardened database: the values
 * lastval() and currval() answer (any insert with a serial sets them), and settings, listeners
 * and open cursors a function it declared could leave. Prepared statements are kept (they are
 * the host's, and their texts are hidden: pg_prepared_statement() is revoked from plugin roles).
 */
const SESSION_RESET = `DISCARD SEQUENCES; RESET ALL; CLOSE ALL; UNLISTEN *; ${READ_ONLY_DEFAULT}`;
const CANCEL_ATTEMPTS = 20;
const CANCEL_RETRY_MS = 100;

/**
 * `ctx.db`: SQL in the plugin's own schema, under the plugin's own login role, so that the
 * database (not string checks) confines it. One statement per call over the extended
 * protocol; results are bounded. Transactional invocations use the client that holds their
 * transaction; read-only and non-transactional ones take a pooled client per statement (a
 * read-only one runs in no transaction: connections are read-only by default) and give it back
 * with its session state reset, pipelined with the statement (see pooled).
 *
 * The pool is reached only through the methods below, each of which knows the call it serves:
 * a call holding a connection (its transaction) never waits for a second one. Were it to, a
 * burst of calls as large as the pool could each hold a connection (and row locks the others
 * wait on) while waiting for one more, and the worker would hang until the kernel killed it.
 */
export class PluginDatabase {
  private readonly pool: pg.Pool;
  private readonly resetSessions: boolean;
  private readonly poolConfig: pg.PoolConfig;
  /** Connections for statements that commit on their own (see autonomous), opened on first use. */
  private autonomousPool: pg.Pool | null = null;

  /**
   * `resetSessions`: whether pooled connections must be reset (DISCARD ALL) when returned.
   * Where the database took advisory locks, set_config, temporary tables, large objects and
   * pg_prepared_statement() from plugin roles and the SQL guard refuses SET, LISTEN, PREPARE and
   * cursors, what a call can leave behind is narrower: the session's sequence values (lastval,
   * currval) and, through a function a plugin declared, settings, listeners and cursors. Those
   * are reset with SESSION_RESET, in the same round trip as the COMMIT or ROLLBACK that ends a
   * transaction, and DISCARD ALL (which measurably slows every write, and would drop the host's
   * prepared statements) is skipped.
   */
  constructor(url: string, schema: string, maxConnections: number, resetSessions = true, applicationName = `keel-plugin-${schema}`) {
    this.resetSessions = resetSessions;
    // connectionConfig: a DATABASE_URL with a host list follows the primary (kernel/db/connections.ts).
    this.poolConfig = connectionConfig<pg.PoolConfig>(url, {
      max: maxConnections,
      ...IDLE_CONNECTIONS,
      // Read-only by default too, but not from here (READ_ONLY_DEFAULT).
      options: `-c search_path=${schema} -c statement_timeout=30000 -c idle_in_transaction_session_timeout=60000`,
      application_name: applicationName,
      // Date and time columns reach the isolate as JSON: read straight into that text (timestamp-text.ts).
      types: isolateJsonTypes(),
      // Statements queued on a connection go out at once instead of each waiting for the one
      // before it to answer: a call's BEGIN travels with its first statement (one round trip,
      // not two). Each statement keeps its own Sync, so one that fails aborts the transaction
      // exactly as it would sent alone, and the ones after it fail as they would after it.
      pipeline: true,
    } as pg.PoolConfig);
    this.pool = new pg.Pool(this.poolConfig);
    this.pool.on('error', () => { /* a broken idle client is dropped by the pool */ });
    // pg-pool takes its own error listener off a client while a call holds it, and an 'error'
    // event nobody listens to ends the worker: a database lost mid-transaction (a failover)
    // would take every plugin of the process down. The statement in flight fails on its own, and
    // a client whose connection ended is not pooled again.
    this.pool.on('connect', (client) => {
      client.on('error', () => undefined);
      // Queued ahead of anything the pool's first user sends on this connection.
      client.query(READ_ONLY_DEFAULT).catch(() => undefined);
    });
  }

  /**
   * Names for statements run often, so that each connection parses and plans them once. Only
   * where sessions are not reset (DISCARD ALL would drop them under the driver's feet), and for
   * a bounded number of distinct texts: a plugin that builds SQL dynamically stays unnamed.
   */
  private readonly statementNames = new StatementNames('keel_s', MAX_NAMED_STATEMENTS);

  private statementName(sql: string): string | undefined {
    return this.resetSessions ? undefined : this.statementNames.of(sql);
  }

  /** Statements in flight per connection (and who waits for them to end), so that a call that ends can cancel its own. */
  private readonly busy = new Map<pg.PoolClient, { count: number; idle: Array<() => void> }>();
  /** Connections whose statement was cancelled: they are closed, not pooled again. */
  private readonly cancelled = new WeakSet<pg.PoolClient>();

  /** Runs one statement of an invocation on a connection, counted while it is in flight. */
  async statement<T>(client: pg.PoolClient, run: () => Promise<T>): Promise<T> {
    // A pooled connection the call's end cancelled before its statement began: the statement must not start.
    if (this.cancelled.has(client)) throw new CapabilityError(409, 'invocation_closed', 'This ctx belongs to an invocation that has finished');
    const entry = this.busy.get(client) ?? { count: 0, idle: [] };
    entry.count++;
    this.busy.set(client, entry);
    try {
      return await run();
    } catch (error) {
      // Every capability's statements come here: a lost server is a retryable 503 for all of them, never the plugin's SQL at fault.
      if (!(error instanceof CapabilityError) && isDatabaseUnavailable(error)) throw new CapabilityError(DATABASE_UNAVAILABLE.status, DATABASE_UNAVAILABLE.code, DATABASE_UNAVAILABLE.message);
      throw error;
    } finally {
      if (--entry.count === 0) {
        this.busy.delete(client);
        for (const wake of entry.idle.splice(0)) wake();
      }
    }
  }

  /**
   * Cancels what a connection is running, if anything: a statement must not outlive the call
   * that started it (statement_timeout alone would let it run for 30 s, also after its worker
   * is gone). Answers whether there was one. A cancel reaches the server-side statement only
   * once it runs there (the driver may still be waiting for the BEGIN before it), so it is sent
   * again every 100 ms until the statement has ended, for up to 2 s. The connection is closed
   * when it is released, so a cancel that arrives late can never hit another call's statement.
   */
  async cancel(client: pg.PoolClient, pooled = false): Promise<boolean> {
    const entry = this.busy.get(client);
    // A pooled connection of the call is running its statement or about to start it: either way it is closed after.
    if (pooled) this.cancelled.add(client);
    if (!entry) return false;
    this.cancelled.add(client);
    const ended = new Promise<void>((resolve) => entry.idle.push(resolve));
    for (let attempt = 0; attempt < CANCEL_ATTEMPTS && this.busy.get(client) === entry; attempt++) {
      await cancelStatement(client);
      await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, CANCEL_RETRY_MS))]);
    }
    return true;
  }

  /**
   * Ends a transaction; on a hardened database the session is reset in the same round trip
   * (the statements after COMMIT run in an implicit transaction of their own). Give the client
   * back with release() afterwards. A COMMIT throws when the transaction had been aborted by an
   * earlier failed statement: PostgreSQL then rolls back and answers ROLLBACK, and a plugin that
   * caught a failed query and returned normally would otherwise be acknowledged with nothing
   * stored.
   */
  async endTransaction(client: pg.PoolClient, verb: 'COMMIT' | 'ROLLBACK'): Promise<void> {
    const answer = await client.query(this.resetSessions ? verb : `${verb}; ${SESSION_RESET}`) as pg.QueryResult | pg.QueryResult[];
    const ended = Array.isArray(answer) ? answer[0] : answer;
    if (verb === 'COMMIT' && ended?.command !== 'COMMIT') throw new Error('the transaction was aborted by an earlier failed statement and was rolled back');
  }

  /**
   * The one way a call's or a batch's transaction ends: `beforeCommit` (the batch's activity
   * entries) and COMMIT, or ROLLBACK; then the client goes back to the pool, or is closed when
   * its session could not be ended cleanly. Answers null, or why it could not commit (it was
   * rolled back instead).
   */
  async closeTransaction(client: pg.PoolClient, verb: 'COMMIT' | 'ROLLBACK', beforeCommit?: (client: pg.PoolClient) => Promise<void>): Promise<unknown> {
    try {
      if (verb === 'COMMIT' && beforeCommit) {
        // Sent together (the connection pipelines): what beforeCommit writes (activity entries,
        // which take the company's chain head) is held for the COMMIT alone, not for one more
        // round trip. Had it failed, the COMMIT answers ROLLBACK; its own error is the one to tell.
        const [written, ended] = await Promise.all([beforeCommit(client).then(() => null, (error: unknown) => error ?? new Error('beforeCommit failed')), this.endTransaction(client, verb).then(() => null, (error: unknown) => error)]);
        if (written || ended) throw written ?? ended;
      } else {
        await this.endTransaction(client, verb);
      }
      this.release(client);
      return null;
    } catch (error) {
      const reusable = verb === 'COMMIT' && await this.endTransaction(client, 'ROLLBACK').then(() => true, () => false);
      if (reusable) this.release(client); else client.release(true);
      return error ?? new Error('the transaction could not end');
    }
  }

  /**
   * Gives back a client whose transaction ended with endTransaction(). Where sessions are
   * reset (DISCARD ALL: advisory locks, settings, listeners, prepared statements) that is done
   * first (queued, not awaited by the caller).
   */
  release(client: pg.PoolClient): void {
    if (this.cancelled.has(client)) { client.release(true); return; }
    if (!this.resetSessions) { client.release(); return; }
    Promise.all(DISCARD_ALL.map((text) => client.query(text))).then(() => client.release(), (error: Error) => client.release(error));
  }

  /**
   * One statement of a call on a pooled connection, outside the call's own transaction (a
   * read-only call, or one declared `transactional: false`). A read-only call's statement runs
   * in no transaction but its own implicit one, read-only by the session's default
   * (`default_transaction_read_only`, set when the connection opens). What ends the
   * connection's use is queued right behind the statement, so it travels in the same write
   * and costs no round trip of its own: the session reset (SESSION_RESET, or DISCARD ALL where
   * sessions are reset), after the COMMIT of a write. The statement's answer is given as soon
   * as it arrives; the connection goes back to the pool once the reset has run, so no call
   * ever sees another call's session. A read-only call holds no connection between its
   * statements and never waits for a COMMIT.
   */
  async pooled<T>(invocation: Invocation, run: (client: pg.PoolClient) => Promise<T>, readOnly = invocation.message.readOnly === true): Promise<T> {
    const client = await this.connectFor(invocation);
    // A read-only statement runs alone, read-only by the session's default. A write (a
    // `transactional: false` call) is wrapped in BEGIN READ WRITE ... COMMIT, queued, not
    // awaited: the connection pipelines, so all of it shares the statement's round trip.
    if (!readOnly) client.query(READ_WRITE).catch(() => undefined);
    const answer = this.statement(client, () => run(client));
    const ended = this.endPooled(client, readOnly);
    try {
      return await answer;
    } finally {
      // From here the call no longer owns the connection: its end does not cancel the reset.
      invocation.pooledClients.delete(client);
      void ended.then((failure) => {
        if (this.cancelled.has(client)) client.release(true);
        else client.release(failure ?? undefined);
      });
    }
  }

  /** Queues the end of a pooled connection's use (see pooled); answers why it failed, or null. */
  private endPooled(client: pg.PoolClient, readOnly: boolean): Promise<Error | null> {
    const texts = this.resetSessions
      ? [...(readOnly ? [] : ['COMMIT']), ...DISCARD_ALL]
      : [readOnly ? SESSION_RESET : `COMMIT; ${SESSION_RESET}`];
    return Promise.all(texts.map((text) => client.query(text))).then(() => null, (error: unknown) => error instanceof Error ? error : new Error('the session could not be reset'));
  }

  /** The connection holding the call's transaction (opened on first use), or null for a call that runs without one. */
  transactionOf(invocation: Invocation): Promise<pg.PoolClient> | null {
    return invocation.transactionClient(() => this.connectUnlessEnclosed(invocation));
  }

  /**
   * A call nested through a service call in a call of the same plugin that holds a connection
   * (and maybe the row locks its work needs) is refused rather than given a second one: the
   * outer call waits for it, so as many such pairs as the pool has connections would wait on
   * each other for good.
   */
  private connectUnlessEnclosed(invocation: Invocation): Promise<pg.PoolClient> {
    const holder = invocation.enclosingHolder;
    if (holder) {
      const refusal = {
        status: 409, code: 'reentrant_transaction',
        message: `This ${invocation.message.kind} call is nested (through service calls) in a ${holder.message.kind} call of the same plugin that holds its database transaction; it cannot use the database while that call waits for it: do this work in the outer call, or call before the outer call opens its transaction`,
      };
      return Promise.reject(new CapabilityError(refusal.status, refusal.code, refusal.message));
    }
    return this.pool.connect();
  }

  /** A connection for a batch's shared transaction, taken before any of its calls starts (batches.ts). */
  connectForBatch(): Promise<pg.PoolClient> {
    return this.pool.connect();
  }

  /**
   * A pooled connection for one statement of a call outside its transaction. A call that ended
   * while the connection was being made gets none: its statement would start after the call
   * cancelled what it had running, and run on unwatched. A call that holds a connection is
   * refused at once (a fault of the host, never of the plugin): it must use the one it holds.
   */
  async connectFor(invocation: Invocation): Promise<pg.PoolClient> {
    if (invocation.holdsConnection) {
      const refusal = { status: 500, code: 'pool_reentry', message: 'A call holding a database connection asked for a second one of the same pool; it must use its own' };
      throw new CapabilityError(refusal.status, refusal.code, refusal.message);
    }
    // Only the host's own writes while it finishes the call may connect after the call ended;
    // a plugin statement whose connection arrives late (the pool was opening one) may not.
    const byHost = invocation.settling;
    const client = await this.connectUnlessEnclosed(invocation);
    if (invocation.finished && !byHost) {
      // It ran nothing: its session is as the pool gave it.
      client.release();
      throw new CapabilityError(409, 'invocation_closed', 'This ctx belongs to an invocation that has finished');
    }
    invocation.pooledClients.add(client);
    return client;
  }

  /**
   * Runs one statement in a transaction of its own, committed at once, on a connection of a
   * small second pool: what it changes is not held until the calling call's commit (an issue
   * number taken from the company's counter, issues.number). Never the pool the call may hold a
   * connection of, so it cannot wait for its own caller. Only host-written statements that
   * take no lock a waiting call could hold come here (one short update of a kernel row), so
   * the connections of this pool are always given back promptly.
   *
   * These commits do not wait for the WAL to reach the disk (synchronous_commit off), so the
   * row is free again as soon as the update is done. That loses nothing that matters: whatever
   * uses the number commits later, durably, and a durable commit flushes the WAL up to its own
   * record, this earlier one included; after a crash before that, the number was used by
   * nothing durable and is simply taken again.
   */
  async autonomous(text: string, values: unknown[]): Promise<pg.QueryResult> {
    if (!this.autonomousPool) {
      // Its statements write: its connections are not given the read-only default (READ_ONLY_DEFAULT).
      const options = `${this.poolConfig.options ?? ''} -c synchronous_commit=off`;
      this.autonomousPool = new pg.Pool({ ...this.poolConfig, options, max: AUTONOMOUS_CONNECTIONS });
      this.autonomousPool.on('error', () => { /* a broken idle client is dropped by the pool */ });
      this.autonomousPool.on('connect', (client) => { client.on('error', () => undefined); });
    }
    return this.autonomousPool.query({ text, values });
  }

  capability(): WorkerCapability {
    return {
      query: async (invocation: Invocation, args: unknown[]) => {
        const [sql, params] = args as [unknown, unknown];
        if (typeof sql !== 'string' || sql.length === 0) throw new CapabilityError(400, 'invalid_sql', 'ctx.db.query needs an SQL string');
        if (sql.length > MAX_SQL_LENGTH) throw new CapabilityError(400, 'invalid_sql', `SQL longer than ${MAX_SQL_LENGTH} characters`);
        const refused = refusedStatement(sql);
        if (refused) throw new CapabilityError(403, 'sql_refused', `ctx.db.query refused ${refused}`);
        if (params !== undefined && !Array.isArray(params)) throw new CapabilityError(400, 'invalid_sql', 'ctx.db.query parameters must be an array');
        if (Array.isArray(params) && params.length > MAX_PARAMS) throw new CapabilityError(400, 'invalid_sql', `at most ${MAX_PARAMS} parameters`);
        const values = (params as unknown[] | undefined)?.map((value) => (value !== null && typeof value === 'object' ? JSON.stringify(value) : value)) ?? [];
        const config = { text: sql, values, queryMode: 'extended', name: this.statementName(sql) } as pg.QueryConfig;
        try {
          let result: pg.QueryResult;
          const transaction = this.transactionOf(invocation);
          if (transaction) {
            const client = await transaction;
            result = await this.statement(client, () => client.query(config));
          } else {
            result = await this.pooled(invocation, (client) => client.query(config));
          }
          if (result.rows.length > MAX_ROWS) throw new CapabilityError(413, 'too_many_rows', `a query may return at most ${MAX_ROWS} rows`);
          return { rows: result.rows, rowCount: result.rowCount ?? result.rows.length };
        } catch (error) {
          if (error instanceof CapabilityError) throw error;
          // The server went away or is not the primary any more (a failover): retryable, not the plugin's SQL at fault.
          if (isDatabaseUnavailable(error)) throw new CapabilityError(DATABASE_UNAVAILABLE.status, DATABASE_UNAVAILABLE.code, DATABASE_UNAVAILABLE.message);
          const pgError = error as { code?: string; message?: string };
          // PostgreSQL's own message names the plugin's objects only; codes let plugins branch (23505 = unique violation).
          // Class 40 (deadlock, serialization failure) is transient and not the caller's fault: retryable 503.
          const status = pgError.code === '42501' ? 403 : pgError.code?.startsWith('40') ? 503 : 400;
          throw new CapabilityError(status, pgError.code ? `sql_${pgError.code}` : 'sql_error', pgError.message ?? 'query failed');
        }
      },
    };
  }

  async close(): Promise<void> {
    await this.autonomousPool?.end().catch(() => undefined);
    await this.pool.end().catch(() => undefined);
  }
}
