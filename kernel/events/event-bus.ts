import type { Logger } from 'pino';
import type { Tx } from '../db/database.ts';

/**
 * Kernel domain events. In-transaction hooks run inside the transaction of the change (a
 * hook that throws rolls the change back); subscribers run after the commit and never
 * affect the request. The extension host forwards both kinds to plugins that declare them.
 */
export interface KernelEvents {
  'company.created': { companyId: string; company: Record<string, unknown>; actor: EventActor };
  'company.updated': { companyId: string; company: Record<string, unknown>; changes: Record<string, unknown>; actor: EventActor };
  'company.archived': { companyId: string; actor: EventActor };
  'company.deleted': { companyId: string; actor: EventActor };
  'agent.created': { companyId: string; agentId: string; agent: Record<string, unknown>; actor: EventActor };
  'agent.updated': { companyId: string; agentId: string; agent: Record<string, unknown>; changes: Record<string, unknown>; actor: EventActor };
  'agent.status_changed': { companyId: string; agentId: string; from: string; to: string; reason: string | null; actor: EventActor };
}

export interface EventActor { actorType: 'agent' | 'user' | 'system'; actorId: string }

export type EventName = keyof KernelEvents;
type Hook<E extends EventName> = (tx: Tx, payload: KernelEvents[E]) => Promise<void> | void;
type Subscriber<E extends EventName> = (payload: KernelEvents[E]) => Promise<void> | void;

export class EventBus {
  private readonly hooks = new Map<EventName, Array<Hook<any>>>();
  private readonly subscribers = new Map<EventName, Array<Subscriber<any>>>();
  private readonly log: Logger;

  constructor(log: Logger) {
    this.log = log;
  }

  /** Runs inside the emitting transaction. Returns an unsubscribe function. */
  hook<E extends EventName>(event: E, fn: Hook<E>): () => void {
    return add(this.hooks, event, fn);
  }

  /** Runs after the emitting transaction commits. Returns an unsubscribe function. */
  on<E extends EventName>(event: E, fn: Subscriber<E>): () => void {
    return add(this.subscribers, event, fn);
  }

  /**
   * A change that was committed elsewhere (a plugin's own transaction, through a kernel
   * bridge): there is no transaction left for hooks to veto, so only subscribers hear of it.
   */
  async published<E extends EventName>(event: E, payload: KernelEvents[E]): Promise<void> {
    for (const subscriber of this.subscribers.get(event) ?? []) {
      try { await subscriber(payload); } catch (error) { this.log.error({ err: error, event }, 'event subscriber failed'); }
    }
  }

  async emit<E extends EventName>(tx: Tx, event: E, payload: KernelEvents[E]): Promise<void> {
    for (const hook of this.hooks.get(event) ?? []) await hook(tx, payload);
    const subscribers = this.subscribers.get(event);
    if (!subscribers?.length) return;
    tx.afterCommit(async () => {
      for (const subscriber of subscribers) {
        try { await subscriber(payload); } catch (error) { this.log.error({ err: error, event }, 'event subscriber failed'); }
      }
    });
  }
}

function add<T>(map: Map<EventName, T[]>, event: EventName, fn: T): () => void {
  const list = map.get(event) ?? [];
  list.push(fn);
  map.set(event, list);
  return () => {
    const index = list.indexOf(fn);
    if (index >= 0) list.splice(index, 1);
  };
}
