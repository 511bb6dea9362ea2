import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Database } from '../db/database.ts';
import type { EventBus } from '../events/event-bus.ts';
import type { ProxyCallStatus, ProxyFinishedEvent } from '../../sdk/plugin/answers.ts';
import { callCents, type MeteredUsage, type PriceRates } from '../../sdk/shared/model-prices.ts';

/** Lease of a live call; renewed (with a usage checkpoint) every HEARTBEAT_MS by its owner. */
const LEASE_SEC = 30;
const HEARTBEAT_MS = 5_000;
const SWEEP_MS = 15_000;

/** What the owner of a live call reports at each heartbeat, and how it is stopped. */
export interface LiveCall {
  id: string;
  /** The usage metered so far (reported or estimated), for the checkpoint. */
  checkpoint(): { usage: MeteredUsage; model: string | null };
  /** Ends the exchange (the process is stopping). */
  abort(): void;
}

export interface CallStart {
  id: string; plugin: string; companyId: string; meter: string; rates: PriceRates | null; report: Record<string, unknown>;
}

export interface CallEnd {
  status: ProxyCallStatus;
  httpStatus: number | null; model: string | null; usage: MeteredUsage; usageEstimated: boolean; firstByteMs: number | null;
}

interface Row { id: string; plugin: string; company_id: string; status: ProxyCallStatus; rates: PriceRates | null; report: Record<string, unknown>;
  usage: MeteredUsage; usage_estimated: boolean; model: string | null; http_status: number | null; cost_cents: number; first_byte_ms: number | null;
  started_at: Date | string; finished_at: Date | string }

/**
 * The proxied-call ledger (table proxied_calls, migration 0036), as the executor keeps its
 * executions: the row is the lease of the process that holds the exchange. Its heartbeat renews
 * the leases of its live calls and checkpoints their usage; any process's sweeper turns a row
 * whose lease ran out into 'lost' with the last checkpoint. The terminal row and the
 * proxy.finished event (for the answering plugin alone) are written in one transaction, only by
 * the owner while the row is still live, so a call ends once.
 */
export class ProxiedCalls {
  readonly instanceId = randomUUID();
  readonly live = new Map<string, LiveCall>();
  private readonly deps: { db: Database; events: EventBus; log: Logger };
  private timers: NodeJS.Timeout[] = [];

  constructor(deps: ProxiedCalls['deps']) {
    this.deps = deps;
  }

  start(): void {
    this.timers.push(setInterval(() => void this.heartbeat(), HEARTBEAT_MS), setInterval(() => void this.sweep(), SWEEP_MS));
    for (const timer of this.timers) timer.unref();
    void this.sweep();
  }

  /** Ends the exchanges this process holds; each records its own end. */
  async stop(): Promise<void> {
    for (const timer of this.timers) clearInterval(timer);
    for (const call of this.live.values()) call.abort();
    const deadline = Date.now() + 5_000;
    while (this.live.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  }

  newId(): string {
    return randomUUID();
  }

  /**
   * The live row, leased to this process. It is on the first-byte path, so its commit does not
   * wait for the WAL flush (synchronous_commit off for this one statement's transaction): the
   * row is visible to every process at once, and only a crash of PostgreSQL itself within a
   * fraction of a second could lose it. The terminal row and its event commit durably.
   */
  async open(call: CallStart): Promise<void> {
    await this.deps.db.query(
      `with unflushed as (select set_config('synchronous_commit', 'off', true))
       insert into proxied_calls (id, plugin, company_id, owner_instance, lease_until, meter, rates, report)
       select ?, ?, ?, ?, now() + make_interval(secs => ?), ?, ?::jsonb, ?::jsonb from unflushed`,
      [call.id, call.plugin, call.companyId, this.instanceId, LEASE_SEC, call.meter, call.rates ? JSON.stringify(call.rates) : null, JSON.stringify(call.report)]);
  }

  /** The terminal row and proxy.finished, once: only while this process still owns the live row. */
  /** The terminal row and proxy.finished; answers the event's id (null when the row was no longer this process's). */
  async finish(id: string, rates: PriceRates | null, end: CallEnd): Promise<string | null> {
    this.live.delete(id);
    const cost = rates ? callCents(rates, end.usage) : 0;
    return this.deps.db.transaction(async (tx) => {
      const row = await tx.maybeOne<Row>(
        `update proxied_calls set status = ?, http_status = ?, model = ?, usage = ?::jsonb, usage_estimated = ?, first_byte_ms = ?,
                cost_cents = ?, finished_at = now()
          where id = ? and status = 'running' and owner_instance = ? returning *`,
        [end.status, end.httpStatus, end.model, JSON.stringify(end.usage), end.usageEstimated, end.firstByteMs, cost, id, this.instanceId]);
      return row ? this.deps.events.appendTo(tx, 'proxy.finished', eventOf(row), row.plugin) : null;
    });
  }

  /**
   * Waits (at most `timeoutMs`) until the plugin has taken an event in (its delivery done, or
   * given up on). A call that crossed its budget is answered to its end only then: the client
   * cannot start its next call before the plugin has charged this one, so the next decision
   * sees the crossed budget (its hard stop) instead of the allowance from before.
   */
  async delivered(eventId: string, timeoutMs: number): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const open = await this.deps.db.maybeOne<{ n: number }>(
        `select count(*)::int as n from keel_events.deliveries where event_id = ? and state in ('pending', 'leased')`, [eventId]);
      if (!open || open.n === 0) return true;
      if (Date.now() >= until) return false;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Renews this process's leases and checkpoints what each live call has metered so far. */
  async heartbeat(): Promise<void> {
    if (this.live.size === 0) return;
    const checkpoints = [...this.live.values()].map((call) => ({ id: call.id, ...call.checkpoint() }));
    try {
      await this.deps.db.query(
        `update proxied_calls c set lease_until = now() + make_interval(secs => ?), usage = p.usage, model = coalesce(p.model, c.model)
           from jsonb_to_recordset(?::jsonb) as p(id uuid, usage jsonb, model text)
          where c.id = p.id and c.status = 'running' and c.owner_instance = ?`,
        [LEASE_SEC, JSON.stringify(checkpoints), this.instanceId]);
    } catch (error) {
      this.deps.log.warn({ err: error }, 'could not renew proxied call leases');
    }
  }

  /** Rows nobody holds any more (their owner stopped renewing): 'lost', with the last checkpoint as their usage. */
  async sweep(): Promise<void> {
    try {
      const orphans = await this.deps.db.query<{ id: string }>(`select id from proxied_calls where status = 'running' and lease_until < now() limit 100`);
      for (const orphan of orphans) {
        await this.deps.db.transaction(async (tx) => {
          const live = await tx.maybeOne<Row>(`select * from proxied_calls where id = ? and status = 'running' and lease_until < now() for update skip locked`, [orphan.id]);
          if (!live) return;
          const cost = live.rates ? callCents(live.rates, live.usage) : 0;
          const lost = (await tx.maybeOne<Row>(
            `update proxied_calls set status = 'lost', usage_estimated = true, cost_cents = ?, finished_at = now() where id = ? returning *`, [cost, live.id]))!;
          await this.deps.events.appendTo(tx, 'proxy.finished', eventOf(lost), lost.plugin);
          this.deps.log.warn({ callId: lost.id, plugin: lost.plugin }, 'proxied call lost: the process that held it is gone');
        });
      }
    } catch (error) {
      this.deps.log.warn({ err: error }, 'could not sweep lost proxied calls');
    }
  }
}

function eventOf(row: Row): ProxyFinishedEvent {
  return {
    callId: row.id, companyId: row.company_id, status: row.status, httpStatus: row.http_status, model: row.model,
    usage: row.usage, usageEstimated: row.usage_estimated, costCents: Number(row.cost_cents),
    startedAt: new Date(row.started_at).toISOString(), finishedAt: new Date(row.finished_at).toISOString(),
    firstByteMs: row.first_byte_ms, report: row.report,
  };
}
