import type { InvokeMessage, SlotMessage, SlotReport, WireError, WorkerInit } from '../protocol/messages.ts';
import { recordInBatch } from '../capabilities/activity-write/worker.ts';
import { ActivityEntityKinds } from './capabilities/activity-entity-kinds.ts';
import { PLUGIN_POOL_CONNECTIONS, PluginDatabase } from './capabilities/database.ts';
import { CapabilityError, type KernelCall, type WorkerCapability } from './capabilities/types.ts';
import { batchRunner } from './batches.ts';
import { cancelStatements, finishCall, type FinishingPlugin } from './call-finish.ts';
import { DeliveredSecrets } from './delivered-secrets.ts';
import { Invocation } from './invocation.ts';
import { checkHostCall } from './host-call-checks.ts';
import { isolateFailureError, withdrawnAnswerError } from './isolate-failures.ts';
import { KernelCalls } from './kernel-calls.ts';
import { LogBudget } from './log-budget.ts';
import { wiredAnswer } from './wired-answer.ts';
import { TRANSACTION_FAILURES, transactionFailure, wireFromPlugin, wireHostError } from './plugin-wire-error.ts';
import { Sandbox } from '../../../sdk/shared/sandbox.ts';
import { workerCapabilities } from '../capabilities/worker-units.ts';

const closed = (message = 'This ctx belongs to an invocation that has finished') => JSON.stringify({ e: { status: 409, code: 'invocation_closed', message } });

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
  /** Activity entity types the database checks against the invocation's company (see capabilities/activity-write/worker.ts). */
  private activityKinds = new ActivityEntityKinds(null);
  private readonly invocations = new Map<string, Invocation>();
  /** Calls to kernel-served capabilities awaiting the kernel's reply. */
  private readonly kernelCalls: KernelCalls;
  /** Results being finished (a commit in flight): a restart lets them reach the kernel first. */
  private readonly finishing = new Set<Promise<void>>();
  private nextOp = 1;
  /** The invocation whose code the isolate is running right now (set while the host is inside dispatch or settle). */
  private entered: string | null = null;
  private readonly logBudget: LogBudget;
  /** Set when the isolate was disposed because code kept running after its call answered. */
  private strayReason: string | null = null;
  /** Answers given during the current entry into the isolate, held until it ends (see enter). */
  private answeredInEntry: Array<{ invocation: Invocation; resultJson: string }> = [];
  private unloaded = false;
  private readonly invokeBatch: (items: InvokeMessage[]) => Promise<void>;
  private readonly finisher: FinishingPlugin;

  constructor(init: WorkerInit, host: PluginSlotHost) {
    this.init = init;
    this.host = host;
    this.logBudget = new LogBudget(init.limits.maxLogLinesPerMinute);
    this.kernelCalls = new KernelCalls((report) => this.host.send(report), this.delivered);
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
    this.finisher = {
      pluginKey: init.pluginKey, maxResponseBytes: init.limits.maxResponseBytes, delivered: this.delivered, invocations: this.invocations,
      database: () => this.database, send: (report) => this.host.send(report),
      wireFromPlugin: (raw, target) => this.wireFromPlugin(raw, target), transactionFailed: (stage, target, error) => this.transactionFailed(stage, target, error),
    };
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
      case 'reply':
        this.kernelCalls.reply(message);
        break;
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
    await Promise.all([...this.invocations.values()].map((invocation) => cancelStatements(this.database, invocation).catch(() => false)));
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
    const checked = checkHostCall({ plugin: this.init.pluginKey, grants: this.init.grants, companyId: invocation.message.info.companyId, pendingOps: invocation.ops.size }, capability, method, argsJson);
    if ('refusal' in checked) {
      if (checked.refusal.code === 'capability_denied') this.log('warn', `denied ${capability}.${method}: not granted`, { capability, method }, invocationId);
      return JSON.stringify({ e: checked.refusal });
    }
    const { args, kernelServed } = checked;
    if (capability === 'activity' && method === 'record' && invocation.batch) {
      try {
        if (recordInBatch(this.database, invocation, args, this.activityKinds, this.delivered) === null) return '{"v":null}';
      } catch (error) {
        return JSON.stringify({ e: wireHostError(error) });
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
      (error) => this.settle(invocation, op, false, wireHostError(error)),
    );
    return JSON.stringify({ op });
  }

  private callKernel(invocationId: string, capability: string, method: string, args: unknown[]): Promise<unknown> {
    return this.kernelCalls.call(invocationId, capability, method, args);
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
    const message = String((error as Error)?.message ?? error);
    const { wireError, outOfCpu } = withdrawnAnswerError(this.init.pluginKey, message, { stray: this.strayReason !== null, disposed: this.sandbox.disposed });
    if (outOfCpu) {
      this.strayReason = `code of a ${answered[0]!.invocation.message.kind} call kept running after its call answered, until its CPU slice ran out`;
      this.sandbox.dispose();
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
    for (const report of this.logBudget.admit({ t: 'log', level, message: message.slice(0, 2000), fields, invocationId })) this.host.send(report);
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

  private transactionFailed(stage: keyof typeof TRANSACTION_FAILURES, target: string, error: unknown): WireError {
    return transactionFailure(stage, target, error, (message) => this.log('error', message));
  }

  private wireFromPlugin(raw: unknown, target: string): WireError {
    return wireFromPlugin(raw, target, this.delivered, (message) => this.log('warn', message));
  }

  /** Finishes a call and keeps track of it until its result has gone to the kernel. */
  private finishTracked(invocation: Invocation, resultJson: string): Promise<void> {
    const finishing = finishCall(this.finisher, invocation, resultJson).catch((error) => this.finishFailed(invocation, error));
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
    const wireError = isolateFailureError(this.init.pluginKey, message, this.sandbox.disposed);
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
