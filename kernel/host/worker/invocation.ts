import type pg from 'pg';
import type { InvokeMessage } from '../protocol/messages.ts';
import { CapabilityError } from './capabilities/types.ts';
import { READ_WRITE } from './read-write.ts';
import type { EventValues } from '../capabilities/events-publish/events-at-commit.ts';

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
  /** The call wrote kernel rows through a bridge function (kernel-row-bridge.ts): its result says so. */
  kernelRowsWritten = false;
  /** The call asked the kernel to open a ledger run: its transaction confirms it before COMMIT (capabilities/opened-runs.ts). */
  openedRuns = false;
  /** Async host operations still running for this invocation. */
  readonly ops = new Set<number>();
  /** Pooled connections running a statement of this call outside its transaction. */
  readonly pooledClients = new Set<pg.PoolClient>();
  timer?: NodeJS.Timeout;

  private opening: Promise<pg.PoolClient> | null = null;

  constructor(message: InvokeMessage) {
    this.message = message;
  }

  /**
   * Whether the host owns a transaction for this call. A read-only call has none: each of its
   * statements runs alone on a pooled connection, read-only by the connection's default
   * (PluginDatabase.pooled). Under READ COMMITTED a call-long READ ONLY transaction gave its
   * statements no common snapshot anyway; it only held a connection for the whole call and
   * made the answer wait for a COMMIT.
   */
  get wantsTransaction(): boolean {
    return this.message.transactional && this.message.readOnly !== true;
  }

  /**
   * The client holding this call's transaction, opened on first use: a call that never touches
   * the database never pays for BEGIN and COMMIT. BEGIN is queued on the client, whose
   * connection pipelines (capabilities/database.ts), so the first statement is sent right
   * behind it and the two share one round trip. A call that already holds a connection (its
   * own transaction, or the batch's it is an item of) always gets that one: it must never wait
   * for a second connection of the pool it holds one of (PluginDatabase.transactionOf).
   */
  transactionClient(connect: () => Promise<pg.PoolClient>): Promise<pg.PoolClient> | null {
    if (this.client) return Promise.resolve(this.client);
    if (this.opening) return this.opening;
    if (!this.wantsTransaction) return null;
    this.opening = connect().then((client) => {
      if (this.finished && !this.settling) {
        client.release();
        throw new CapabilityError(409, 'invocation_closed', 'This ctx belongs to an invocation that has finished');
      }
      this.client = client;
      client.query(READ_WRITE).catch(() => undefined);
      return client;
    });
    return this.opening;
  }

  /** Whether the call holds (or is being given) a connection of its plugin's pool. */
  get holdsConnection(): boolean {
    return this.client !== null || this.opening !== null;
  }

  /** Calls of this plugin that wait for this one through service calls (InvokeMessage.enclosing), resolved when it starts. */
  enclosing: readonly Invocation[] = [];

  /** The enclosing call that holds a connection of the pool, if one does: this call must not wait for another. */
  get enclosingHolder(): Invocation | undefined {
    return this.enclosing.find((outer) => !outer.finished && outer.holdsConnection);
  }

  /**
   * Set for a call that is one item of a batch: it shares the batch's transaction (its own
   * savepoint), and its outcome goes to the batch, which commits once for all items.
   */
  batch?: { resolve(outcome: Omit<import('../protocol/messages.ts').CallResult, 'id'> & { activity: unknown[][] }): void };

  /**
   * Set on the one call that runs a plugin's batch handler: it receives the handler's answers.
   * The batch's own calls carry `leadId`, the id of that call, so that their `ctx` works while
   * the handler runs.
   */
  batchLead?: { resolve(outcome: { ok: boolean; value?: string; error?: import('../protocol/messages.ts').WireError }): void };
  leadId?: string;

  /** The invocation whose code runs when this one's ctx is used: the batch handler's, for a call of a batch. */
  get scopeId(): string {
    return this.leadId ?? this.message.id;
  }

  /** Activity entries of a batched call, written with the batch's other entries before COMMIT. */
  readonly pendingActivity: unknown[][] = [];

  /** Events the call published that are written just before its COMMIT, each with its id (capabilities/events-at-commit.ts). */
  readonly pendingEvents: Array<[...EventValues, string]> = [];

  /** Set once an event of the call was written when published: the later ones are too, so that their order holds. */
  eventsWrittenAtOnce = false;

  /** Set while the host itself finishes the call (writing its default activity entry). */
  settling = false;

  /** Waits for a transaction that is still being opened, so finishing never misses it. */
  async openedClient(): Promise<pg.PoolClient | null> {
    if (this.opening) await this.opening.catch(() => undefined);
    return this.client;
  }

  get id(): string {
    return this.message.id;
  }
}
