import type { KernelToWorker, InvokeMessage, WireError, WorkerInit, WorkerToKernel } from '../protocol/messages.ts';
import { activityCapability, writeActivity } from './capabilities/activity.ts';
import { PluginDatabase } from './capabilities/database.ts';
import { CapabilityError, type WorkerCapability } from './capabilities/types.ts';
import { Invocation } from './invocation.ts';
import { Sandbox } from './sandbox.ts';
import { workerCapabilities } from './capabilities/registry.ts';

/**
 * The extension-host worker: one process per enabled plugin, holding that plugin's isolate
 * and its database connections. A fatal V8 error, a memory blow-up or a runaway loop ends
 * this process only; the kernel's supervisor restarts it with backoff.
 */
const send = (message: WorkerToKernel) => process.send!(message);

/** Capabilities served by the kernel, because they touch kernel data outside the plugin's role. */
const KERNEL_CAPABILITIES = new Set(['companies', 'agents', 'runs', 'secrets', 'services', 'streams']);
const GRANT_OF: Record<string, (method: string) => string[]> = {
  db: () => ['database.namespace.read', 'database.namespace.write'],
  activity: () => ['activity.write'],
  http: () => ['http.fetch'],
  folders: () => ['local.folders'],
  companies: () => ['companies.read'],
  agents: (method) => (method === 'get' ? ['agents.read', 'agents.pause'] : ['agents.pause']),
  runs: (method) => [method === 'open' ? 'runs.open' : 'runs.close'],
  secrets: () => ['secrets.resolve'],
  services: () => ['services.consume'],
  streams: () => ['ui.streams'],
};

let init: WorkerInit;
let sandbox: Sandbox;
let database: PluginDatabase | null = null;
let capabilities: Record<string, WorkerCapability> = {};
const invocations = new Map<string, Invocation>();
const kernelCalls = new Map<number, { resolve(value: unknown): void; reject(error: unknown): void }>();
let nextOp = 1;
let nextKernelCall = 1;
let logBudget = { windowStart: Date.now(), lines: 0, dropped: 0 };

function wire(error: unknown): WireError {
  if (error instanceof CapabilityError) return { status: error.status, code: error.code, message: error.message };
  const candidate = error as { status?: number; code?: string; message?: string };
  if (candidate && typeof candidate.status === 'number' && typeof candidate.code === 'string') {
    return { status: candidate.status, code: candidate.code, message: String(candidate.message ?? 'failed') };
  }
  return { status: 500, code: 'host_error', message: 'The host could not complete the call' };
}

/** Sync host function: checks the invocation and the grant, then starts the work. */
function hostCall(invocationId: string, capability: string, method: string, argsJson: string): string {
  const invocation = invocations.get(invocationId);
  if (!invocation || invocation.finished) {
    return JSON.stringify({ e: { status: 409, code: 'invocation_closed', message: 'This ctx belongs to an invocation that has finished' } });
  }
  const needed = GRANT_OF[capability]?.(method);
  if (!needed) return JSON.stringify({ e: { status: 400, code: 'unknown_capability', message: `Unknown capability "${capability}"` } });
  if (!needed.some((grant) => init.grants.includes(grant))) {
    log('warn', `denied ${capability}.${method}: not granted`, { capability, method }, invocationId);
    return JSON.stringify({ e: { status: 403, code: 'capability_denied', message: `${init.pluginKey}: ${capability}.${method} needs ${needed.join(' or ')}, which is not granted; declare it under capabilities in plugin.json and re-enable the plugin` } });
  }
  if (capability === 'db' && method === 'query' && !init.grants.includes('database.namespace.write') && invocation.message.transactional === false) {
    // Read-only plugins get no write privileges from the database; nothing more to check here.
  }
  let args: unknown[];
  try {
    args = JSON.parse(argsJson) as unknown[];
    if (!Array.isArray(args)) throw new Error('not an array');
  } catch {
    return JSON.stringify({ e: { status: 400, code: 'invalid_arguments', message: 'Arguments must be a JSON array' } });
  }
  const op = nextOp++;
  invocation.ops.add(op);
  const work = KERNEL_CAPABILITIES.has(capability)
    ? callKernel(invocationId, capability, method, args)
    : Promise.resolve().then(() => {
      const handler = capabilities[capability]?.[method];
      if (!handler) throw new CapabilityError(400, 'unknown_method', `Unknown method ${capability}.${method}`);
      return handler(invocation, args);
    });
  work.then(
    (value) => settle(invocation, op, true, value),
    (error) => settle(invocation, op, false, wire(error)),
  );
  return JSON.stringify({ op });
}

function callKernel(invocationId: string, capability: string, method: string, args: unknown[]): Promise<unknown> {
  const id = nextKernelCall++;
  return new Promise((resolve, reject) => {
    kernelCalls.set(id, { resolve, reject });
    send({ t: 'call', id, invocationId, capability, method, args });
  });
}

function settle(invocation: Invocation, op: number, ok: boolean, value: unknown): void {
  invocation.ops.delete(op);
  if (invocation.finished || sandbox.disposed) return;
  let json: string;
  try { json = value === undefined ? '' : JSON.stringify(value); } catch { json = JSON.stringify({ status: 500, code: 'host_error', message: 'unserializable host result' }); ok = false; }
  try {
    sandbox.settle(op, ok, json);
  } catch (error) {
    failFromIsolate(invocation, error);
  }
}

function hostDone(invocationId: string, resultJson: string): void {
  const invocation = invocations.get(invocationId);
  if (!invocation || invocation.finished) return;
  invocation.finished = true;
  void finish(invocation, resultJson);
}

function log(level: 'debug' | 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>, invocationId?: string): void {
  const now = Date.now();
  if (now - logBudget.windowStart > 60_000) {
    if (logBudget.dropped > 0) send({ t: 'log', level: 'warn', message: `dropped ${logBudget.dropped} log lines over the per-minute limit` });
    logBudget = { windowStart: now, lines: 0, dropped: 0 };
  }
  if (++logBudget.lines > init.limits.maxLogLinesPerMinute) { logBudget.dropped++; return; }
  send({ t: 'log', level, message: message.slice(0, 2000), fields, invocationId });
}

function hostLog(invocationId: string, level: string, message: string, fieldsJson: string): void {
  const safeLevel = (['debug', 'info', 'warn', 'error'] as const).find((l) => l === level) ?? 'info';
  let fields: Record<string, unknown> | undefined;
  try { fields = fieldsJson.length > 8000 ? { truncated: true } : JSON.parse(fieldsJson) as Record<string, unknown>; } catch { fields = undefined; }
  log(safeLevel, message, fields, invocationId);
}

/** Commits or rolls back the invocation's transaction, then reports the result once. */
async function finish(invocation: Invocation, resultJson: string): Promise<void> {
  clearTimeout(invocation.timer);
  let parsed: { ok: boolean; v?: unknown; e?: WireError };
  try { parsed = JSON.parse(resultJson) as typeof parsed; } catch { parsed = { ok: false, e: { status: 500, code: 'plugin_error', message: 'Plugin produced no valid result' } }; }
  let ok = parsed.ok;
  let error = parsed.e;
  let value = ok ? JSON.stringify(parsed.v ?? null) : undefined;
  if (ok && value !== undefined && Buffer.byteLength(value) > init.limits.maxResponseBytes) {
    ok = false;
    error = { status: 502, code: 'plugin_response_too_large', message: `Plugin response exceeds ${init.limits.maxResponseBytes} bytes` };
    value = undefined;
  }
  const client = invocation.client;
  if (client) {
    try {
      if (ok) {
        const fallback = invocation.message.defaultActivity;
        if (fallback && !invocation.activityWritten && database) await writeActivity(database, invocation, fallback);
        await client.query('COMMIT');
      } else {
        await client.query('ROLLBACK');
      }
    } catch (commitError) {
      ok = false;
      error = { status: 500, code: 'plugin_transaction_failed', message: `The plugin's transaction could not commit: ${(commitError as Error).message}` };
      value = undefined;
      await client.query('ROLLBACK').catch(() => undefined);
    }
    invocation.client = null;
    database?.release(client);
  } else if (ok && invocation.message.defaultActivity && !invocation.activityWritten && database && invocation.message.signed) {
    await writeActivity(database, invocation, invocation.message.defaultActivity).catch(() => undefined);
  }
  invocations.delete(invocation.id);
  send({ t: 'result', id: invocation.id, ok, value, error, activityWritten: invocation.activityWritten });
}

function failFromIsolate(invocation: Invocation, error: unknown): void {
  const message = String((error as Error)?.message ?? error);
  let wireError: WireError;
  if (sandbox.disposed || /memory limit/i.test(message)) {
    wireError = { status: 503, code: 'plugin_out_of_memory', message: `${init.pluginKey} ran out of memory; it is being restarted` };
  } else if (/timed out/i.test(message)) {
    wireError = { status: 504, code: 'plugin_timeout', message: `${init.pluginKey} exceeded its CPU time limit` };
  } else {
    wireError = { status: 500, code: 'plugin_error', message: `${init.pluginKey} failed: ${message.split('\n')[0]!.slice(0, 500)}` };
  }
  if (!invocation.finished) {
    invocation.finished = true;
    void finish(invocation, JSON.stringify({ ok: false, e: wireError }));
  }
  if (sandbox.disposed) restartWorker(`isolate disposed: ${message}`);
}

/** Ends this process; the kernel restarts the plugin with a fresh isolate. */
function restartWorker(reason: string): void {
  send({ t: 'fatal', reason });
  setTimeout(() => process.exit(70), 50).unref();
}

async function invoke(message: InvokeMessage): Promise<void> {
  const invocation = new Invocation(message);
  invocations.set(message.id, invocation);
  invocation.timer = setTimeout(() => {
    if (invocation.finished) return;
    log('error', `call ${message.kind}:${message.target} exceeded its ${message.deadlineMs} ms deadline; restarting the isolate`);
    invocation.finished = true;
    void finish(invocation, JSON.stringify({ ok: false, e: { status: 504, code: 'plugin_timeout', message: `${init.pluginKey} did not answer within ${message.deadlineMs} ms` } }))
      .finally(() => restartWorker('wall-clock deadline exceeded'));
  }, message.deadlineMs);
  if (message.transactional && database) {
    invocation.client = await database.pool.connect();
    // Queued on the client: the plugin's first statement runs after BEGIN without a wait here.
    invocation.client.query('BEGIN').catch(() => undefined);
  }
  const json = JSON.stringify({ id: message.id, kind: message.kind, target: message.target, input: JSON.parse(message.input), info: message.info });
  try {
    sandbox.dispatch(json);
  } catch (error) {
    failFromIsolate(invocation, error);
  }
}

async function boot(received: WorkerInit): Promise<void> {
  const started = performance.now();
  init = received;
  sandbox = new Sandbox({
    memoryMb: init.limits.memoryMb,
    cpuSliceMs: init.limits.cpuSliceMs,
    onCatastrophicError: (message) => { send({ t: 'fatal', reason: `V8 catastrophic error: ${message}` }); process.exit(71); },
  });
  if (init.database) database = new PluginDatabase(init.database.url, init.database.schema, 16);
  capabilities = { ...workerCapabilities(init), activity: activityCapability(database) };
  if (database) capabilities.db = database.capability();
  sandbox.load(init.code, { call: hostCall, done: hostDone, log: hostLog }, { grants: init.grants, config: init.config });
  send({ t: 'ready', bootMs: performance.now() - started });
}

process.on('message', (message: KernelToWorker) => {
  switch (message.t) {
    case 'init':
      boot(message.init).catch((error: Error) => {
        send({ t: 'boot_failed', error: { status: 500, code: 'plugin_boot_failed', message: error.message.split('\n')[0]!.slice(0, 1000) } });
        setTimeout(() => process.exit(1), 20);
      });
      break;
    case 'invoke':
      void invoke(message);
      break;
    case 'reply': {
      const waiter = kernelCalls.get(message.id);
      if (!waiter) return;
      kernelCalls.delete(message.id);
      if (message.ok) waiter.resolve(message.value);
      else waiter.reject(new CapabilityError(message.error?.status ?? 500, message.error?.code ?? 'kernel_error', message.error?.message ?? 'kernel call failed'));
      break;
    }
    case 'config':
      init.config = message.config;
      sandbox.updateConfig({ grants: init.grants, config: message.config });
      break;
    case 'shutdown':
      void (async () => { sandbox?.dispose(); await database?.close(); process.exit(0); })();
      break;
  }
});
process.on('disconnect', () => process.exit(0));
