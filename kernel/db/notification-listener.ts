import pg from 'pg';
import type { Logger } from 'pino';
import { newClient } from './connections.ts';

export type ListenerState = 'connecting' | 'listening' | 'reconnecting' | 'closed';

const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 5_000;

/**
 * A LISTEN connection that survives the database going away. It holds its own client (not
 * one of the pool's), and when that connection is lost it reconnects with exponential backoff
 * and listens again. Notifications sent while it was down are lost, so `onLost` runs when
 * the connection goes (callers stop trusting what they cached) and `onListening` runs each
 * time it listens again (callers catch up on what they may have missed).
 */
export class NotificationListener {
  private client: pg.Client | null = null;
  private retryMs = FIRST_RETRY_MS;
  private retryTimer: NodeJS.Timeout | null = null;
  private connecting: Promise<void> | null = null;
  state: ListenerState = 'connecting';
  /** Why the last connection attempt failed, for health reports. */
  lastError: string | null = null;

  private readonly url: string;
  private readonly channels: readonly string[];
  private readonly log: Logger;
  private readonly handlers: {
    onNotification(channel: string, payload: string): void;
    onLost?(): void;
    onListening?(reconnected: boolean): void | Promise<void>;
  };

  /** How the connection shows in pg_stat_activity. */
  private readonly applicationName: string;

  constructor(url: string, channels: readonly string[], log: Logger, handlers: NotificationListener['handlers'], applicationName = 'keel-listen') {
    this.url = url;
    this.applicationName = applicationName;
    this.channels = channels;
    this.log = log;
    this.handlers = handlers;
  }

  /** Connects and listens; the first connection must succeed (start-up fails otherwise). */
  async start(): Promise<void> {
    await this.connect(false);
  }

  /** A round trip on the listening connection: PostgreSQL delivers pending notifications before it answers. */
  async roundTrip(): Promise<boolean> {
    const client = this.client;
    if (!client || this.state !== 'listening') return false;
    try {
      await client.query('select 1');
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    this.state = 'closed';
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    await this.connecting?.catch(() => undefined);
    const client = this.client;
    this.client = null;
    if (client) await client.end().catch(() => undefined);
  }

  private connect(reconnected: boolean): Promise<void> {
    this.connecting = (async () => {
      // keepAlive: a primary whose machine vanished sends no FIN; the socket's keepalive notices instead.
      const client = newClient(this.url, { application_name: this.applicationName, connectionTimeoutMillis: 5_000, keepAlive: true });
      client.on('error', (error) => this.lost(client, error));
      client.on('end', () => this.lost(client, null));
      client.on('notification', (message) => {
        if (message.payload !== undefined) this.handlers.onNotification(message.channel, message.payload);
      });
      try {
        await client.connect();
        for (const channel of this.channels) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      } catch (error) {
        await client.end().catch(() => undefined);
        throw error;
      }
      if (this.state === 'closed') { await client.end().catch(() => undefined); return; }
      this.client = client;
      this.state = 'listening';
      this.lastError = null;
      this.retryMs = FIRST_RETRY_MS;
      if (reconnected) this.log.info({ channels: this.channels }, 'database notifications resumed');
      await this.handlers.onListening?.(reconnected);
    })();
    return this.connecting.finally(() => { this.connecting = null; });
  }

  private lost(client: pg.Client, error: Error | null): void {
    if (this.client !== client || this.state === 'closed') return;
    this.client = null;
    this.state = 'reconnecting';
    this.lastError = error?.message ?? 'connection ended';
    this.log.warn({ channels: this.channels, err: error ?? undefined }, 'database notifications lost; reconnecting');
    client.end().catch(() => undefined);
    this.handlers.onLost?.();
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.state === 'closed' || this.retryTimer) return;
    const delay = this.retryMs;
    this.retryMs = Math.min(MAX_RETRY_MS, this.retryMs * 2);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.connect(true).catch((error: Error) => {
        this.lastError = error.message;
        this.scheduleReconnect();
      });
    }, delay);
    this.retryTimer.unref();
  }
}
