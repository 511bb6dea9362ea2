import { capabilityMethod, grantedMembers } from '../capabilities/index.ts';
import type { InvocationInfo, PluginContext, FetchResponse, RouteRequest } from './context.ts';
import { registeredDefinition, type PluginDefinition } from './define-plugin.ts';
import { PluginError } from './errors.ts';
import { plainDataCopy, wireJson } from './wire-json.ts';
import { MAX_ARGS_CHARS, MAX_KERNEL_ARGS_CHARS, stringsExceed } from './wire-budget.ts';

/**
 * The isolate side of the host/plugin protocol. It is bundled into every plugin and talks
 * to the host only through `__keel_host`, three plain synchronous functions the host
 * installs before the bundle runs. Asynchronous host work (a query, a fetch) returns an op
 * id at once; the host later calls `__keel_settle` with the outcome, and the plugin's
 * `await` resumes inside that call. Only JSON strings cross the boundary.
 */
interface HostBridge {
  call(invocationId: string, capability: string, method: string, args: string): string;
  done(invocationId: string, result: string): void;
  log(invocationId: string, level: string, message: string, fields: string): void;
}

interface Setup { grants: string[]; config: Record<string, unknown> }

const g = globalThis as unknown as Record<string, unknown>;
// Captured when the SDK loads, before plugin code could replace it.
const quote = JSON.stringify;
const pending = new Map<number, { resolve(value: unknown): void; reject(error: unknown): void }>();
let setup: Setup = { grants: [], config: {} };

function host(): HostBridge {
  return g.__keel_host as HostBridge;
}

/** One call across the boundary; resolves now or when the host settles the op. */
function call(invocationId: string, capability: string, method: string, args: unknown[]): Promise<unknown> {
  const spec = capabilityMethod(capability, method)?.spec;
  const bound = spec?.argumentsBound ?? { chars: spec?.servedBy === 'kernel' ? MAX_KERNEL_ARGS_CHARS : MAX_ARGS_CHARS, status: 413, code: 'invalid_arguments', message: '' };
  // Measured before they are copied: see wire-budget.ts.
  if (stringsExceed(args, bound.chars)) return Promise.reject(new PluginError(bound.status, bound.code, `ctx.${capability}.${method}: ${bound.message || `arguments larger than ${bound.chars} characters`}`));
  let argsJson: string;
  try {
    // An omitted optional argument is null on the wire, as it always was; anything else must be plain JSON.
    argsJson = wireJson(args.map((arg) => (arg === undefined ? null : arg)), 'args');
  } catch (error) {
    return Promise.reject(new PluginError(400, 'invalid_arguments', `ctx.${capability}.${method}: ${String((error as Error)?.message ?? error)}`));
  }
  let raw: string;
  try {
    raw = host().call(invocationId, capability, method, argsJson);
  } catch (error) {
    return Promise.reject(new PluginError(500, 'host_call_failed', String((error as Error)?.message ?? error)));
  }
  const reply = JSON.parse(raw) as { v?: unknown; op?: number; e?: { status?: number; code: string; message: string } };
  if (reply.e) return Promise.reject(new PluginError(reply.e.status ?? 500, reply.e.code, reply.e.message));
  if (reply.op === undefined) return Promise.resolve(reply.v);
  return new Promise((resolve, reject) => pending.set(reply.op!, { resolve, reject }));
}

function settle(op: number, ok: boolean, json: string): void {
  const waiter = pending.get(op);
  if (!waiter) return;
  pending.delete(op);
  const value = json === '' ? undefined : JSON.parse(json);
  if (ok) waiter.resolve(value);
  else waiter.reject(new PluginError(value?.status ?? 500, value?.code ?? 'host_error', value?.message ?? 'Host call failed'));
}

/** The members each set of grants gives, worked out once per worker (grants do not change while it runs). */
let grantedCache: { grants: string[]; members: Map<string, string[]> } | null = null;
function grantedFor(grants: string[]): Map<string, string[]> {
  if (grantedCache?.grants !== grants) grantedCache = { grants, members: grantedMembers(grants) };
  return grantedCache.members;
}

function buildContext(info: InvocationInfo): PluginContext {
  const c = (capability: string, method: string) => (...args: unknown[]) => call(info.id, capability, method, args);
  const log = (level: string) => (message: string, fields?: Record<string, unknown>) => {
    if (typeof message !== 'string') throw new PluginError(400, 'invalid_arguments', `ctx.log.${level}: the message must be a string`);
    let fieldsJson: string;
    try { fieldsJson = wireJson(fields ?? {}, 'fields'); } catch (error) {
      throw new PluginError(400, 'invalid_arguments', `ctx.log.${level}: ${String((error as Error)?.message ?? error)}`);
    }
    host().log(info.id, level, message, fieldsJson);
  };
  const ctx: PluginContext = {
    invocation: info,
    config: setup.config,
    log: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') },
  };
  const members = ctx as unknown as Record<string, Record<string, unknown>>;
  for (const [member, methods] of grantedFor(setup.grants)) {
    const table: Record<string, unknown> = {};
    for (const method of methods) table[method] = c(member, method);
    members[member] = table;
  }
  if (members.http) {
    // A fetched body is text; json() parses it in the isolate.
    members.http.fetch = async (url: unknown, init?: unknown) => {
      // The options are copied as plain data: a getter or setter on them is refused, never run.
      let options: unknown;
      try { options = init === undefined || init === null ? {} : plainDataCopy(init, 'options'); } catch (error) {
        throw new PluginError(400, 'invalid_arguments', `ctx.http.fetch: ${String((error as Error)?.message ?? error)}`);
      }
      const response = await call(info.id, 'http', 'fetch', [url, options]) as { status: number; headers: Record<string, string>; body: string };
      return { ...response, json: () => JSON.parse(response.body) } as FetchResponse;
    };
  }
  return ctx;
}

function handlerFor(definition: PluginDefinition, kind: InvocationInfo['kind'], target: string): ((input: unknown, ctx: PluginContext) => unknown) | undefined {
  const table: Record<string, Record<string, unknown> | undefined> = {
    route: definition.routes, tool: definition.tools, webhook: definition.webhooks, event: definition.events,
    hook: definition.hooks, data: definition.data, action: definition.actions, service: definition.services,
  };
  // Own properties only: a target named like an inherited member (constructor, toString) finds nothing.
  const own = <T>(table: Record<string, T> | undefined): T | undefined => (table && Object.hasOwn(table, target) ? table[target] : undefined);
  if (kind === 'job') {
    const job = own(definition.jobs);
    return job ? (payload, ctx) => job(ctx, payload) : undefined;
  }
  if (kind === 'route_batch') {
    const batch = own(definition.batches);
    return typeof batch === 'function' ? (input, ctx) => runBatch(batch, input as { calls: Array<{ info: InvocationInfo; input: RouteRequest }> }, ctx) : undefined;
  }
  if (kind === 'validate_config') {
    return definition.validateConfig ? (input, ctx) => definition.validateConfig!(input as Record<string, unknown>, ctx) : () => ({ ok: true });
  }
  const handler = Object.hasOwn(table, kind) ? own(table[kind]) : undefined;
  return typeof handler === 'function' ? handler as (input: unknown, ctx: PluginContext) => unknown : undefined;
}

/** Each call of a batch gets its own ctx (its own identity); each answer is marked ok or failed. */
async function runBatch(batch: NonNullable<PluginDefinition['batches']>[string], input: { calls: Array<{ info: InvocationInfo; input: RouteRequest }> }, ctx: PluginContext): Promise<unknown> {
  const answers = await batch(input.calls.map((call) => ({ request: call.input, ctx: buildContext(call.info) })), ctx);
  if (!Array.isArray(answers) || answers.length !== input.calls.length) {
    throw new PluginError(500, 'invalid_batch_result', `A batch handler must answer each of its ${input.calls.length} calls, in order`);
  }
  return answers.map((answer) => (answer instanceof PluginError ? { ok: false, e: errorOf(answer) } : { ok: true, v: answer === undefined ? null : answer }));
}

function errorOf(error: unknown): WireError {
  if (error instanceof PluginError) return { status: error.status, code: error.code, message: error.message, details: error.details, issues: error.issues };
  const message = error instanceof Error ? error.message : String(error);
  return { status: 500, code: 'plugin_error', message: `Plugin failed: ${message}` };
}

interface WireError { status: unknown; code: unknown; message: unknown; details?: unknown; issues?: unknown }

/**
 * The text of a failed answer, written field by field: JSON.stringify of the envelope would
 * honour a toJSON the plugin put on Object.prototype and send whatever that answered.
 */
function errorEnvelope(error: WireError): string {
  const status = typeof error.status === 'number' && Number.isFinite(error.status) ? String(error.status) : '500';
  const code = typeof error.code === 'string' ? error.code : 'plugin_error';
  const message = typeof error.message === 'string' ? error.message : 'Plugin failed';
  const details = error.details === undefined ? '' : `,"details":${wireJson(error.details, 'error.details')}`;
  const issues = error.issues === undefined ? '' : `,"issues":${wireJson(error.issues, 'error.issues')}`;
  return `{"ok":false,"e":{"status":${status},"code":${quote(code)},"message":${quote(message)}${details}${issues}}}`;
}

function dispatch(json: string): void {
  const { id, kind, target, input, info } = JSON.parse(json) as { id: string; kind: InvocationInfo['kind']; target: string; input: unknown; info: InvocationInfo };
  const finish = (ok: boolean, value: unknown) => {
    let text: string;
    try {
      text = ok ? `{"ok":true,"v":${wireJson(value, 'result')}}` : errorEnvelope(value as WireError);
    } catch (error) {
      const what = ok ? 'Plugin result' : 'Plugin error';
      text = errorEnvelope({ status: 500, code: 'unserializable_result', message: `${what} is not plain JSON: ${String((error as Error)?.message ?? error)}` });
    }
    host().done(id, text);
  };
  const definition = registeredDefinition();
  const undeclared = (definition?.capabilities ?? []).filter((id) => !setup.grants.includes(id));
  if (undeclared.length) {
    finish(false, { status: 500, code: 'capability_not_granted', message: `The plugin's code is typed for ${undeclared.join(', ')} (definePlugin's capabilities), which plugin.json does not declare or the operator has not granted; keel plugin build writes src/plugin.gen.ts from plugin.json again` });
    return;
  }
  const handler = definition && handlerFor(definition, kind, target);
  if (!handler) {
    finish(false, { status: 501, code: 'handler_missing', message: `Plugin has no ${kind} handler "${target}"` });
    return;
  }
  let result: unknown;
  try {
    result = handler(input, buildContext(info));
  } catch (error) {
    finish(false, errorOf(error));
    return;
  }
  Promise.resolve(result).then((value) => finish(true, value), (error) => finish(false, errorOf(error)));
}

g.__keel_init = (json: string) => { setup = JSON.parse(json) as Setup; };
g.__keel_dispatch = dispatch;
g.__keel_settle = settle;
