import type { InvocationInfo } from '../../../sdk/plugin/context.ts';
import type { EventManifest } from '../../../sdk/plugin/manifest.ts';
import type { EventName } from '../../events/event-bus.ts';
import { KeelError } from '../../http/errors.ts';
import type { ExtensionHost, LoadedPlugin } from '../extension-host.ts';
import type { InvokeResult } from '../plugin-process.ts';
import { appendPluginLog } from './plugin-log.ts';

/** Deliveries waiting per plugin; past this, new ones are dropped (and logged) rather than queued without end. */
const MAX_PENDING = 1000;
const STOP_WAIT_MS = 5000;

interface Delivery { tail: Promise<void>; pending: number }

/**
 * Kernel events to plugins, through kernel.events.
 *
 * after_commit (events.subscribe): the plugin's `events[name]` handler runs after the
 * emitting transaction committed. Deliveries to one plugin run one at a time in emit order,
 * off the request's path: the request does not wait for them, and a failure only reaches
 * the plugin's logs. Delivery is in-process and at most once (a process that stops loses
 * what it had not delivered).
 *
 * in_transaction (events.hooks): the plugin's `hooks[name]` handler runs while the kernel's
 * transaction waits, bounded by the plugin's call deadline. Any failure (the plugin threw,
 * timed out, crashed or has no handler) throws plugin_hook_rejected and the kernel's change
 * rolls back: a veto fails closed. The hook runs in the plugin's own transaction, which
 * commits before the kernel's; it cannot see the kernel's uncommitted rows, and must not
 * write activity for the company being changed (that chain is locked until the kernel
 * commits).
 */
export class PluginEvents {
  private readonly host: ExtensionHost;
  private readonly subscriptions = new Map<string, Array<() => void>>();
  private readonly deliveries = new Map<string, Delivery>();

  constructor(host: ExtensionHost) {
    this.host = host;
  }

  activate(plugin: LoadedPlugin): void {
    this.unsubscribe(plugin.key);
    const grants: string[] = plugin.row.granted_capabilities ?? [];
    const offs: Array<() => void> = [];
    for (const subscription of plugin.manifest.events ?? []) {
      const event = subscription.event as EventName;
      if (subscription.mode === 'after_commit' && grants.includes('events.subscribe')) {
        offs.push(this.host.kernel.events.on(event, (payload) => this.enqueue(plugin.key, subscription, payload as unknown as Record<string, unknown>)));
      } else if (subscription.mode === 'in_transaction' && grants.includes('events.hooks')) {
        offs.push(this.host.kernel.events.hook(event, async (_tx, payload) => this.intercept(plugin.key, event, payload as unknown as Record<string, unknown>)));
      }
    }
    this.subscriptions.set(plugin.key, offs);
  }

  deactivate(key: string): void {
    this.unsubscribe(key);
  }

  private unsubscribe(key: string): void {
    for (const off of this.subscriptions.get(key) ?? []) off();
    this.subscriptions.delete(key);
  }

  private info(payload: Record<string, unknown>): Omit<InvocationInfo, 'id' | 'kind' | 'target'> {
    const companyId = typeof payload.companyId === 'string' ? payload.companyId : null;
    return { companyId, actor: { type: 'system', id: 'events', agentId: null }, runId: null };
  }

  private enqueue(key: string, subscription: EventManifest, payload: Record<string, unknown>): void {
    const plugin = this.host.plugins.get(key);
    const delivery = this.deliveries.get(key) ?? { tail: Promise.resolve(), pending: 0 };
    this.deliveries.set(key, delivery);
    if (delivery.pending >= MAX_PENDING) {
      appendPluginLog(plugin, 'error', `event ${subscription.event} dropped: ${MAX_PENDING} deliveries are already waiting`);
      return;
    }
    delivery.pending++;
    delivery.tail = delivery.tail
      .then(() => this.deliver(key, subscription.event, payload))
      .finally(() => { delivery.pending--; });
  }

  /** One event call into the plugin; a plugin that cannot be reached answers like a failed call. */
  private async call(key: string, kind: 'event' | 'hook', event: string, payload: Record<string, unknown>): Promise<InvokeResult> {
    try {
      return await this.host.invoke(key, kind, event, payload, this.info(payload), { transactional: true, defaultActivity: null });
    } catch (error) {
      return { ok: false, error: { status: 503, code: (error as KeelError).code ?? 'host_error', message: (error as Error).message }, activityWritten: false };
    }
  }

  private async deliver(key: string, event: string, payload: Record<string, unknown>): Promise<void> {
    const plugin = this.host.plugins.get(key);
    if (!plugin) return;
    const result = await this.call(key, 'event', event, payload);
    if (!result.ok) {
      appendPluginLog(this.host.plugins.get(key) ?? plugin, 'error', `event ${event} handler failed: ${result.error?.code}: ${result.error?.message}`, { event });
      this.host.kernel.log.warn({ plugin: key, event, code: result.error?.code }, 'plugin event handler failed');
    }
  }

  private async intercept(key: string, event: string, payload: Record<string, unknown>): Promise<void> {
    const plugin = this.host.plugins.get(key);
    if (!plugin) return;
    const result = await this.call(key, 'hook', event, payload);
    if (result.ok) return;
    const reason = result.error!;
    appendPluginLog(plugin, 'warn', `hook ${event} rejected the change: ${reason.code}: ${reason.message}`, { event });
    throw new KeelError(reason.status === 409 ? 409 : 422, 'plugin_hook_rejected', `${plugin.manifest.displayName} (${key}) rejected ${event}: ${reason.message}`, {
      details: { plugin: key, event, reason: reason.code },
    });
  }

  /** Unsubscribes everything and waits (bounded) for deliveries already queued. */
  async stop(): Promise<void> {
    for (const key of [...this.subscriptions.keys()]) this.unsubscribe(key);
    const tails = [...this.deliveries.values()].map((d) => d.tail);
    await Promise.race([Promise.allSettled(tails), new Promise((resolve) => setTimeout(resolve, STOP_WAIT_MS).unref())]);
  }
}
