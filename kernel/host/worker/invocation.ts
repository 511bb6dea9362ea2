import type pg from 'pg';
import type { InvokeMessage } from '../protocol/messages.ts';

/**
 * One call into the plugin, from dispatch to result. It owns the database client of its
 * transaction (if any) and is the only thing a `ctx` call can act through: once finished,
 * every further call naming it is refused, so a `ctx` captured by plugin code in one
 * invocation is useless in any other.
 */
export class Invocation {
  readonly message: InvokeMessage;
  readonly startedAt = performance.now();
  client: pg.PoolClient | null = null;
  finished = false;
  activityWritten = false;
  /** Async host operations still running for this invocation. */
  readonly ops = new Set<number>();
  timer?: NodeJS.Timeout;

  constructor(message: InvokeMessage) {
    this.message = message;
  }

  get id(): string {
    return this.message.id;
  }
}
