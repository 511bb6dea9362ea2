import type { InvokeMessage, SlotMessage, SlotReport, WireError, WorkerInit } from '../protocol/messages.ts';
import { capabilityMethod } from '../../../sdk/capabilities/index.ts';
import { checkCapabilityCall, parseCallArguments } from '../../../sdk/capabilities/check-call.ts';
import { ActivityEntityKinds, recordInBatch, writeActivity } from './capabilities/activity.ts';
import { beforeCommit } from './capabilities/events-at-commit.ts';
import { PLUGIN_POOL_CONNECTIONS, PluginDatabase } from './capabilities/database.ts';
import type { KernelCall } from './capabilities/events.ts';
import { confirmOpenedRuns } from './capabilities/opened-runs.ts';
import { CapabilityError, type WorkerCapability } from './capabilities/types.ts';
import { batchRunner } from './batches.ts';
import { DeliveredSecrets } from './delivered-secrets.ts';
import { Invocation } from './invocation.ts';
import { jsonTooDeep, MAX_JSON_DEPTH } from './json-bounds.ts';
import { readResult, wiredAnswer } from './wired-answer.ts';
import { wireFromPlugin } from './plugin-wire-error.ts';
import { Sandbox } from '../../../sdk/shared/sandbox.ts';
import { DATABASE_UNAVAILABLE, isDatabaseUnavailable } from '../../db/connection-errors.ts';
import { MAX_ARGS_CHARS, MAX_KERNEL_ARGS_CHARS } from '../../../sdk/plugin/wire-budget.ts';
import { workerCapabilities } from './capabilities/registry.ts';

/** Host work one invocation may have in flight; a burst of un-awaited calls must not flood the kernel. */
const MAX_PENDING_OPS = 64;
const closed = (message = 'This ctx belongs to an invocation that has finished') => JSON.stringify({ e: { status: 409, code: 'invocation_closed', message } });

function wire(error: unknown): WireError {
  if (error instanceof CapabilityError) return { status: error.status, code: error.code, message: error.message };
  const candidate = error as { status?: number; code?: string; message?: string };
  if (candidate && typeof candidate.status === 'number' && typeof candidate.code === 'string') {
    return { status: candidate.status, code: candidate.code, message: String(candidate.message ?? 'failed') };
  }
  // A capability that met an unreachable database (activity, events, issue numbers on the plugin's connection): retryable.
  if (isDatabaseUnavailable(error)) return { ...DATABASE_UNAVAILABLE };
  return { status: 500, code: 'host_error', message: 'The host could not complete the call' };
}

const TRANSACTION_FAILURES = {
  open: "The plugin's transaction could not be opened",
  activity: 'The activity entry could not be written',
  commit: "The plugin's transaction could not commit",
} as const;

export interface PluginSlotHost {
  /** Sends a report of this plugin to the kernel (the process stamps it with the slot). */
  send(report: SlotReport): void;
  /** This plugin must start afresh: the process unloads it and tells the kernel, which loads it again. */
  restart(reason: string): void;
  /** A V8 error no isolate survives: the whole process ends and the kernel starts it again. */
  catastrophic(message: string): void;
}

/**
 * One plugin inside an extension-host worker process: its isolate, its database connections,
 * its grants, deadlines and delivered secrets. A process holds one of these (a third-party
 * plugin's own worker) or several (the first-party plugins' shared worker); nothing here is
 * shared between plugins, so each keeps its own isolate, database role and deadlines.
 */
export class HostedPlugin {
  private readonly init: WorkerInit;
  private readonly host: PluginSlotHost;
  private sandbox!: Sandbox;
  private database: PluginDatabase | null = null;
  private capabilities: Record<string, WorkerCapability> = {};
  /** Secret values delivered to the isolate, kept out of everything the plugin sends out. */
  private readonly delivered = new DeliveredSecrets();
  /** Activity entity types the database checks against the invocation's company (see capabilities/activity.ts). */
  private activityKinds = new ActivityEntityKinds(null);
  private readonly invocations = new Map<string, Invocation>();
  private readonly kernelCalls = new Map<number, { resolve(value: unknown): void; reject(error: unknown): void }>();
  /** Results being finished (a commit in flight): a restart lets them reach the kernel first. */
  private readonly finishing = new Set<Promise<void>>();
  private nextOp = 1;
  /** The invocation whose code the isolate is running right now (set while the host is inside dispatch or settle). */
  private entered: string | null = null;
  private nextKernelCall = 1;
  private logBudget = { windowStart: Date.now(), lines: 0, dropped: 0 };
  /** Set when the isolate was disposed because code kept running after its call answered. */
  private strayReason: string | null = null;
  /** Answers given during the current entry into the isolate, held until it ends (see enter). */
  private answeredInEntry: Array<{ invocation: Invocation; resultJson: string }> = [];
  private unloaded = false;
  private readonly invokeBatch: (items: InvokeMessage[]) => Promise<void>;

  constructor(init: WorkerInit, host: PluginSlotHost) {
    this.init = init;
    this.host = host;
    this.invokeBatch = batchRunner({
      database: () => this.database,
      invocations: this.invocations,
      start: (invocation) => this.start(invocation),
      send: (report) => this.host.send(report),
      log: (level, message) => this.log(level, message),
      wireFromPlugin: (raw, target) => this.wireFromPlugin(raw, target),
      answer: (kind, value) => wiredAnswer(kind, this.delivered.value(value)),
      transactionFailed: (stage, target, error) => this.transactionFailed(stage, target, error),
    });
  }

  get key(): string { return this.init.pluginKey; }

  /** Connects the plugin's database, builds its capabilities and loads its code; answers the code cache the load made, if any. */
  boot(): Uint8Array | undefined {
    const init = this.init;
    if (init.database) this.database = new PluginDatabase(init.database.url, init.database.schema, PLUGIN_POOL_CONNECTIONS, init.database.resetSessions ?? true, init.database.applicationName);
    this.activityKinds = new ActivityEntityKinds(this.database);
    const kernel: KernelCall = (invocation, capability, method, args) => this.callKernel(invocation.message.id, capability, method, args);
    this.capabilities = workerCapabilities({ init, database: this.database, activityKinds: this.activityKinds, delivered: this.delivered, kernel });
    return this.loadIsolate();
  }

  /** A message the kernel addressed to this plugin. */
  receive(message: SlotMessage): void {
    switch (message.t) {
      case 'invoke':
        this.start(new Invocation(message));
        break;
      case 'invoke_batch':
        void this.invokeBatch(message.items);
        break;
      case 'reply': {
        const waiter = this.kernelCalls.get(message.id);
        if (!waiter) return;
        this.kernelCalls.delete(message.id);
        if (message.secrets?.length) this.delivered.add(message.secrets);
        if (message.ok) waiter.resolve(message.json === undefined ? undefined : JSON.parse(message.json));
        else waiter.reject(new CapabilityError(message.error?.status ?? 500, message.error?.code ?? 'kernel_error', message.error?.message ?? 'kernel call failed'));
        break;
      }
      case 'config':
        this.init.config = message.config;
        this.sandbox.updateConfig({ grants: this.init.grants, config: message.config });
        break;
    }
  }

  /**
   * Ends this plugin in the process: its isolate is disposed at once (code still running stops),
   * statements its calls still run are cancelled and its connections closed. Calls still in
   * flight are failed by the kernel, which learns of the unload from `restart` or asked for it.
   */
  async unload(): Promise<void> {
    if (this.unloaded) return;
    this.unloaded = true;
    this.sandbox?.dispose();
    for (const invocation of this.invocations.values()) invocation.finished = true;
    await Promise.all([...this.invocations.values()].map((invocation) => this.cancelStatements(invocation).catch(() => false)));
    await this.database?.close().catch(() => undefined);
  }

  // ---- the bridge the isolate calls ----------------------------------------------------------

  /**
   * Host functions never throw into the isolate: an error thrown by host code would arrive
   * there with the host's stack and file paths. They answer with a code and a message instead.
   */
  private shielded<A extends unknown[], R>(name: string, fn: (...args: A) => R, fallback: R): (...args: A) => R {
    return (...args: A) => {
      try {
        return fn(...args);
      } catch (error) {
        try { this.log('error', `host function ${name} failed: ${String((error as Error)?.message ?? error).slice(0, 300)}`); } catch { /* logging is best effort */ }
        return fallback;
      }
    };
  }

  /**
   * Code the isolate runs after the call it was entered for has answered (a promise chain the
   * handler left behind) is stray work: it may not act on the host. At its first host call or
   * log line the isolate is disposed on the spot, which ends it at once, and a new isolate is
   * loaded (replaceIsolate) for the calls that follow. Pure computation that touches nothing
   * ends at the entry's CPU slice instead: nothing else can interrupt a running isolate.
   */
  private interruptIfStray(): boolean {
    if (this.entered === null) return false;
    const current = this.invocations.get(this.entered);
    if (current && !current.finished) return false;
    this.strayReason ??= `code of a ${current?.message.kind ?? 'finished'} call kept running after its call answered`;
    this.sandbox.dispose();
    return true;
  }

  /** Sync host function: checks the invocation and the grant, then starts the work. */
  private hostCall(invocationId: string, capability: string, method: string, argsJson: string): string {
    if (this.interruptIfStray()) return closed();
    const invocation = this.invocations.get(invocationId);
    if (!invocation || invocation.finished) return closed();
    // Plugin code runs only while the host has entered the isolate for one invocation; a ctx
    // kept from another invocation (even one still running) is refused.
    if (this.entered !== null && this.entered !== invocation.scopeId) return closed('This ctx belongs to another invocation');
    const declared = capabilityMethod(capability, method);
    if (!declared) return JSON.stringify({ e: { status: 400, code: 'unknown_capability', message: `Unknown capability ${capability}.${method}` } });
    const kernelServed = declared.spec.servedBy === 'kernel';
    const maxChars = kernelServed ? MAX_KERNEL_ARGS_CHARS : MAX_ARGS_CHARS;
    if (argsJson.length > maxChars) return JSON.stringify({ e: { status: 413, code: 'invalid_arguments', message: `Arguments larger than ${maxChars} characters` } });
    if (jsonTooDeep(argsJson)) return JSON.stringify({ e: { status: 400, code: 'invalid_arguments', message: `Arguments nested deeper than ${MAX_JSON_DEPTH} levels` } });
    if (invocation.ops.size >= MAX_PENDING_OPS) {
      return JSON.stringify({ e: { status: 429, code: 'too_many_pending_calls', message: `${this.init.pluginKey}: at most ${MAX_PENDING_OPS} host calls may be in flight per invocation; await them` } });
    }
    // The registry's check (sdk/capabilities): granted, in a company when it must be, arguments as declared.
    const parsed = parseCallArguments(argsJson);
    const checked = checkCapabilityCall({ plugin: this.init.pluginKey, grants: this.init.grants, member: capability, method, args: parsed, companyId: invocation.message.info.companyId });
    if ('refusal' in checked) {
      if (checked.refusal.code === 'capability_denied') this.log('warn', `denied ${capability}.${method}: not granted`, { capability, method }, invocationId);
      return JSON.stringify({ e: checked.refusal });
    }
    const args = parsed!;
    if (capability === 'activity' && method === 'record' && invocation.batch) {
      try {
        if (recordInBatch(this.database, invocation, args, this.activityKinds, this.delivered) === null) return '{"v":null}';
      } catch (error) {
        return JSON.stringify({ e: wire(error) });
      }
    }
    const op = this.nextOp++;
    invocation.ops.add(op);
    const work = Promise.resolve().then(() => {
      // Work starts after the isolate yields; a call the plugin made just before it returned
      // or failed must not run once the invocation is finished (its transaction is gone).
      if (invocation.finished) throw new CapabilityError(409, 'invocation_closed', 'This ctx belongs to an invocation that has finished');
      if (kernelServed) {
        if (capability === 'runs' && method === 'open') invocation.openedRuns = true;
        return this.callKernel(invocationId, capability, method, args);
      }
      const table = Object.hasOwn(this.capabilities, capability) ? this.capabilities[capability]! : {};
      const handler = Object.hasOwn(table, method) ? table[method] : undefined;
      if (!handler) throw new CapabilityError(400, 'unknown_method', `Unknown method ${capability}.${method}`);
      return handler(invocation, args);
    });
    work.then(
      (value) => this.settle(invocation, op, true, value),
      (error) => this.settle(invocation, op, false, wire(error)),
    );
    return JSON.stringify({ op });
  }

  private callKernel(invocationId: string, capability: string, method: string, args: unknown[]): Promise<unknown> {
    const id = this.nextKernelCall++;
    return new Promise((resolve, reject) => {
      this.kernelCalls.set(id, { resolve, reject });
      // Kernel calls carry the plugin's words onwards (a pause reason, a service's input, a stream event).
      this.host.send({ t: 'call', id, invocationId, capability, method, args: this.delivered.value(args) });
    });
  }

  private settle(invocation: Invocation, op: number, ok: boolean, value: unknown): void {
    invocation.ops.delete(op);
    if (invocation.finished || this.sandbox.disposed) return;
    let json: string;
    try { json = value === undefined ? '' : JSON.stringify(value); } catch { json = JSON.stringify({ status: 500, code: 'host_error', message: 'unserializable host result' }); ok = false; }
    this.enter(invocation, invocation.scopeId, () => this.sandbox.settle(op, ok, json));
  }

  /**
   * One entry into the isolate. An answer the plugin gives during the entry is reported only
   * when the entry has ended normally: isolated-vm returns from an entry once the isolate's
   * microtask queue is empty, so nothing the answering code scheduled is still running. An
   * entry that ends in an error withdraws the answers given in it (a microtask chain left
   * spinning ran the CPU slice out, or stray host calls got the isolate disposed): those calls
   * fail and the isolate is replaced, as for any code that kept running after its call answered.
   */
  private enter(invocation: Invocation, scope: string, run: () => void): void {
    let failure: { error: unknown } | null = null;
    this.entered = scope;
    try {
      run();
    } catch (error) {
      failure = { error };
    } finally {
      this.entered = null;
    }
    const answered = this.answeredInEntry;
    this.answeredInEntry = [];
    if (failure === null) {
      for (const { invocation: done, resultJson } of answered) void this.finishTracked(done, resultJson);
      return;
    }
    if (answered.length > 0) this.withdrawAnswers(answered, failure.error);
    this.failFromIsolate(invocation, failure.error);
  }

  /**
   * Fails the calls whose answer was given in an entry that did not end cleanly. Code that made
   * host calls after answering had the isolate disposed already (interruptIfStray); code that
   * only computed ran the CPU slice out, and its isolate is replaced the same way; an isolate
   * that ran out of memory restarts the plugin (failFromIsolate).
   */
  private withdrawAnswers(answered: Array<{ invocation: Invocation }>, error: unknown): void {
    const key = this.init.pluginKey;
    const message = String((error as Error)?.message ?? error);
    const withdrawn = 'the answer was withdrawn';
    let wireError: WireError;
    if (this.strayReason !== null) {
      wireError = { status: 503, code: 'plugin_crashed', message: `${key} answered, but code it left running kept calling the host; its isolate was replaced and ${withdrawn}` };
    } else if (/timed out/i.test(message)) {
      wireError = { status: 504, code: 'plugin_timeout', message: `${key} answered, but code it left running (a promise chain) exceeded its CPU time limit; ${withdrawn}` };
      this.strayReason = `code of a ${answered[0]!.invocation.message.kind} call kept running after its call answered, until its CPU slice ran out`;
      this.sandbox.dispose();
    } else if (this.sandbox.disposed || /memory limit/i.test(message)) {
      wireError = { status: 503, code: 'plugin_out_of_memory', message: `${key} answered, but code it left running ran out of memory; it is being restarted and ${withdrawn}` };
    } else {
      wireError = { status: 500, code: 'plugin_error', message: `${key} answered, but code it left running failed; ${withdrawn}` };
    }
    for (const { invocation } of answered) void this.finishTracked(invocation, JSON.stringify({ ok: false, e: wireError }));
  }

  private hostDone(invocationId: string, resultJson: string): void {
    const invocation = this.invocations.get(invocationId);
    if (!invocation || invocation.finished) return;
    // Finished at once: whatever the plugin's code does from here on is stray work (interruptIfStray).
    invocation.finished = true;
    if (this.entered !== null) this.answeredInEntry.push({ invocation, resultJson });
    else this.finishTracked(invocation, resultJson);
  }

  private log(level: 'debug' | 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>, invocationId?: string): void {
    const now = Date.now();
    if (now - this.logBudget.windowStart > 60_000) {
      if (this.logBudget.dropped > 0) this.host.send({ t: 'log', level: 'warn', message: `dropped ${this.logBudget.dropped} log lines over the per-minute limit` });
      this.logBudget = { windowStart: now, lines: 0, dropped: 0 };
    }
    if (++this.logBudget.lines > this.init.limits.maxLogLinesPerMinute) { this.logBudget.dropped++; return; }
    this.host.send({ t: 'log', level, message: message.slice(0, 2000), fields, invocationId });
  }

  private hostLog(invocationId: string, level: string, message: string, fieldsJson: string): void {
    if (this.interruptIfStray()) return;
    // A line of a call that has ended (a ctx kept past its call) is not written.
    const invocation = this.invocations.get(invocationId);
    if (!invocation || invocation.finished) return;
    const safeLevel = (['debug', 'info', 'warn', 'error'] as const).find((l) => l === level) ?? 'info';
    let fields: Record<string, unknown> | undefined;
    try { fields = fieldsJson.length > 8000 ? { truncated: true } : JSON.parse(fieldsJson) as Record<string, unknown>; } catch { fields = undefined; }
    this.log(safeLevel, this.delivered.text(message), this.delivered.value(fields), invocationId);
  }

  // ---- finishing a call ----------------------------------------------------------------------

  /**
   * A transaction that could not be opened, written or committed, as the caller sees it: a fixed
   * message. PostgreSQL's own text names the plugin's tables, constraints and values, so it goes
   * to the plugin's log only.
   */
  /** Whether the host's entry is due: always, or (`onlyIfWritten`) when the call's transaction wrote something. */
  private async defaultActivityDue(invocation: Invocation): Promise<boolean> {
    if (!invocation.message.defaultActivity?.onlyIfWritten) return true;
    const client = await invocation.openedClient();
    if (!client) return false;
    // A transaction is given an id on its first write, and only then.
    const { rows } = await client.query<{ wrote: boolean }>('select pg_current_xact_id_if_assigned() is not null as wrote');
    return rows[0]!.wrote;
  }

  private transactionFailed(stage: keyof typeof TRANSACTION_FAILURES, target: string, error: unknown): WireError {
    this.log('error', `${target}: ${TRANSACTION_FAILURES[stage]}: ${String((error as Error)?.message ?? error).slice(0, 500)}`);
    // A connection lost at COMMIT leaves the outcome unknown: the client retries (with its idempotency key), as for any outage.
    if (isDatabaseUnavailable(error)) return { ...DATABASE_UNAVAILABLE };
    return { status: 500, code: 'plugin_transaction_failed', message: TRANSACTION_FAILURES[stage] };
  }

  private wireFromPlugin(raw: unknown, target: string): WireError {
    return wireFromPlugin(raw, target, this.delivered, (message) => this.log('warn', message));
  }

  /** Finishes a call and keeps track of it until its result has gone to the kernel. */
  private finishTracked(invocation: Invocation, resultJson: string): Promise<void> {
    const finishing = this.finish(invocation, resultJson).catch((error) => this.finishFailed(invocation, error));
    this.finishing.add(finishing);
    void finishing.finally(() => this.finishing.delete(finishing));
    return finishing;
  }

  /** Last resort when finishing threw: the connection (and its transaction) is destroyed, the kernel still gets an answer. */
  private finishFailed(invocation: Invocation, error: unknown): void {
    this.log('error', `finishing call ${invocation.message.kind}:${invocation.message.target} failed: ${String((error as Error)?.message ?? error).slice(0, 300)}`);
    if (invocation.client) { invocation.client.release(error instanceof Error ? error : new Error('finish failed')); invocation.client = null; }
    if (!this.invocations.delete(invocation.id)) return;
    this.host.send({ t: 'result', id: invocation.id, ok: false, error: { status: 500, code: 'host_error', message: 'The host could not finish the call' }, activityWritten: false });
  }

  /** Commits or rolls back the invocation's transaction, then reports the result once. */
  private async finish(invocation: Invocation, resultJson: string): Promise<void> {
    clearTimeout(invocation.timer);
    const database = this.database;
    const parsed = readResult(resultJson);
    let ok = parsed.ok;
    let error = ok ? undefined : this.wireFromPlugin(parsed.e, invocation.message.target);
    // The value's text goes on as it is unless delivered secrets must first be taken out of it.
    let answer = ok ? wiredAnswer(invocation.message.kind, this.delivered.value(parsed.v ?? null), this.delivered.active ? undefined : parsed.text) : undefined;
    if (ok && answer && answer.bytes > this.init.limits.maxResponseBytes) {
      ok = false;
      error = { status: 502, code: 'plugin_response_too_large', message: `Plugin response exceeds ${this.init.limits.maxResponseBytes} bytes` };
      answer = undefined;
    }
    if (await this.cancelStatements(invocation) && ok) {
      ok = false;
      error = { status: 500, code: 'plugin_transaction_failed', message: `${this.init.pluginKey} answered while a statement of its transaction was still running; the statement was cancelled and the transaction rolled back` };
      answer = undefined;
    }
    invocation.settling = true;
    if (ok && invocation.wantsTransaction && !invocation.message.readOnly && invocation.message.defaultActivity && !invocation.activityWritten && database) {
      // The host's own entry joins the call's transaction (opening it if the handler never did).
      try {
        if (await this.defaultActivityDue(invocation)) await writeActivity(database, invocation, invocation.message.defaultActivity);
      } catch (activityError) {
        ok = false;
        error = this.transactionFailed('activity', invocation.message.target, activityError);
        answer = undefined;
      }
    }
    if (ok && invocation.openedRuns && database) {
      try {
        await confirmOpenedRuns(database, invocation);
      } catch (confirmError) {
        ok = false;
        error = this.transactionFailed('commit', invocation.message.target, confirmError);
        answer = undefined;
      }
    }
    if (invocation.batchLead) {
      // The batch handler's answers go to the batch, which owns the transaction.
      this.invocations.delete(invocation.id);
      invocation.batchLead.resolve({ ok, value: answer?.value, error });
      return;
    }
    if (invocation.batch) {
      // The batch owns the transaction: it rolls this item back to its savepoint or keeps it.
      this.invocations.delete(invocation.id);
      invocation.batch.resolve({ ok, value: answer?.value, envelope: answer?.envelope, error, activityWritten: invocation.activityWritten, activity: ok ? invocation.pendingActivity : [], kernelRows: ok ? invocation.pendingKernelRows : [] });
      return;
    }
    const client = await invocation.openedClient();
    if (client && database) {
      invocation.client = null;
      const failure = await database.closeTransaction(client, ok ? 'COMMIT' : 'ROLLBACK', beforeCommit(invocation));
      if (failure && ok) {
        ok = false;
        error = this.transactionFailed('commit', invocation.message.target, failure);
        answer = undefined;
      }
    } else if (ok && !invocation.wantsTransaction && invocation.message.defaultActivity && !invocation.activityWritten && database && invocation.message.signed) {
      await writeActivity(database, invocation, invocation.message.defaultActivity).catch(() => undefined);
    }
    this.invocations.delete(invocation.id);
    // Status changes are reported only when the transaction that made them committed.
    this.host.send({ t: 'result', id: invocation.id, ok, value: answer?.value, envelope: answer?.envelope, error, activityWritten: invocation.activityWritten });
  }

  /**
   * Statements a call still has running when it ends (it answered with one in flight, failed,
   * or overran its deadline) are cancelled in PostgreSQL, not left to statement_timeout: they
   * would hold locks and a connection for up to 30 s, and outlive a plugin restarted for the
   * overrun. Answers whether one was running in the call's transaction, which then cannot commit.
   */
  private async cancelStatements(invocation: Invocation): Promise<boolean> {
    const db = this.database;
    if (!db) return false;
    await Promise.all([...invocation.pooledClients].map((client) => db.cancel(client, true)));
    const client = await invocation.openedClient();
    return client ? db.cancel(client) : false;
  }

  // ---- failures --------------------------------------------------------------------------------

  private failFromIsolate(invocation: Invocation, error: unknown): void {
    const message = String((error as Error)?.message ?? error);
    if (this.strayReason !== null) {
      this.replaceIsolate(this.strayReason);
      return;
    }
    if (invocation.finished && /timed out/i.test(message)) {
      this.log('warn', `code of call ${invocation.message.kind}:${invocation.message.target} kept running after its call answered, until its CPU slice ran out`);
      return;
    }
    const key = this.init.pluginKey;
    let wireError: WireError;
    if (this.sandbox.disposed || /memory limit/i.test(message)) {
      wireError = { status: 503, code: 'plugin_out_of_memory', message: `${key} ran out of memory; it is being restarted` };
    } else if (/timed out/i.test(message)) {
      wireError = { status: 504, code: 'plugin_timeout', message: `${key} exceeded its CPU time limit` };
    } else {
      wireError = { status: 500, code: 'plugin_error', message: `${key} failed: ${message.split('\n')[0]!.slice(0, 500)}` };
    }
    if (!invocation.finished) {
      invocation.finished = true;
      this.finishTracked(invocation, JSON.stringify({ ok: false, e: wireError }));
    }
    if (this.sandbox.disposed) this.restart(`isolate disposed: ${message}`);
  }

  /**
   * A new isolate in place of one disposed for stray work: the calls that follow are served at
   * once, with no restart of the plugin. Calls still in flight lived in the old isolate and
   * fail; so would a plugin whose code no longer loads, which restarts the plugin.
   */
  private replaceIsolate(reason: string): void {
    this.strayReason = null;
    this.entered = null;
    this.log('warn', `${reason}; its isolate was replaced (the plugin's in-memory state is gone)`);
    for (const invocation of this.invocations.values()) {
      if (invocation.finished) continue;
      invocation.finished = true;
      const error = { status: 503, code: 'plugin_crashed', message: `${this.init.pluginKey} replaced its isolate while handling the call: code of another call kept running after that call answered` };
      this.finishTracked(invocation, JSON.stringify({ ok: false, e: error }));
    }
    try {
      this.loadIsolate();
    } catch (error) {
      this.restart(`the plugin could not be loaded again: ${String((error as Error)?.message ?? error).slice(0, 300)}`);
    }
  }

  /**
   * Asks for this plugin to start afresh, once the results being finished have reached the
   * kernel (bounded: a commit that hangs does not hold the restart up).
   */
  private restart(reason: string): void {
    if (this.unloaded) return;
    const settled = Promise.allSettled([...this.finishing]);
    const bound = new Promise((resolve) => setTimeout(resolve, 2000).unref());
    void Promise.race([settled, bound]).then(() => this.host.restart(reason));
  }

  // ---- running calls ---------------------------------------------------------------------------

  private start(invocation: Invocation): void {
    if (this.unloaded) return;
    const message = invocation.message;
    invocation.enclosing = (message.enclosing ?? []).flatMap((id) => this.invocations.get(id) ?? []);
    this.invocations.set(message.id, invocation);
    invocation.timer = setTimeout(() => {
      if (invocation.finished) return;
      this.log('error', `call ${message.kind}:${message.target} exceeded its ${message.deadlineMs} ms deadline; restarting the plugin`);
      invocation.finished = true;
      void this.finishTracked(invocation, JSON.stringify({ ok: false, e: { status: 504, code: 'plugin_timeout', message: `${this.init.pluginKey} did not answer within ${message.deadlineMs} ms` } }))
        .finally(() => this.restart('wall-clock deadline exceeded'));
    }, message.deadlineMs);
    // The input is JSON text the kernel produced; it is spliced in rather than parsed and re-serialised.
    const json = `{"id":${JSON.stringify(message.id)},"kind":${JSON.stringify(message.kind)},"target":${JSON.stringify(message.target)},"info":${JSON.stringify(message.info)},"input":${message.input}}`;
    this.enter(invocation, invocation.id, () => this.sandbox.dispatch(json));
  }

  /** A new isolate with the plugin's code, its grants and its current configuration; answers a code cache it made. */
  private loadIsolate(): Uint8Array | undefined {
    this.sandbox = new Sandbox({
      memoryMb: this.init.limits.memoryMb,
      cpuSliceMs: this.init.limits.cpuSliceMs,
      onCatastrophicError: (message) => this.host.catastrophic(message),
    });
    const { codeCache } = this.sandbox.load(this.init.code, {
      call: this.shielded('call', (...args: [string, string, string, string]) => this.hostCall(...args), JSON.stringify({ e: { status: 500, code: 'host_error', message: 'The host could not complete the call' } })),
      done: this.shielded('done', (...args: [string, string]) => this.hostDone(...args), undefined),
      log: this.shielded('log', (...args: [string, string, string, string]) => this.hostLog(...args), undefined),
    }, { grants: this.init.grants, config: this.init.config }, this.init.codeCache);
    if (codeCache) this.init.codeCache = codeCache;
    return codeCache;
  }
}
