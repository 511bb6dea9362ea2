import Db from 'pg-boss/dist/db.js';
import type { ListenHandle } from 'pg-boss/dist/types.js';
import type pg from 'pg';
import type { Logger } from 'pino';
import { connectionConfig } from './connections.ts';
import { NotificationListener } from './notification-listener.ts';
import { StatementNames } from './statement-names.ts';

/**
 * The job engine's (pg-boss) connections, opened like every other connection of Keel
 * (connections.ts): its pool walks a DATABASE_URL's host list, and it listens through the
 * kernel's NotificationListener (the process's one LISTEN connection), which does too and
 * reconnects with backoff. pg-boss's own listener opens a plain single-host client, which
 * after a failover would keep knocking on the old primary; polling would carry the engine, but
 * a queued job would wait out its poll.
 */
const MAX_NAMED_STATEMENTS = 100;

export class JobEngineDatabase extends Db {
  private readonly url: string;
  private readonly log: Logger;

  constructor(url: string, options: { max: number; applicationName: string; log: Logger }) {
    super(connectionConfig(url, { max: options.max, application_name: options.applicationName }));
    this.url = url;
    this.log = options.log;
  }

  /** The engine's parameterized statements, named by text (at most MAX_NAMED_STATEMENTS). */
  private readonly statementNames = new StatementNames('keel_jobs_', MAX_NAMED_STATEMENTS);

  /**
   * The engine's statements with parameters (its fetch, send and complete, run for every job)
   * are prepared once per connection: planning its fetch cost several times its execution in a
   * busy fleet (test/bench/fleet.bench.ts). Its texts are few and fixed (values travel apart);
   * past the bound, a text runs unnamed, as the engine sends it. Texts without values may hold
   * several statements and always run as they are.
   */
  override async executeSql(text: string, values?: unknown[]): Promise<pg.QueryResult> {
    // Before open() (or after close()) the engine's own method answers, with its own refusal.
    if (!values?.length || !this.opened) return super.executeSql(text, values);
    const name = this.statementNames.of(text);
    if (!name) return super.executeSql(text, values);
    return (this as unknown as { pool: pg.Pool }).pool.query({ name, text, values });
  }

  override async listen(channel: string, onNotification: (payload: string) => void, onReconnect: () => void): Promise<ListenHandle> {
    const listener = new NotificationListener(this.url, [channel], this.log, {
      onNotification: (_channel, payload) => onNotification(payload),
      // pg-boss asks after every (re)subscription: its workers fetch what a gap may have hidden.
      onListening: () => onReconnect(),
    });
    await listener.start();
    return { close: () => listener.close() };
  }
}
