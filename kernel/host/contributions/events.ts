import { randomUUID } from 'node:crypto';
import type { DeliveredEvent, InvocationInfo } from '../../../sdk/plugin/context.ts';
import { isKernelEventName } from '../../events/event-bus.ts';
import { KeelError } from '../../http/errors.ts';
import type { ExtensionHost, LoadedPlugin } from '../extension-host.ts';
import type { InvokeResult } from '../plugin-process.ts';
import { EventOutbox, type LeasedDelivery } from './event-outbox.ts';
import { appendPluginLog } from './plugin-log.ts';

export const EVENTS_CHANNEL = 'keel_events';
/** Deliveries one process has in flight at once (each is the head of one (publisher, entity) queue for one subscriber). */
const MAX_IN_FLIGHT = 32;
/** A lease outlives the call's own deadline by this much, so that only a dead process loses it. */
const LEASE_MARGIN_MS = 5_000;
/** Even with no notification, every process looks for due deliveries this often (a missed NOTIFY, an expired lease). */
const SWEEP_MS = 30_000;
/** How often a settle() looks whether another process delivered an awaited event. */
const SETTLE_POLL_MS = 20;
const PRUNE_EVERY_MS = 60 * 60_000;
const KEEP_FINISHED_DAYS = 7;
const DEFAULTS = { maxAttempts: 8, firstRetryMs: 1_000, maxRetryMs: 300_000 };

/**
 * Durable events to plugins (kernel events and plugins' own, from the outbox of migration 0014).
 *
 * after_commit (events.subscribe): every Keel process delivers, to the plugins it runs, the
 * deliveries it leases from the database (event-outbox.ts): at least once per subscriber, in
 * commit order per publisher and entity, one process per delivery at a time. A process is woken by NOTIFY on
 * `keel_events` (sent when an event commits, or an operator retries a dead letter), by its own
 * timer when a retry falls due, and by a sweep every 30 s. A failed call is retried with
 * exponential backoff; after `maxAttempts` failures the delivery is a dead letter, shown in the
 * plugin's health, and holds back the later events of its publisher about its entity (never
 * another publisher's) until an operator retries or discards it (/api/plugins/{key}/events/dead-letters). The handler runs in the event's company
 * and in its own transaction; it receives the event id (ctx.invocation.event.id) and must be
 * idempotent by it.
 *
 * in_transaction (events.hooks): a read-only validator. It runs while the kernel's transaction
 * waits, bounded by the plugin's call deadline, in a read-only call of its own (it cannot share
 * the kernel's transaction, which lives in another process; so it may read and refuse, never
 * write). Any failure (the plugin refused, timed out, crashed or has no handler) throws
 * plugin_hook_rejected and the kernel's change rolls back: a veto fails closed.
 */
export class PluginEvents {
  private readonly host: ExtensionHost;
  private readonly outbox: EventOutbox;
  private readonly owner = `${process.pid}:${randomUUID()}`;
  private readonly validators = new Map<string, Array<() => void>>();
  private readonly inFlight = new Set<string>();
  /** Waits of settle() for a delivery this process finishes. */
  private readonly finished = new Set<() => void>();
  private readonly settings: typeof DEFAULTS;
  private stopped = false;
  private running: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  private sweep: NodeJS.Timeout | null = null;
  private lastPrune = 0;

  constructor(host: ExtensionHost) {
    this.host = host;
    this.outbox = new EventOutbox(host.kernel.db);
    this.settings = { ...DEFAULTS, ...host.kernel.config.plugins?.events };
    this.sweep = setInterval(() => this.wake(), SWEEP_MS);
    this.sweep.unref();
    host.kernel.events.settleWith((event, eventId) => this.settle(event, eventId));
  }

  /**
   * Awaited subscriptions (`awaited: true`, after_commit): what a subscriber derives from a
   * request's own change (the costs plugin's budget policy of a company created with a budget)
   * is there when the request answers. Called after the emitting transaction committed, this
   * wakes delivery and waits until every running awaited subscriber's delivery of the event is
   * handled, by this process or another one, or its first attempt failed (it is then retried as
   * any delivery), at most the subscriber's call deadline. A subscriber without a running
   * worker here is not waited for.
   */
  async settle(event: string, eventId: string): Promise<void> {
    const awaited = [...this.host.plugins.values()].filter((p) => p.process
      && (p.row.granted_capabilities as string[] | null ?? []).includes('events.subscribe')
      && (p.manifest.events ?? []).some((e) => e.event === event && e.mode === 'after_commit' && e.awaited === true));
    if (awaited.length === 0 || this.stopped) return;
    const keys = awaited.map((p) => p.key);
    const deadline = Date.now() + Math.max(...keys.map((key) => this.deadlineOf(key)));
    this.wake();
    while (!this.stopped && Date.now() < deadline && await this.outbox.unsettled(eventId, keys) > 0) {
      // A delivery this process finishes ends the wait at once; one another process delivers is seen on the next look.
      await new Promise<void>((resolve) => {
        const done = () => { clearTimeout(timer); this.finished.delete(done); resolve(); };
        const timer = setTimeout(done, SETTLE_POLL_MS);
        this.finished.add(done);
      });
    }
  }

  get store(): EventOutbox {
    return this.outbox;
  }

  activate(plugin: LoadedPlugin): void {
    this.deactivate(plugin.key);
    const grants: string[] = plugin.row.granted_capabilities ?? [];
    const offs: Array<() => void> = [];
    for (const subscription of plugin.manifest.events ?? []) {
      // Manifest validation allows in_transaction on kernel events only; the guard gives the name its type.
      const event = subscription.event;
      if (subscription.mode === 'in_transaction' && grants.includes('events.hooks') && isKernelEventName(event)) {
        offs.push(this.host.kernel.events.hook(event, async (_tx, payload) => this.validate(plugin.key, event, payload)));
      }
    }
    this.validators.set(plugin.key, offs);
    // Deliveries may have waited for this plugin (committed before a restart, or leased by a process that died).
    this.wake();
  }

  deactivate(key: string): void {
    for (const off of this.validators.get(key) ?? []) off();
    this.validators.delete(key);
  }

  /** Looks for due deliveries now (a notification arrived, a plugin started, a retry fell due). */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.drain().catch((error) => {
      this.host.kernel.log.warn({ err: error }, 'event delivery round failed');
      this.schedule(new Date(Date.now() + this.settings.firstRetryMs));
    }).finally(() => {
      this.running = null;
      if (this.again) { this.again = false; this.wake(); }
    });
  }

  /** Subscribers this process can deliver to: plugins it runs a worker for, granted events.subscribe. */
  private subscribers(): string[] {
    return [...this.host.plugins.values()]
      .filter((p) => p.process && (p.row.granted_capabilities as string[] | null ?? []).includes('events.subscribe') && (p.manifest.events ?? []).some((e) => e.mode === 'after_commit'))
      .map((p) => p.key);
  }

  private async drain(): Promise<void> {
    for (;;) {
      this.again = false;
      const subscribers = this.subscribers();
      const room = MAX_IN_FLIGHT - this.inFlight.size;
      if (room <= 0 || this.stopped) return;
      const leaseMs = Math.max(...subscribers.map((key) => this.deadlineOf(key)), 0) + LEASE_MARGIN_MS;
      const claimed = await this.outbox.claim(subscribers, room, leaseMs, this.owner);
      for (const delivery of claimed) this.start(delivery);
      // Fewer than there was room for: every queue's due head was claimed, and another claim
      // now would find nothing (a queue's next event waits for its head, whose end wakes
      // delivery again) unless a notification came meanwhile (again).
      if (claimed.length < room && !this.again) {
        // With deliveries started, their ends run the next round, which looks for the next due time.
        if (claimed.length > 0) return;
        this.schedule(await this.outbox.nextDueAt(subscribers));
        await this.pruneNowAndThen();
        return;
      }
    }
  }

  private deadlineOf(key: string): number {
    return this.host.plugins.get(key)?.manifest.limits?.callTimeoutMs ?? 10_000;
  }

  private schedule(at: Date | null): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (!at || this.stopped) return;
    this.timer = setTimeout(() => { this.timer = null; this.wake(); }, Math.min(Math.max(at.getTime() - Date.now(), 0) + 5, SWEEP_MS));
    this.timer.unref();
  }

  private async pruneNowAndThen(): Promise<void> {
    if (Date.now() - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = Date.now();
    await this.outbox.prune(KEEP_FINISHED_DAYS).catch((error) => this.host.kernel.log.warn({ err: error }, 'pruning delivered events failed'));
  }

  private start(delivery: LeasedDelivery): void {
    const id = `${delivery.subscriber}/${delivery.eventSeq}`;
    this.inFlight.add(id);
    void this.deliver(delivery).catch((error) => this.host.kernel.log.warn({ err: error, plugin: delivery.subscriber, event: delivery.name }, 'recording an event delivery failed'))
      .finally(() => {
        this.inFlight.delete(id);
        for (const done of [...this.finished]) done();
        // The next event of the entity (and whatever waited for room) may be due now.
        this.wake();
      });
  }

  private async deliver(delivery: LeasedDelivery): Promise<void> {
    const event: DeliveredEvent = {
      id: delivery.eventId, name: delivery.name, publisher: delivery.publisher, companyId: delivery.companyId,
      entityType: delivery.entityType, entityId: delivery.entityId, occurredAt: delivery.occurredAt, attempt: delivery.attempt,
    };
    const info: Omit<InvocationInfo, 'id' | 'kind' | 'target'> = { companyId: delivery.companyId, actor: { type: 'system', id: 'events', agentId: null }, runId: null, event };
    const result = await this.call(delivery.subscriber, 'event', delivery.name, delivery.payload, info, false);
    // A process that is stopping leaves what it could not finish to its lease: another process
    // (or this one, started again) delivers it once the lease expires.
    if (this.stopped && !result.ok) return;
    if (result.ok) {
      await this.outbox.delivered(delivery, this.owner);
      return;
    }
    const reason = `${result.error?.code}: ${result.error?.message}`;
    const dead = delivery.attempt >= this.settings.maxAttempts;
    const retryMs = Math.min(this.settings.firstRetryMs * 2 ** (delivery.attempt - 1), this.settings.maxRetryMs);
    await this.outbox.failed(delivery, this.owner, reason, retryMs, dead);
    const plugin = this.host.plugins.get(delivery.subscriber);
    const what = dead ? `is a dead letter after ${delivery.attempt} attempts` : `failed (attempt ${delivery.attempt}; retried in ${retryMs} ms)`;
    if (plugin) appendPluginLog(plugin, dead ? 'error' : 'warn', `event ${delivery.name} ${delivery.eventId} ${what}: ${reason}`, { event: delivery.name, eventId: delivery.eventId });
    this.host.kernel.log.warn({ plugin: delivery.subscriber, event: delivery.name, eventId: delivery.eventId, attempt: delivery.attempt, dead, code: result.error?.code }, 'plugin event delivery failed');
  }

  /** One event call into the plugin; a plugin that cannot be reached answers like a failed call. */
  private async call(key: string, kind: 'event' | 'hook', target: string, payload: Record<string, unknown>, info: Omit<InvocationInfo, 'id' | 'kind' | 'target'>, readOnly: boolean): Promise<InvokeResult> {
    try {
      return await this.host.invoke(key, kind, target, payload, info, readOnly ? { transactional: false, readOnly: true } : { transactional: true, defaultActivity: null });
    } catch (error) {
      return { ok: false, error: { status: 503, code: (error as KeelError).code ?? 'host_error', message: (error as Error).message }, activityWritten: false };
    }
  }

  private async validate(key: string, event: string, payload: Record<string, unknown>): Promise<void> {
    const plugin = this.host.plugins.get(key);
    if (!plugin) return;
    const companyId = typeof payload.companyId === 'string' ? payload.companyId : null;
    const result = await this.call(key, 'hook', event, payload, { companyId, actor: { type: 'system', id: 'events', agentId: null }, runId: null }, true);
    if (result.ok) return;
    const reason = result.error!;
    appendPluginLog(plugin, 'warn', `hook ${event} rejected the change: ${reason.code}: ${reason.message}`, { event });
    throw new KeelError(reason.status === 409 ? 409 : 422, 'plugin_hook_rejected', `${plugin.manifest.displayName} (${key}) rejected ${event}: ${reason.message}`, {
      details: { plugin: key, event, reason: reason.code },
    });
  }

  /** Stops leasing; deliveries in flight settle (a success is still recorded) or are left to their leases. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.sweep) clearInterval(this.sweep);
    for (const key of [...this.validators.keys()]) this.deactivate(key);
    await this.running?.catch(() => undefined);
  }
}
