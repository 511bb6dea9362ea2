import pg from 'pg';
import type { Logger } from 'pino';
import { newClient } from './connections.ts';

export type ListenerState = 'connecting' | 'listening' | 'reconnecting' | 'closed';

const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 5_000;

interface Handlers {
  onNotification(channel: string, payload: string): void;
  onLost?(): void;
  onListening?(reconnected: boolean): void | Promise<void>;
}

/**
 * Listens to channels on a LISTEN connection that survives the database going away. Every
 * listener of a process on one database shares one connection (the credential cache, the
 * executor, the extension host and the job engine each listened on one of their own: four
 * PostgreSQL backends per process where one does). When that connection is lost it reconnects
 * with exponential backoff and listens again. Notifications sent while it was down are lost,
 * so `onLost` runs when the connection goes (callers stop trusting what they cached) and
 * `onListening` runs each time it listens again (callers catch up on what they may have missed).
 */
export class NotificationListener {
  private connection: ListenConnection | null = null;
  private closed = false;
  private readonly url: string;
  readonly channels: readonly string[];
  readonly log: Logger;
  readonly handlers: Handlers;

  /** The shared connection shows as `keel-listen` in pg_stat_activity. */
  constructor(url: string, channels: readonly string[], log: Logger, handlers: Handlers) {
    this.url = url;
    this.channels = channels;
    this.log = log;
    this.handlers = handlers;
  }

  get state(): ListenerState {
    if (this.closed) return 'closed';
    return this.connection?.state ?? 'connecting';
  }

  /** Why the last connection attempt failed, for health reports. */
  get lastError(): string | null {
    return this.connection?.lastError ?? null;
  }

  /** Listens on the process's connection to the database, connecting it if needed; the first connection must succeed (start-up fails otherwise). */
  async start(): Promise<void> {
    const connection = ListenConnection.for(this.url, this.log);
    this.connection = connection;
    try {
      await connection.join(this);
    } catch (error) {
      this.connection = null;
      throw error;
    }
  }

  /** A round trip on the listening connection: PostgreSQL delivers pending notifications before it answers. */
  roundTrip(): Promise<boolean> {
    return this.connection?.roundTrip() ?? Promise.resolve(false);
  }

  async close(): Promise<void> {
    this.closed = true;
    const connection = this.connection;
    this.connection = null;
    await connection?.leave(this);
  }
}

/** The LISTEN connection the listeners of a process on one database share. */
class ListenConnection {
  private static readonly byUrl = new Map<string, ListenConnection>();

  static for(url: string, log: Logger): ListenConnection {
    let connection = ListenConnection.byUrl.get(url);
    if (!connection) {
      connection = new ListenConnection(url, log);
      ListenConnection.byUrl.set(url, connection);
    }
    return connection;
  }

  state: Exclude<ListenerState, 'closed'> = 'connecting';
  lastError: string | null = null;
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  private retryMs = FIRST_RETRY_MS;
  private retryTimer: NodeJS.Timeout | null = null;
  private readonly listeners = new Set<NotificationListener>();
  /** Listeners whose start has not finished: they hear `onListening(false)` from their own start, not a reconnect's. */
  private readonly joining = new Set<NotificationListener>();
  private readonly url: string;
  private readonly log: Logger;

  private constructor(url: string, log: Logger) {
    this.url = url;
    this.log = log;
  }

  /** Adds a listener: its channels are listened to on the connection (connected first if it is not) before its `onListening(false)`. */
  async join(listener: NotificationListener): Promise<void> {
    this.listeners.add(listener);
    this.joining.add(listener);
    try {
      if (this.state !== 'listening' || !this.client) {
        // Down: connect now rather than at the next retry (the listener's start must not wait out a backoff).
        if (this.retryTimer) clearTimeout(this.retryTimer);
        this.retryTimer = null;
        await (this.connecting ?? this.connect(this.state === 'reconnecting'));
      }
      const client = this.client;
      if (!client) throw new Error('database notifications are not listening');
      // LISTEN twice is harmless: the connection may have listened on these already.
      for (const channel of listener.channels) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      this.joining.delete(listener);
      await listener.handlers.onListening?.(false);
    } catch (error) {
      this.joining.delete(listener);
      await this.leave(listener);
      if (!this.ended && this.state !== 'listening') this.scheduleReconnect();
      throw error;
    }
  }

  async leave(listener: NotificationListener): Promise<void> {
    if (!this.listeners.delete(listener)) return;
    if (this.listeners.size > 0) {
      const still = new Set([...this.listeners].flatMap((other) => other.channels));
      const client = this.state === 'listening' ? this.client : null;
      for (const channel of listener.channels) {
        if (!still.has(channel)) await client?.query(`UNLISTEN ${pg.escapeIdentifier(channel)}`).catch(() => undefined);
      }
      return;
    }
    // The last listener: the connection ends, and the next listener of the process opens a new one.
    if (ListenConnection.byUrl.get(this.url) === this) ListenConnection.byUrl.delete(this.url);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    await this.connecting?.catch(() => undefined);
    const client = this.client;
    this.client = null;
    if (client) await client.end().catch(() => undefined);
  }

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

  private get ended(): boolean {
    return this.listeners.size === 0;
  }

  /** Connects and listens on every listener's channels; after a reconnect, each listener's `onListening(true)`. */
  private connect(reconnected: boolean): Promise<void> {
    this.connecting = (async () => {
      // keepAlive: a primary whose machine vanished sends no FIN; the socket's keepalive notices instead.
      const client = newClient(this.url, { application_name: 'keel-listen', connectionTimeoutMillis: 5_000, keepAlive: true });
      client.on('error', (error) => this.lost(client, error));
      client.on('end', () => this.lost(client, null));
      client.on('notification', (message) => {
        if (message.payload === undefined) return;
        for (const listener of this.listeners) {
          if (listener.channels.includes(message.channel)) listener.handlers.onNotification(message.channel, message.payload);
        }
      });
      const channels = () => new Set([...this.listeners].flatMap((listener) => listener.channels));
      try {
        await client.connect();
        for (const channel of channels()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      } catch (error) {
        await client.end().catch(() => undefined);
        throw error;
      }
      if (this.ended) { await client.end().catch(() => undefined); return; }
      this.client = client;
      this.state = 'listening';
      this.lastError = null;
      this.retryMs = FIRST_RETRY_MS;
      if (!reconnected) return;
      this.log.info({ channels: [...channels()] }, 'database notifications resumed');
      await Promise.all([...this.listeners].filter((listener) => !this.joining.has(listener)).map(async (listener) => {
        try {
          await listener.handlers.onListening?.(true);
        } catch (error) {
          listener.log.warn({ channels: listener.channels, err: error }, 'catching up after database notifications resumed failed');
        }
      }));
    })();
    return this.connecting.finally(() => { this.connecting = null; });
  }

  private lost(client: pg.Client, error: Error | null): void {
    if (this.client !== client || this.ended) return;
    this.client = null;
    this.state = 'reconnecting';
    this.lastError = error?.message ?? 'connection ended';
    this.log.warn({ channels: [...new Set([...this.listeners].flatMap((listener) => listener.channels))], err: error ?? undefined }, 'database notifications lost; reconnecting');
    client.end().catch(() => undefined);
    for (const listener of this.listeners) listener.handlers.onLost?.();
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.ended || this.retryTimer) return;
    const delay = this.retryMs;
    this.retryMs = Math.min(MAX_RETRY_MS, this.retryMs * 2);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (this.ended || this.state === 'listening' || this.connecting) return;
      this.connect(true).catch((error: Error) => {
        this.lastError = error.message;
        this.scheduleReconnect();
      });
    }, delay);
    this.retryTimer.unref();
  }
}
