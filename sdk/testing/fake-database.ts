import type { InvocationInfo } from '../plugin/context.ts';
import { CapabilityFault } from './errors.ts';
import { leadingKeyword, refusedStatement } from './host-shared.ts';

/** What a query handler sees besides the parameters. */
export interface FakeQuery {
  sql: string;
  params: unknown[];
  invocation: InvocationInfo;
  /** Whether the call runs in the host's transaction (mutating routes, tools, jobs). */
  transactional: boolean;
}

/** Rows, or `{rows, rowCount}`; nothing means no rows. Throw `dbError(...)` to simulate a PostgreSQL error. */
export type QueryAnswer = Array<Record<string, unknown>> | { rows: Array<Record<string, unknown>>; rowCount?: number } | void | undefined;
export type QueryHandler = (params: unknown[], query: FakeQuery) => QueryAnswer | Promise<QueryAnswer>;

const WRITES = new Set(['insert', 'update', 'delete', 'merge', 'create', 'alter', 'drop', 'truncate', 'grant', 'revoke', 'comment']);

/** A PostgreSQL-style error for a handler to throw, e.g. `dbError('23505', 'duplicate key')` (plugins see code `sql_23505`). */
export function dbError(sqlState: string, message: string): CapabilityFault {
  return new CapabilityFault(sqlState === '42501' ? 403 : 400, `sql_${sqlState}`, message);
}

/**
 * `ctx.db` without PostgreSQL. The test says what each statement answers:
 * `host.db.on(/select .* from notes/i, (params) => [{ id: '1', text: 'a' }])`. The most
 * recently registered matching handler wins, so a test can override a default. Statements
 * the real host refuses (transaction control, session state) are refused here too, and a
 * plugin granted only `database.namespace.read` gets PostgreSQL's permission error on writes.
 * Every statement is recorded in `queries`; statements no handler matched also in `unhandled`.
 */
export class FakeDatabase {
  readonly queries: Array<{ sql: string; params: unknown[]; invocationId: string }> = [];
  readonly unhandled: Array<{ sql: string; params: unknown[] }> = [];
  private handlers: Array<{ pattern: RegExp | string; handler: QueryHandler }> = [];

  /** Answers statements matching `pattern` (a RegExp, or a case-insensitive substring with whitespace collapsed). */
  on(pattern: RegExp | string, handler: QueryHandler): this {
    this.handlers.unshift({ pattern, handler });
    return this;
  }

  /** Forgets handlers and recorded statements. */
  reset(): void {
    this.handlers = [];
    this.queries.length = 0;
    this.unhandled.length = 0;
  }

  /** Runs one statement the way the worker's `ctx.db.query` would; `writable` mirrors the runtime role's privileges. */
  async run(sql: unknown, rawParams: unknown, query: Omit<FakeQuery, 'sql' | 'params'>, writable: boolean): Promise<{ rows: unknown[]; rowCount: number }> {
    if (typeof sql !== 'string' || sql.length === 0) throw new CapabilityFault(400, 'invalid_sql', 'ctx.db.query needs an SQL string');
    const refused = refusedStatement(sql);
    if (refused) throw new CapabilityFault(403, 'sql_refused', `ctx.db.query refused ${refused}`);
    if (rawParams !== undefined && !Array.isArray(rawParams)) throw new CapabilityFault(400, 'invalid_sql', 'ctx.db.query parameters must be an array');
    // As on the wire to PostgreSQL: objects and arrays travel as JSON text.
    const params = ((rawParams as unknown[] | undefined) ?? []).map((value) => (value !== null && typeof value === 'object' ? JSON.stringify(value) : value));
    this.queries.push({ sql, params, invocationId: query.invocation.id });
    if (!writable && WRITES.has(leadingKeyword(sql))) {
      throw dbError('42501', 'permission denied: the plugin is granted database.namespace.read only');
    }
    const normalised = sql.replace(/\s+/g, ' ').trim();
    const match = this.handlers.find(({ pattern }) => (typeof pattern === 'string' ? normalised.toLowerCase().includes(pattern.replace(/\s+/g, ' ').toLowerCase()) : pattern.test(normalised)));
    if (!match) {
      this.unhandled.push({ sql, params });
      throw new CapabilityFault(500, 'fake_query_unhandled', `No test handler matches this statement: ${normalised.slice(0, 300)}; add host.db.on(/pattern/, (params) => rows)`);
    }
    const answer = await match.handler(params, { ...query, sql, params });
    const rows = Array.isArray(answer) ? answer : answer?.rows ?? [];
    const rowCount = Array.isArray(answer) || !answer ? rows.length : answer.rowCount ?? rows.length;
    return { rows, rowCount };
  }
}
