import Db from 'pg-boss/dist/db.js';
import type { ListenHandle } from 'pg-boss/dist/types.js';
import type { Logger } from 'pino';
import { connectionConfig } from './connections.ts';
import { NotificationListener } from './notification-listener.ts';

/**
 * The job engine's (pg-boss) connections, opened like every other connection of Keel
 * (connections.ts): its pool walks a DATABASE_URL's host list, and it listens through the
 * kernel's NotificationListener (the process's one LISTEN connection), which does too and
 * reconnects with backoff. pg-boss's own listener opens a plain single-host client, which
 * after a failover would keep knocking on the old primary; polling would carry the engine, but
 * a queued job would wait out its poll.
 */
export class JobEngineDatabase extends Db {
  private readonly url: string;
  private readonly log: Logger;

  constructor(url: string, options: { max: number; applicationName: string; log: Logger }) {
    super(connectionConfig(url, { max: options.max, application_name: options.applicationName }));
    this.url = url;
    this.log = options.log;
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
