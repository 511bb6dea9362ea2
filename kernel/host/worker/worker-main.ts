import type { KernelToWorker, InvokeMessage, WireError, WorkerInit, WorkerToKernel } from '../protocol/messages.ts';
import { capabilityMethod } from '../../../sdk/capabilities/index.ts';
import { checkCapabilityCall, parseCallArguments } from '../../../sdk/capabilities/check-call.ts';
import { activityCapability, ActivityEntityKinds, recordInBatch, writeActivity } from './capabilities/activity.ts';
import { PluginDatabase } from './capabilities/database.ts';
import { budgetsCapability, scopesCapability } from './capabilities/kernel-rows.ts';
import { eventsCapability } from './capabilities/events.ts';
import { CapabilityError, type WorkerCapability } from './capabilities/types.ts';
import { batchRunner } from './batches.ts';
import { DeliveredSecrets } from './delivered-secrets.ts';
import { Invocation } from './invocation.ts';
import { jsonTooDeep, MAX_JSON_DEPTH } from './json-bounds.ts';
import { Sandbox } from '../../../sdk/shared/sandbox.ts';
import { workerCapabilities } from './capabilities/registry.ts';

/**
 * The extension-host worker: one process per enabled plugin, holding that plugin's isolate
 * and its database connections. A fatal V8 error, a memory blow-up or a runaway loop ends
 * this process only; the kernel's supervisor restarts it with backoff.
 */
const send = (message: WorkerToKernel) => process.send!(message);


let init: WorkerInit;
let sandbox: Sandbox;
let database: PluginDatabase | null = null;
let capabilities: Record<string, WorkerCapability> = {};
/** Secret values delivered to the isolate, kept out of everything the plugin sends out. */
const delivered = new DeliveredSecrets();
/** Activity entity types the database checks against the invocation's company (see capabilities/activity.ts). */
let activityKinds = new ActivityEntityKinds(null);
const invocations = new Map<string, Invocation>();
const kernelCalls = new Map<number, { resolve(value: unknown): void; reject(error: unknown): void }>();
let nextOp = 1;
/** The invocation whose code the isolate is running right now (set while the host is inside dispatch or settle). */
let entered: string | null = null;
let nextKernelCall = 1;
let logBudget = { windowStart: Date.now(), lines: 0, dropped: 0 };
/** Host work one invocation may have in flight; a burst of un-awaited calls must not flood the kernel. */
const MAX_PENDING_OPS = 64;
const MAX_ARGS_CHARS = 8 * 1024 * 1024;
const MAX_KERNEL_ARGS_CHARS = 1_000_000;
const closed = (message = 'This ctx belongs to an invocation that has finished') => JSON.stringify({ e: { status: 409, code: 'invocation_closed', message } });

function wire(error: unknown): WireError {
  if (error instanceof CapabilityError) return { status: error.status, code: error.code, message: error.message };
  const candidate = error as { status?: number; code?: string; message?: string };
  if (candidate && typeof candidate.status === 'number' && typeof candidate.code === 'string') {
    return { status: candidate.status, code: candidate.code, message: String(candidate.message ?? 'failed') };
  }
  return { status: 500, code: 'host_error', message: 'The host could not complete the call' };
}

const TRANSACTION_FAILURES = {
  open: "The plugin's transaction could not be opened",
  activity: 'The activity entry could not be written',
  commit: "The plugin's transaction could not commit",
} as const;

/**
 * A transaction that could not be opened, written or committed, as the caller sees it: a fixed
 * message. PostgreSQL's own text names the plugin's tables, constraints and values, so it goes
 * to the plugin's log only.
 */
function transactionFailed(stage: keyof typeof TRANSACTION_FAILURES, target: string, error: unknown): WireError {
  log('error', `${target}: ${TRANSACTION_FAILURES[stage]}: ${String((error as Error)?.message ?? error).slice(0, 500)}`);
  return { status: 500, code: 'plugin_transaction_failed', message: TRANSACTION_FAILURES[stage] };
}

/**
 * Host functions never throw into the isolate: an error thrown by host code would arrive
 * there with the host's stack and file paths. They answer with a code and a message instead.
 */
function shielded<A extends unknown[], R>(name: string, fn: (...args: A) => R, fallback: R): (...args: A) => R {
  return (...args: A) => {
    try {
      return fn(...args);
    } catch (error) {
      try { log('error', `host function ${name} failed: ${String((error as Error)?.message ?? error).slice(0, 300)}`); } catch { /* logging is best effort */ }
      return fallback;
    }
  };
}

/** Set when the isolate was disposed because code kept running after its call answered. */
let strayReason: string | null = null;

/**
 * Code the isolate runs after the call it was entered for has answered (a promise chain the
 * handler left behind) is stray work: it may not act on the host. At its first host call or
 * log line the isolate is disposed on the spot, which ends it at once, and a new isolate is
 * loaded (replaceIsolate) for the calls that follow. Pure computation that touches nothing
 * ends at the entry's CPU slice instead: nothing else can interrupt a running isolate.
 */
function interruptIfStray(): boolean {
  if (entered === null) return false;
  const current = invocations.get(entered);
  if (current && !current.finished) return false;
  strayReason ??= `code of a ${current?.message.kind ?? 'finished'} call kept running after its call answered`;
  sandbox.dispose();
  return true;
}

/** Sync host function: checks the invocation and the grant, then starts the work. */
function hostCall(invocationId: string, capability: string, method: string, argsJson: string): string {
  if (interruptIfStray()) return closed();
  const invocation = invocations.get(invocationId);
  if (!invocation || invocation.finished) return closed();
  // Plugin code runs only while the host has entered the isolate for one invocation; a ctx
  // kept from another invocation (even one still running) is refused.
  if (entered !== null && entered !== invocation.scopeId) return closed('This ctx belongs to another invocation');
  const declared = capabilityMethod(capability, method);
  if (!declared) return JSON.stringify({ e: { status: 400, code: 'unknown_capability', message: `Unknown capability ${capability}.${method}` } });
  const kernelServed = declared.spec.servedBy === 'kernel';
  const maxChars = kernelServed ? MAX_KERNEL_ARGS_CHARS : MAX_ARGS_CHARS;
  if (argsJson.length > maxChars) return JSON.stringify({ e: { status: 413, code: 'invalid_arguments', message: `Arguments larger than ${maxChars} characters` } });
  if (jsonTooDeep(argsJson)) return JSON.stringify({ e: { status: 400, code: 'invalid_arguments', message: `Arguments nested deeper than ${MAX_JSON_DEPTH} levels` } });
  if (invocation.ops.size >= MAX_PENDING_OPS) {
    return JSON.stringify({ e: { status: 429, code: 'too_many_pending_calls', message: `${init.pluginKey}: at most ${MAX_PENDING_OPS} host calls may be in flight per invocation; await them` } });
  }
  // The registry's check (sdk/capabilities): granted, in a company when it must be, arguments as declared.
  const parsed = parseCallArguments(argsJson);
  const checked = checkCapabilityCall({ plugin: init.pluginKey, grants: init.grants, member: capability, method, args: parsed, companyId: invocation.message.info.companyId });
  if ('refusal' in checked) {
    if (checked.refusal.code === 'capability_denied') log('warn', `denied ${capability}.${method}: not granted`, { capability, method }, invocationId);
    return JSON.stringify({ e: checked.refusal });
  }
  const args = parsed!;
  if (capability === 'activity' && method === 'record' && invocation.batch) {
    try {
      if (recordInBatch(database, invocation, args, activityKinds, delivered) === null) return '{"v":null}';
    } catch (error) {
      return JSON.stringify({ e: wire(error) });
    }
  }
  const op = nextOp++;
  invocation.ops.add(op);
  const work = Promise.resolve().then(() => {
    // Work starts after the isolate yields; a call the plugin made just before it returned
    // or failed must not run once the invocation is finished (its transaction is gone).
    if (invocation.finished) throw new CapabilityError(409, 'invocation_closed', 'This ctx belongs to an invocation that has finished');
    if (kernelServed) return callKernel(invocationId, capability, method, args);
    const table = Object.hasOwn(capabilities, capability) ? capabilities[capability]! : {};
    const handler = Object.hasOwn(table, method) ? table[method] : undefined;
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
    // Kernel calls carry the plugin's words onwards (a pause reason, a service's input, a stream event).
    send({ t: 'call', id, invocationId, capability, method, args: delivered.value(args) });
  });
}

function settle(invocation: Invocation, op: number, ok: boolean, value: unknown): void {
  invocation.ops.delete(op);
  if (invocation.finished || sandbox.disposed) return;
  let json: string;
  try { json = value === undefined ? '' : JSON.stringify(value); } catch { json = JSON.stringify({ status: 500, code: 'host_error', message: 'unserializable host result' }); ok = false; }
  try {
    entered = invocation.scopeId;
    sandbox.settle(op, ok, json);
  } catch (error) {
    failFromIsolate(invocation, error);
  } finally {
    entered = null;
  }
}

function hostDone(invocationId: string, resultJson: string): void {
  const invocation = invocations.get(invocationId);
  if (!invocation || invocation.finished) return;
  invocation.finished = true;
  finish(invocation, resultJson).catch((error) => finishFailed(invocation, error));
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
  if (interruptIfStray()) return;
  // A line of a call that has ended (a ctx kept past its call) is not written.
  const invocation = invocations.get(invocationId);
  if (!invocation || invocation.finished) return;
  const safeLevel = (['debug', 'info', 'warn', 'error'] as const).find((l) => l === level) ?? 'info';
  let fields: Record<string, unknown> | undefined;
  try { fields = fieldsJson.length > 8000 ? { truncated: true } : JSON.parse(fieldsJson) as Record<string, unknown>; } catch { fields = undefined; }
  log(safeLevel, delivered.text(message), delivered.value(fields), invocationId);
}

/** Last resort when finishing threw: the connection (and its transaction) is destroyed, the kernel still gets an answer. */
function finishFailed(invocation: Invocation, error: unknown): void {
  log('error', `finishing call ${invocation.message.kind}:${invocation.message.target} failed: ${String((error as Error)?.message ?? error).slice(0, 300)}`);
  if (invocation.client) { invocation.client.release(error instanceof Error ? error : new Error('finish failed')); invocation.client = null; }
  if (!invocations.delete(invocation.id)) return;
  send({ t: 'result', id: invocation.id, ok: false, error: { status: 500, code: 'host_error', message: 'The host could not finish the call' }, activityWritten: false });
}

/** Codes of the database errors ctx.db.query rejects with (kernel/host/worker/capabilities/database.ts). */
const DATABASE_ERROR = /^sql_(?:[0-9A-Z]{5}|error)$/;

/**
 * A plugin's own error, as it leaves the worker: bounded, and with the types the kernel expects.
 * A database error the plugin let through keeps its code and status, but PostgreSQL's text
 * (which names tables, constraints and the values sent) goes to the plugin's log instead of
 * the caller.
 */
function wireFromPlugin(raw: unknown, target: string): WireError {
  const e = (raw !== null && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const status = Number.isInteger(e.status) && (e.status as number) >= 400 && (e.status as number) <= 599 ? e.status as number : 500;
  const code = typeof e.code === 'string' && /^[A-Za-z][A-Za-z0-9_.:-]{0,63}$/.test(e.code) && delivered.text(e.code) === e.code ? e.code : 'plugin_error';
  let message = typeof e.message === 'string' && e.message.length > 0 ? delivered.text(e.message.length > 2000 ? `${e.message.slice(0, 2000)}…` : e.message) : 'Plugin failed';
  if (DATABASE_ERROR.test(code)) {
    log('warn', `${target} failed with ${code}: ${message}`);
    message = code === 'sql_error' ? "The plugin's database query failed" : `The plugin's database query failed (SQLSTATE ${code.slice(4)})`;
  }
  const wire: WireError = { status, code, message };
  if (e.details !== undefined && e.details !== null) {
    const text = JSON.stringify(e.details);
    if (text.length <= 16_000) wire.details = delivered.value(e.details);
  }
  return wire;
}

/** Commits or rolls back the invocation's transaction, then reports the result once. */
async function finish(invocation: Invocation, resultJson: string): Promise<void> {
  clearTimeout(invocation.timer);
  let parsed: { ok: boolean; v?: unknown; e?: WireError };
  if (jsonTooDeep(resultJson)) {
    parsed = { ok: false, e: { status: 502, code: 'plugin_result_too_deep', message: `Plugin result nested deeper than ${MAX_JSON_DEPTH} levels` } };
  } else {
    try { parsed = JSON.parse(resultJson) as typeof parsed; } catch { parsed = { ok: false, e: { status: 500, code: 'plugin_error', message: 'Plugin produced no valid result' } }; }
  }
  // `v` is always present in an answer the SDK wrote: a result without it would silently be null.
  if (parsed?.ok === true && (parsed === null || typeof parsed !== 'object' || !Object.hasOwn(parsed, 'v'))) {
    parsed = { ok: false, e: { status: 500, code: 'unserializable_result', message: 'Plugin result is not plain JSON: the answer carries no value' } };
  }
  let ok = parsed?.ok === true;
  let error = ok ? undefined : wireFromPlugin(parsed?.e, invocation.message.target);
  let value = ok ? delivered.json(JSON.stringify(parsed.v ?? null)) : undefined;
  if (ok && value !== undefined && Buffer.byteLength(value) > init.limits.maxResponseBytes) {
    ok = false;
    error = { status: 502, code: 'plugin_response_too_large', message: `Plugin response exceeds ${init.limits.maxResponseBytes} bytes` };
    value = undefined;
  }
  if (await cancelStatements(invocation) && ok) {
    ok = false;
    error = { status: 500, code: 'plugin_transaction_failed', message: `${init.pluginKey} answered while a statement of its transaction was still running; the statement was cancelled and the transaction rolled back` };
    value = undefined;
  }
  invocation.settling = true;
  if (ok && invocation.wantsTransaction && !invocation.message.readOnly && invocation.message.defaultActivity && !invocation.activityWritten && database) {
    // The host's own entry joins the call's transaction (opening it if the handler never did).
    try { await writeActivity(database, invocation, invocation.message.defaultActivity); } catch (activityError) {
      ok = false;
      error = transactionFailed('activity', invocation.message.target, activityError);
      value = undefined;
    }
  }
  if (invocation.batchLead) {
    // The batch handler's answers go to the batch, which owns the transaction.
    invocations.delete(invocation.id);
    invocation.batchLead.resolve({ ok, value, error });
    return;
  }
  if (invocation.batch) {
    // The batch owns the transaction: it rolls this item back to its savepoint or keeps it.
    invocations.delete(invocation.id);
    invocation.batch.resolve({ ok, value, error, activityWritten: invocation.activityWritten, activity: ok ? invocation.pendingActivity : [], effects: ok ? invocation.effects : [] });
    return;
  }
  const client = await invocation.openedClient();
  if (client && database) {
    let reusable = true;
    try {
      await database.endTransaction(client, ok ? 'COMMIT' : 'ROLLBACK');
    } catch (commitError) {
      ok = false;
      error = transactionFailed('commit', invocation.message.target, commitError);
      value = undefined;
      reusable = await database.endTransaction(client, 'ROLLBACK').then(() => true, () => false);
    }
    invocation.client = null;
    // A connection whose session could not be reset is closed, not pooled again.
    if (reusable) database.release(client); else client.release(true);
  } else if (ok && !invocation.wantsTransaction && invocation.message.defaultActivity && !invocation.activityWritten && database && invocation.message.signed) {
    await writeActivity(database, invocation, invocation.message.defaultActivity).catch(() => undefined);
  }
  invocations.delete(invocation.id);
  // Status changes are reported only when the transaction that made them committed.
  send({ t: 'result', id: invocation.id, ok, value, error, activityWritten: invocation.activityWritten, effects: ok && invocation.effects.length ? invocation.effects : undefined });
}

/**
 * Statements a call still has running when it ends (it answered with one in flight, failed,
 * or overran its deadline) are cancelled in PostgreSQL, not left to statement_timeout: they
 * would hold locks and a connection for up to 30 s, and outlive a worker restarted for the
 * overrun. Answers whether one was running in the call's transaction, which then cannot commit.
 */
async function cancelStatements(invocation: Invocation): Promise<boolean> {
  if (!database) return false;
  const db = database;
  await Promise.all([...invocation.pooledClients].map((client) => db.cancel(client, true)));
  const client = await invocation.openedClient();
  return client ? db.cancel(client) : false;
}

function failFromIsolate(invocation: Invocation, error: unknown): void {
  const message = String((error as Error)?.message ?? error);
  if (strayReason !== null) {
    replaceIsolate(strayReason);
    return;
  }
  if (invocation.finished && /timed out/i.test(message)) {
    log('warn', `code of call ${invocation.message.kind}:${invocation.message.target} kept running after its call answered, until its CPU slice ran out`);
    return;
  }
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
    finish(invocation, JSON.stringify({ ok: false, e: wireError })).catch((failure) => finishFailed(invocation, failure));
  }
  if (sandbox.disposed) restartWorker(`isolate disposed: ${message}`);
}

/**
 * A new isolate in place of one disposed for stray work, in this process: the calls that follow
 * are served at once, with no restart of the worker. Calls still in flight lived in the old
 * isolate and fail; so would a plugin whose code no longer loads, which restarts the worker.
 */
function replaceIsolate(reason: string): void {
  strayReason = null;
  entered = null;
  log('warn', `${reason}; its isolate was replaced (the plugin's in-memory state is gone)`);
  for (const invocation of invocations.values()) {
    if (invocation.finished) continue;
    invocation.finished = true;
    const error = { status: 503, code: 'plugin_crashed', message: `${init.pluginKey} replaced its isolate while handling the call: code of another call kept running after that call answered` };
    finish(invocation, JSON.stringify({ ok: false, e: error })).catch((failure) => finishFailed(invocation, failure));
  }
  try {
    loadIsolate();
  } catch (error) {
    restartWorker(`the plugin could not be loaded again: ${String((error as Error)?.message ?? error).slice(0, 300)}`);
  }
}

/** Ends this process; the kernel restarts the plugin with a fresh isolate. */
function restartWorker(reason: string): void {
  send({ t: 'fatal', reason });
  setTimeout(() => process.exit(70), 50).unref();
}

async function invoke(message: InvokeMessage): Promise<void> {
  start(new Invocation(message));
}

const invokeBatch = batchRunner({
  database: () => database,
  invocations,
  start: (invocation) => start(invocation),
  send,
  log: (level, message) => log(level, message),
  wireFromPlugin: (raw, target) => wireFromPlugin(raw, target),
  transactionFailed: (stage, target, error) => transactionFailed(stage, target, error),
  output: (json) => delivered.json(json),
});

function start(invocation: Invocation): void {
  const message = invocation.message;
  invocations.set(message.id, invocation);
  invocation.timer = setTimeout(() => {
    if (invocation.finished) return;
    log('error', `call ${message.kind}:${message.target} exceeded its ${message.deadlineMs} ms deadline; restarting the isolate`);
    invocation.finished = true;
    finish(invocation, JSON.stringify({ ok: false, e: { status: 504, code: 'plugin_timeout', message: `${init.pluginKey} did not answer within ${message.deadlineMs} ms` } }))
      .catch((error) => finishFailed(invocation, error))
      .finally(() => restartWorker('wall-clock deadline exceeded'));
  }, message.deadlineMs);
  // The input is JSON text the kernel produced; it is spliced in rather than parsed and re-serialised.
  const json = `{"id":${JSON.stringify(message.id)},"kind":${JSON.stringify(message.kind)},"target":${JSON.stringify(message.target)},"info":${JSON.stringify(message.info)},"input":${message.input}}`;
  try {
    entered = invocation.id;
    sandbox.dispatch(json);
  } catch (error) {
    failFromIsolate(invocation, error);
  } finally {
    entered = null;
  }
}

async function boot(received: WorkerInit): Promise<void> {
  const started = performance.now();
  init = received;
  if (init.database) database = new PluginDatabase(init.database.url, init.database.schema, 16, init.database.resetSessions ?? true, init.database.applicationName);
  activityKinds = new ActivityEntityKinds(database);
  capabilities = { ...workerCapabilities(init), activity: activityCapability(database, activityKinds, delivered), budgets: budgetsCapability(database), scopes: scopesCapability(database),
    events: eventsCapability(database, (invocation, capability, method, args) => callKernel(invocation.message.id, capability, method, args)) };
  if (database) capabilities.db = database.capability();
  loadIsolate();
  send({ t: 'ready', bootMs: performance.now() - started });
}

/** A new isolate with the plugin's code, its grants and its current configuration. */
function loadIsolate(): void {
  sandbox = new Sandbox({
    memoryMb: init.limits.memoryMb,
    cpuSliceMs: init.limits.cpuSliceMs,
    onCatastrophicError: (message) => { send({ t: 'fatal', reason: `V8 catastrophic error: ${message}` }); process.exit(71); },
  });
  sandbox.load(init.code, {
    call: shielded('call', hostCall, JSON.stringify({ e: { status: 500, code: 'host_error', message: 'The host could not complete the call' } })),
    done: shielded('done', hostDone, undefined),
    log: shielded('log', hostLog, undefined),
  }, { grants: init.grants, config: init.config });
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
    case 'invoke_batch':
      void invokeBatch(message.items);
      break;
    case 'reply': {
      const waiter = kernelCalls.get(message.id);
      if (!waiter) return;
      kernelCalls.delete(message.id);
      if (message.secrets?.length) delivered.add(message.secrets);
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
// The kernel owns this process's lifetime: it ends it with `shutdown` after its requests have
// drained, and the worker exits by itself when the kernel is gone (disconnect). A Ctrl-C or a
// service manager's SIGTERM sent to every process of the group must not end it earlier.
process.on('SIGINT', () => undefined);
process.on('SIGTERM', () => undefined);
