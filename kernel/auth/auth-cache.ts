import type { Logger } from 'pino';
import { NotificationListener } from '../db/notification-listener.ts';

/**
 * Caches what a hashed credential resolves to, so that an authenticated request costs a
 * map lookup instead of a query. Entries expire after a short TTL as a safety net, and are
 * evicted at once when the kernel changes what they describe: locally right after the
 * change commits, and in every other kernel process sharing the database through
 * PostgreSQL LISTEN/NOTIFY on the `keel_auth` channel.
 */
export interface CachedCredential {
  kind: 'board_key' | 'agent_key' | 'session';
  id: string;
  userId?: string | null;
  agentId?: string;
  companyId?: string;
  expiresAt?: number;
}

export interface CachedAgent {
  id: string;
  companyId: string;
  role: string;
  status: string;
  adapterType: string;
}

export interface CachedRun {
  id: string;
  agentId: string;
  companyId: string;
  live: boolean;
}

export interface CachedUser {
  id: string;
  isInstanceAdmin: boolean;
  companyIds: string[];
}

const TTL_MS = 30_000;
const MAX_ENTRIES = 50_000;

/** Counts invalidations; a value read before an invalidation must not be cached after it. */
class Epoch {
  value = 0;
  /** Off while invalidations cannot be heard (the listening connection is down): nothing is cached then. */
  caching = true;
}

class TtlMap<V> {
  private readonly map = new Map<string, { value: V; until: number }>();
  private readonly epoch: Epoch;
  constructor(epoch: Epoch) { this.epoch = epoch; }
  get(key: string): V | undefined {
    const hit = this.map.get(key);
    if (!hit) return undefined;
    if (hit.until < Date.now()) { this.map.delete(key); return undefined; }
    return hit.value;
  }
  /**
   * Caches a value loaded from the database. `since` is the cache epoch read before the load:
   * when an invalidation arrived meanwhile, the loaded value may predate it and is not kept.
   */
  set(key: string, value: V, since?: number): void {
    if (!this.epoch.caching || (since !== undefined && since !== this.epoch.value)) return;
    if (this.map.size >= MAX_ENTRIES) this.map.delete(this.map.keys().next().value as string);
    this.map.set(key, { value, until: Date.now() + TTL_MS });
  }
  delete(key: string): void { this.map.delete(key); }
  deleteWhere(match: (value: V) => boolean): void {
    for (const [key, entry] of this.map) if (match(entry.value)) this.map.delete(key);
  }
  clear(): void { this.map.clear(); }
}

export type Invalidation =
  | { type: 'credential'; hash: string }
  | { type: 'credential_id'; id: string }
  | { type: 'agent'; id: string }
  | { type: 'user'; id: string }
  | { type: 'run'; id: string }
  | { type: 'company'; id: string }
  | { type: 'all' };

export class AuthCache {
  private readonly counter = new Epoch();
  readonly credentials = new TtlMap<CachedCredential>(this.counter);
  readonly agents = new TtlMap<CachedAgent>(this.counter);
  readonly users = new TtlMap<CachedUser>(this.counter);
  /** Live runs, keyed by run id; closing a run evicts it so its token is refused at once. */
  readonly runs = new TtlMap<CachedRun>(this.counter);
  /** Company rows by id, for the company guard of every company route. */
  readonly companies = new TtlMap<Record<string, any>>(this.counter);
  private listener?: NotificationListener;
  private closing = false;

  /** Read this before loading a value from the database, and pass it to `set`. */
  get epoch(): number {
    return this.counter.value;
  }

  apply(invalidation: Invalidation): void {
    this.counter.value++;
    switch (invalidation.type) {
      case 'credential': this.credentials.delete(invalidation.hash); break;
      case 'credential_id': this.credentials.deleteWhere((c) => c.id === invalidation.id); break;
      case 'agent':
        this.agents.delete(invalidation.id);
        this.credentials.deleteWhere((c) => c.agentId === invalidation.id);
        break;
      case 'user': this.users.delete(invalidation.id); break;
      case 'run': this.runs.delete(invalidation.id); break;
      case 'company': this.companies.delete(invalidation.id); break;
      case 'all': this.credentials.clear(); this.agents.clear(); this.users.clear(); this.runs.clear(); this.companies.clear(); break;
    }
  }

  /**
   * Listens for invalidations published by any kernel process (including this one). While
   * the listening connection is down, another process's revocation could go unseen: the
   * caches are emptied and nothing is cached until it listens again.
   */
  async listen(databaseUrl: string, log: Logger): Promise<void> {
    this.listener = new NotificationListener(databaseUrl, ['keel_auth'], log, {
      onNotification: (_channel, payload) => {
        try { this.apply(JSON.parse(payload) as Invalidation); } catch { /* ignore malformed */ }
      },
      onLost: () => {
        this.counter.caching = false;
        this.apply({ type: 'all' });
      },
      onListening: () => {
        this.apply({ type: 'all' });
        this.counter.caching = true;
      },
    });
    await this.listener.start();
  }

  /** The state of the listening connection, for health reports. */
  get listenerState(): string {
    return this.listener?.state ?? 'closed';
  }

  /**
   * Returns once every notification committed before this call has been applied: PostgreSQL
   * delivers pending notifications on the listening connection before answering a query on
   * it. The kernel calls this after each commit, so a request sees its own writes.
   */
  sync(): Promise<void> {
    if (!this.listener || this.closing) return Promise.resolve();
    // Concurrent commits share round trips: a caller joins the next probe that starts after
    // the one already in flight (which may have started before its commit), never an older one.
    if (this.nextProbe) return this.nextProbe;
    if (this.probe) {
      this.nextProbe = this.probe.then(() => { this.nextProbe = null; return this.runProbe(); });
      return this.nextProbe;
    }
    return this.runProbe();
  }

  private probe: Promise<void> | null = null;
  private nextProbe: Promise<void> | null = null;

  private runProbe(): Promise<void> {
    const listener = this.listener;
    if (!listener || this.closing) return Promise.resolve();
    this.probe = listener.roundTrip().then((delivered) => { if (!delivered) this.apply({ type: 'all' }); })
      .finally(() => { this.probe = null; });
    return this.probe;
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.listener?.close();
    this.listener = undefined;
  }
}

/** SQL that publishes an invalidation; run it inside the transaction that makes the change. */
export const NOTIFY_SQL = "select pg_notify('keel_auth', ?)";
