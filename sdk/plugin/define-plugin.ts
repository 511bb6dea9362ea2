import type { BatchCall, PluginContext, RouteRequest, RouteResponse, WebhookRequest } from './context.ts';

type Handler<I, O> = (input: I, ctx: PluginContext) => O | Promise<O>;

/** What a plugin implements; keys match the manifest's contributions. */
export interface PluginDefinition {
  routes?: Record<string, Handler<RouteRequest, RouteResponse | unknown>>;
  /**
   * Set-based handlers for batched routes (`batch` in the manifest): one call receives every
   * call of a group commit and answers each, in order, with a value (or `respond(...)`) or a
   * thrown-style `PluginError` instance. All share one transaction: a call answered with an
   * error must have written nothing. If the handler throws, the batch is rolled back and each
   * call runs again through `routes[key]` on its own.
   */
  batches?: Record<string, (calls: BatchCall[], ctx: PluginContext) => Array<RouteResponse | unknown> | Promise<Array<RouteResponse | unknown>>>;
  tools?: Record<string, Handler<unknown, unknown>>;
  /** Job handlers; `payload` is what ctx.jobs.enqueue passed (null for a scheduled or manual run). */
  jobs?: Record<string, (ctx: PluginContext, payload: unknown) => unknown | Promise<unknown>>;
  webhooks?: Record<string, Handler<WebhookRequest, RouteResponse | unknown>>;
  /** After-commit event subscribers. */
  events?: Record<string, Handler<Record<string, unknown>, void>>;
  /** In-transaction hooks: a throw rolls the kernel's change back. */
  hooks?: Record<string, Handler<Record<string, unknown>, void>>;
  data?: Record<string, Handler<unknown, unknown>>;
  actions?: Record<string, Handler<unknown, unknown>>;
  services?: Record<string, Handler<unknown, unknown>>;
  validateConfig?: (config: Record<string, unknown>, ctx: PluginContext) => { ok: boolean; errors?: string[] } | Promise<{ ok: boolean; errors?: string[] }>;
}

const REGISTERED = Symbol.for('keel.plugin.definition');

/**
 * Declares a plugin. Call it once, as the default export of the plugin's entry module:
 * `export default definePlugin({ routes: { echo: (req) => req.body } })`.
 */
export function definePlugin<T extends PluginDefinition>(definition: T): T {
  (globalThis as Record<symbol, unknown>)[REGISTERED] = definition;
  return definition;
}

export function registeredDefinition(): PluginDefinition | undefined {
  return (globalThis as Record<symbol, unknown>)[REGISTERED] as PluginDefinition | undefined;
}
