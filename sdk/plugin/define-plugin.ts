import type { CapabilityId } from '../capabilities/index.ts';
import type { DeclaredEventName, DeclaredEventPayloads } from '../events/index.ts';
import type { JobDeclarations, JobPayloadOf, UntypedJobs } from '../capabilities/jobs.ts';
import type { BatchCall, PluginContext, RouteRequest, RouteResponse, WebhookRequest } from './context.ts';

type Handler<I, O, G extends CapabilityId | undefined, J extends JobDeclarations = UntypedJobs> = (input: I, ctx: PluginContext<G, J>) => O | Promise<O>;

/**
 * Event subscribers (or in-transaction hooks) by event name. An event the SDK declares
 * (sdk/events: the kernel's, and the first-party plugins' that others subscribe to) is handled
 * with its declared payload: name it by its declaration, `{ [runClosed.name]: onRunClosed }`,
 * and a handler expecting another payload does not compile. Other events' handlers receive a
 * JSON object.
 */
export type EventHandlers<Events, G extends CapabilityId | undefined = undefined, J extends JobDeclarations = UntypedJobs> = {
  [Name in keyof Events]: Handler<Name extends DeclaredEventName ? DeclaredEventPayloads[Name] : Record<string, unknown>, void, G, J>;
};

/** A subscriber as the runtime holds it: its payload was checked against its event's declaration by definePlugin. */
type HeldEventHandler<G extends CapabilityId | undefined, J extends JobDeclarations> = Handler<never, void, G, J>;

/**
 * Job handlers by key. Typed by a plugin's jobs (the `Jobs` of its plugin.gen.ts, from
 * plugin.json), each handler's `payload` is what that job runs with (`JobPayloadOf`): the type
 * of its payloadSchema when enqueued, the folder's changes for a folder's onChange job, and
 * null for a scheduled run or an operator's trigger; a key plugin.json does not declare does
 * not compile.
 */
export type JobHandlers<G extends CapabilityId | undefined = undefined, J extends JobDeclarations = UntypedJobs> = {
  [Key in keyof J]?: (ctx: PluginContext<G, J>, payload: JobPayloadOf<J[Key]>) => unknown | Promise<unknown>;
};

/** A definition as a plugin writes it: its subscribers' payloads are checked by event name. */
type DefinitionOf<G extends CapabilityId | undefined, Events, Hooks, J extends JobDeclarations = UntypedJobs> = Omit<PluginDefinition<G, J>, 'events' | 'hooks'> & {
  events?: EventHandlers<Events, G, J>;
  hooks?: EventHandlers<Hooks, G, J>;
};

/**
 * What a plugin implements; keys match the manifest's contributions. `capabilities` lists the
 * ids of plugin.json's capabilities this code is typed for (the `definePlugin` of the module
 * `keel plugin build` writes from plugin.json sets it): each handler's `ctx` then has their
 * members, typed and present, and the host refuses to run the code if plugin.json does not
 * declare one of them.
 */
export interface PluginDefinition<G extends CapabilityId | undefined = undefined, J extends JobDeclarations = UntypedJobs> {
  capabilities?: readonly CapabilityId[];
  routes?: Record<string, Handler<RouteRequest, RouteResponse | unknown, G, J>>;
  /**
   * Set-based handlers for batched routes (`batch` in the manifest): one call receives every
   * call of a group commit and answers each, in order, with a value (or `respond(...)`) or a
   * thrown-style `PluginError` instance. All share one transaction: a call answered with an
   * error must have written nothing. If the handler throws, the batch is rolled back and each
   * call runs again through `routes[key]` on its own.
   */
  batches?: Record<string, (calls: Array<BatchCall<G, J>>, ctx: PluginContext<G, J>) => Array<RouteResponse | unknown> | Promise<Array<RouteResponse | unknown>>>;
  tools?: Record<string, Handler<unknown, unknown, G, J>>;
  /**
   * Job handlers; `payload` is what ctx.jobs.enqueue passed (null for a scheduled or manual run),
   * or a folder's changes for its onChange job: typed per key from plugin.json (`JobHandlers`).
   */
  jobs?: JobHandlers<G, J>;
  webhooks?: Record<string, Handler<WebhookRequest, RouteResponse | unknown, G, J>>;
  /** After-commit event subscribers (typed by `EventHandlers` where the plugin is defined). */
  events?: Record<string, HeldEventHandler<G, J>>;
  /** In-transaction hooks: a throw rolls the kernel's change back. */
  hooks?: Record<string, HeldEventHandler<G, J>>;
  data?: Record<string, Handler<unknown, unknown, G, J>>;
  actions?: Record<string, Handler<unknown, unknown, G, J>>;
  services?: Record<string, Handler<unknown, unknown, G, J>>;
  validateConfig?: (config: Record<string, unknown>, ctx: PluginContext<G, J>) => { ok: boolean; errors?: string[] } | Promise<{ ok: boolean; errors?: string[] }>;
}

const REGISTERED = Symbol.for('keel.plugin.definition');

/**
 * Declares a plugin. Call it once, as the default export of the plugin's entry module:
 * `export default definePlugin({ capabilities: ['database.namespace.write'], routes: { list: (req, ctx) => ctx.db.query('select ...') } })`.
 * List `capabilities` first: the handlers' `ctx` is typed from it.
 */
export function definePlugin<const Ids extends readonly CapabilityId[] = readonly [], Events = {}, Hooks = {}>(
  definition: { capabilities?: Ids } & DefinitionOf<Ids extends readonly [] ? undefined : Ids[number], Events, Hooks>,
): PluginDefinition<Ids extends readonly [] ? undefined : Ids[number]> {
  (globalThis as Record<symbol, unknown>)[REGISTERED] = definition;
  return definition;
}

/**
 * `definePlugin` bound to a plugin's capabilities and jobs: what the module `keel plugin build`
 * writes from plugin.json (`src/plugin.gen.ts`) exports, so the handlers' `ctx` and the jobs'
 * payloads are typed from the manifest (`definePluginWith<typeof capabilities, Jobs>(capabilities)`)
 * and the bundle carries the list the code was typed against (the runtime refuses every call
 * when plugin.json no longer declares one of them). The jobs are a type only.
 */
export function definePluginWith<const Ids extends readonly CapabilityId[], Jobs extends JobDeclarations = UntypedJobs>(capabilities: Ids) {
  return <Events = {}, Hooks = {}>(definition: DefinitionOf<Ids[number], Events, Hooks, Jobs>): PluginDefinition<Ids[number], Jobs> => {
    const bound = { ...definition, capabilities };
    (globalThis as Record<symbol, unknown>)[REGISTERED] = bound;
    return bound;
  };
}

/** The registered definition, as the runtime calls it (the ctx it builds has what was granted). */
export function registeredDefinition(): PluginDefinition | undefined {
  return (globalThis as Record<symbol, unknown>)[REGISTERED] as PluginDefinition | undefined;
}
