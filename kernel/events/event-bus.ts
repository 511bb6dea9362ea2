import type { Logger } from 'pino';
import type { Tx } from '../db/database.ts';
import type { EventActor, EventEntity, KernelEventDeclaration, KernelEventPayloads } from '../../sdk/events/index.ts';
import { KERNEL_EVENTS_BY_NAME } from '../../sdk/events/kernel-events.ts';

/**
 * Kernel domain events and their payloads (what a subscriber receives): declared once in the
 * SDK (sdk/events/kernel-events.ts), where the plugins that subscribe read the same types.
 */
export interface KernelEvents extends KernelEventPayloads {}

export type { EventActor };

export type EventName = keyof KernelEvents;
type Hook<E extends EventName> = (tx: Tx, payload: KernelEvents[E]) => Promise<void> | void;
type Observer<E extends EventName> = (payload: KernelEvents[E]) => Promise<void> | void;

/**
 * Each kernel event's declaration by its name, typed so that the declaration of event `E`
 * takes the payload of `E`: an event's entity is read by its own declaration, with no cast.
 */
const DECLARATIONS: { readonly [E in EventName]: KernelEventDeclaration<E, KernelEvents[E]> } = KERNEL_EVENTS_BY_NAME;

/** The entity an event is about, as its declaration names it: one publisher's events of one entity reach each subscriber in commit order. */
export function entityOf<E extends EventName>(event: E, payload: KernelEvents[E]): EventEntity {
  return DECLARATIONS[event].entity(payload);
}

/** Whether `name` is a kernel event's (a manifest's subscription names any string). */
export function isKernelEventName(name: string): name is EventName {
  return Object.hasOwn(DECLARATIONS, name);
}

/**
 * Kernel domain events, durable. `emit` runs the validators (hooks), which may veto the change
 * by throwing while its transaction is still open, and then appends the event to the outbox
 * (keel_events, migration 0014) in that same transaction: the event exists exactly when the
 * change committed. Delivery to plugins is the extension host's (contributions/events.ts): at
 * least once, in order per publisher and entity, from whichever Keel process leases it.
 */
export class EventBus {
  private readonly hooks = new Map<EventName, Array<Hook<any>>>();
  private readonly observers = new Map<EventName, Array<Observer<any>>>();
  private readonly log: Logger;
  private settler: ((event: EventName, eventId: string) => Promise<void>) | null = null;

  constructor(log: Logger) {
    this.log = log;
  }

  /** A validator that runs inside the emitting transaction, before the event is appended; throwing vetoes the change. */
  hook<E extends EventName>(event: E, fn: Hook<E>): () => void {
    return add(this.hooks, event, fn);
  }

  /**
   * An observer in this process, told after the appending transaction commits: at most once,
   * lost if the process stops (for in-process observers such as tests and caches; plugins get
   * events durably from the outbox instead).
   */
  on<E extends EventName>(event: E, fn: Observer<E>): () => void {
    return add(this.observers, event, fn);
  }

  /**
   * `awaited`: the change is a request's own (an API create or update) whose answer must be
   * readable at once: after the commit, the transaction waits (through the settler the
   * extension host sets) for the subscribers that declared the event `awaited` to handle it.
   * Never set where a plugin's own call emits: that call could wait on its own plugin.
   */
  async emit<E extends EventName>(tx: Tx, event: E, payload: KernelEvents[E], options: { awaited?: boolean } = {}): Promise<string> {
    for (const hook of this.hooks.get(event) ?? []) await hook(tx, payload);
    const id = await this.append(tx, event, payload);
    const settle = this.settler;
    if (options.awaited && settle) tx.afterCommit(() => settle(event, id));
    return id;
  }

  /** How an awaited event is waited for after its commit (contributions/events.ts). */
  settleWith(settler: ((event: EventName, eventId: string) => Promise<void>) | null): void {
    this.settler = settler;
  }

  /**
   * Appends an event without validators: for a change that was already committed elsewhere (a
   * plugin's own transaction, through a kernel bridge), which no validator can veto any more.
   */
  async append<E extends EventName>(tx: Tx, event: E, payload: KernelEvents[E]): Promise<string> {
    const entity = entityOf(event, payload);
    const row = await tx.maybeOne<{ id: string }>(
      "select keel_private.append_event(?, 'kernel', ?::uuid, ?, ?, ?::jsonb) as id",
      [event, payload.companyId, entity.type, entity.id, JSON.stringify(payload)],
    );
    this.log.debug({ event, eventId: row!.id }, 'event appended');
    const observers = this.observers.get(event);
    if (observers?.length) {
      tx.afterCommit(async () => {
        for (const observer of observers) {
          try { await observer(payload); } catch (error) { this.log.error({ err: error, event }, 'event observer failed'); }
        }
      });
    }
    return row!.id;
  }

  /**
   * Appends an event for one subscribing plugin only (keel_private.append_event_to, migration
   * 0023): execution events reach the plugin that started the execution and no other. No
   * validators run: nothing may veto an execution's output or end.
   */
  async appendTo<E extends EventName>(tx: Tx, event: E, payload: KernelEvents[E], subscriber: string): Promise<string> {
    const entity = entityOf(event, payload);
    const row = await tx.maybeOne<{ id: string }>(
      'select keel_private.append_event_to(?, ?::uuid, ?, ?, ?::jsonb, ?) as id',
      [event, payload.companyId, entity.type, entity.id, JSON.stringify(payload), subscriber]);
    return row!.id;
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
