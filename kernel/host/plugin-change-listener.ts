import type pg from 'pg';
import type { Logger } from 'pino';

const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 30_000;

/**
 * LISTEN keel_plugins on a connection of its own, kept open for the life of the host. Lifecycle
 * changes made by other kernel processes arrive here. When the connection is lost (the
 * database restarted, a network cut, an administrator ended the session) it is opened again
 * with backoff, and `onResync` runs once it is: notifications sent meanwhile are gone.
 */
export class PluginChangeListener {
  private client: pg.PoolClient | null = null;
  private timer: NodeJS.Timeout | null = null;
  private failures = 0;
  private stopped = false;
  private readonly pool: pg.Pool;
  private readonly log: Logger;
  private readonly onChange: (key: string) => void;
  private readonly onResync: () => void;

  constructor(options: { pool: pg.Pool; log: Logger; onChange(key: string): void; onResync(): void }) {
    this.pool = options.pool;
    this.log = options.log;
    this.onChange = options.onChange;
    this.onResync = options.onResync;
  }

  get listening(): boolean {
    return this.client !== null;
  }

  /** Listens; a failure here is the caller's (start-up fails), later losses are recovered here. */
  async start(): Promise<void> {
    this.stopped = false;
    await this.connect();
  }

  private async connect(): Promise<void> {
    const client = await this.pool.connect();
    // Attached before LISTEN: an error on a checked-out client without a listener would end the process.
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client, new Error('connection ended')));
    client.on('notification', (message) => {
      if (message.channel === 'keel_plugins' && message.payload) this.onChange(message.payload);
    });
    try {
      await client.query('LISTEN keel_plugins');
    } catch (error) {
      client.release(error as Error);
      throw error;
    }
    if (this.stopped) {
      client.release(true);
      return;
    }
    this.client = client;
  }

  private lost(client: pg.PoolClient, error: Error): void {
    if (this.client !== client) return;
    this.client = null;
    client.release(error);
    if (this.stopped) return;
    this.log.warn({ err: error }, 'lost the connection listening for plugin changes; listening again');
    this.reconnectLater();
  }

  private reconnectLater(): void {
    const delay = Math.min(FIRST_RETRY_MS * 2 ** this.failures, MAX_RETRY_MS);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.connect().then(
        () => {
          if (this.stopped) return;
          this.failures = 0;
          this.log.info('listening for plugin changes again; bringing every plugin in line');
          this.onResync();
        },
        (error: Error) => {
          if (this.stopped) return;
          this.failures++;
          this.log.warn({ err: error, retryInMs: Math.min(FIRST_RETRY_MS * 2 ** this.failures, MAX_RETRY_MS) }, 'could not listen for plugin changes');
          this.reconnectLater();
        },
      );
    }, delay);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const client = this.client;
    this.client = null;
    if (!client) return;
    try {
      await client.query('UNLISTEN keel_plugins');
      client.release();
    } catch (error) {
      client.release(error as Error);
    }
  }
}
