import { randomBytes, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { CallResult, InvokeMessage, KernelToWorker, SlotMessage, SlotReport, WireError, WorkerInit, WorkerToKernel } from './protocol/messages.ts';
import { DATABASE_UNAVAILABLE, isDatabaseUnavailable } from '../db/connection-errors.ts';
import { DeliversSecrets } from './capabilities/types.ts';
import type { WorkerExit, WorkerHost } from './worker-host.ts';

/** A call's outcome: see CallResult (`envelope` only for routes and webhooks). */
export type InvokeResult = Omit<CallResult, 'id'>;
export type KernelCallHandler = (call: Extract<SlotReport, { t: 'call' }>) => Promise<unknown>;

export interface PluginHealth {
  status: 'starting' | 'running' | 'restarting' | 'stopped' | 'failed';
  pid: number | null;
  restarts: number;
  consecutiveFailures: number;
  lastExit: { code: number | null; signal: string | null; reason: string | null; at: string } | null;
  lastBootMs: number | null;
  /** The last loading, from asking for it to the plugin loaded: a worker process (the warm standby, or a fresh one), the bundle sent, the boot. */
  lastStartMs: number | null;
  inFlight: number;
  startedAt: string | null;
}

export interface LogLine { at: string; level: string; message: string; fields?: Record<string, unknown> }

const MAX_BACKOFF_MS = 30_000;
/**
 * A loading that answered a call successfully, or stayed up this long, before it was lost ends
 * any crash loop: the plugin is loaded again at once. One lost sooner without a successful
 * answer (or that never loaded) continues the loop, and waits.
 */
const STABLE_MS = 500;

/**
 * Supervises one plugin in its worker process (its own, or the first-party plugins' shared one:
 * worker-host.ts): loads it, sends it invocations with a deadline, answers its kernel-capability
 * calls through the broker, and loads it again when it is gone (its process died, or it must
 * start afresh after running out of memory or overrunning a call). Calls in flight then fail
 * with a clear error; nothing else in the kernel notices.
 *
 * A plugin that crashes now and then is loaded again at once (into the warm standby process
 * when its process died), and calls that arrive meanwhile wait for that loading rather than
 * fail. Only a crash loop (loadings lost within STABLE_MS without answering a call
 * successfully, or that fail to load) backs off, 100 ms doubling to 30 s, and only for the
 * plugin that crashes: calls to it fail at once during the wait, and a plugin beside it in a
 * shared process that another plugin's fatal error or overrun ended is loaded again at once,
 * whatever the culprit's backoff.
 */
export class PluginProcess {
  readonly key: string;
  private readonly host: WorkerHost;
  /** This plugin's current loading in its worker process; null while it is not loaded. */
  private slot: string | null = null;
  private init: WorkerInit;
  private readonly log: Logger;
  private readonly onCall: KernelCallHandler;
  private readonly onLog: (line: LogLine) => void;
  private readonly pending = new Map<string, { resolve(result: InvokeResult): void; timer: NodeJS.Timeout }>();
  private ready: Promise<void> | null = null;
  private stopped = false;
  private restartTimer: NodeJS.Timeout | null = null;
  /** When the current loading reported `loaded`; null until then. */
  private loadedAt: number | null = null;
  /** Whether the current loading has answered a call successfully. */
  private answered = false;
  /** Loadings lost in a row, each within STABLE_MS of loading (or before it): the crash loop the backoff answers. */
  private crashLoop = 0;
  /** When a call last reached this plugin (performance.now()), for the order of reloads in a shared process. */
  private lastCalledAt = 0;
  readonly health: PluginHealth = { status: 'starting', pid: null, restarts: 0, consecutiveFailures: 0, lastExit: null, lastBootMs: null, lastStartMs: null, inFlight: 0, startedAt: null };
  readonly maxConcurrent: number;
  /**
   * What the batches this process committed through a batch handler sent to PostgreSQL, summed
   * (the worker counts each batch's statements and round trips): how many round trips a batch
   * costs, read by the costs benchmark.
   */
  readonly batchTraffic = { batches: 0, calls: 0, statements: 0, roundTrips: 0 };

  /** Told when a loading of the plugin is gone, with the database session name it used (see load). */
  private readonly onExit: (applicationName: string) => void;

  constructor(options: { init: WorkerInit; log: Logger; onCall: KernelCallHandler; onLog: (line: LogLine) => void; maxConcurrent: number; onExit?: (applicationName: string) => void; host: WorkerHost }) {
    this.key = options.init.pluginKey;
    this.init = options.init;
    this.log = options.log;
    this.onCall = options.onCall;
    this.onLog = options.onLog;
    this.maxConcurrent = options.maxConcurrent;
    this.onExit = options.onExit ?? (() => undefined);
    this.host = options.host;
  }

  /** Whether this plugin shares its worker process with others (the first-party plugins' worker). */
  get shared(): boolean {
    return this.host.name !== this.key;
  }

  start(): Promise<void> {
    this.stopped = false;
    this.ready = this.load();
    return this.ready;
  }

  private async load(): Promise<void> {
    this.health.status = this.health.restarts > 0 ? 'restarting' : 'starting';
    const asked = performance.now();
    const slot = randomUUID();
    // Each loading names its database sessions uniquely: once it is gone, the kernel ends what
    // they still run (a statement a crashed or killed plugin left behind would otherwise run on
    // until statement_timeout, whatever its call's deadline was).
    const applicationName = `keel-w${randomBytes(6).toString('hex')}-${this.key}`.slice(0, 63);
    const init = (): WorkerInit => this.init.database ? { ...this.init, database: { ...this.init.database, applicationName } } : this.init;
    this.slot = slot;
    this.loadedAt = null;
    this.answered = false;
    const lost = (exit: WorkerExit) => {
      if (this.init.database) this.onExit(applicationName);
      this.lost(slot, exit);
    };
    const booted = new Promise<void>((resolve, reject) => {
      this.host.load(slot, init, {
        message: (message) => {
          switch (message.t) {
            case 'loaded':
              // Stopped (or superseded) while it loaded: it must not stay behind in the process.
              if (this.slot !== slot) { void this.host.unload(slot); resolve(); break; }
              this.health.status = 'running';
              this.health.pid = this.host.pid;
              this.health.lastBootMs = Math.round(message.bootMs);
              this.health.lastStartMs = Math.round(performance.now() - asked);
              this.health.startedAt = new Date().toISOString();
              this.loadedAt = performance.now();
              // Kept for the next loading (a restart, a config change keeps it): V8 then compiles little.
              if (message.codeCache) this.init = { ...this.init, codeCache: message.codeCache };
              resolve();
              break;
            case 'load_failed':
              reject(Object.assign(new Error(message.error.message), { code: message.error.code }));
              lost({ code: null, signal: null, reason: message.error.message });
              break;
            case 'restart':
              this.onLog({ at: new Date().toISOString(), level: 'error', message: `plugin restarting: ${message.reason}` });
              lost({ code: null, signal: null, reason: message.reason });
              break;
            default:
              this.handle(message);
          }
        },
        lastCalled: () => this.lastCalledAt,
        exited: (exit) => {
          if (exit.reason) this.onLog({ at: new Date().toISOString(), level: 'error', message: `worker process ended: ${exit.reason}` });
          reject(new Error(`worker exited during boot (code ${exit.code}): ${exit.reason ?? 'no reason given'}`));
          lost(exit);
        },
      }).catch((error: Error) => { reject(error); lost({ code: null, signal: null, reason: error.message }); });
    });
    booted.catch(() => undefined);
    return booted;
  }

  private handle(message: Exclude<WorkerToKernel, { t: 'fatal' | 'loaded' | 'load_failed' | 'restart' }>): void {
    switch (message.t) {
      case 'result':
        this.settle(message);
        break;
      case 'results':
        if (message.database) {
          this.batchTraffic.batches++;
          this.batchTraffic.calls += message.results.length;
          this.batchTraffic.statements += message.database.statements;
          this.batchTraffic.roundTrips += message.database.roundTrips;
        }
        for (const result of message.results) this.settle(result);
        break;
      case 'call':
        this.onCall(message).then(
          // JSON text, so that the worker sees exactly what JSON makes of a kernel row (a Date
          // as its ISO string, undefined properties gone), whatever the channel could copy.
          (value) => this.send(value instanceof DeliversSecrets
            ? { t: 'reply', id: message.id, ok: true, json: JSON.stringify(value.value), secrets: value.secrets }
            : { t: 'reply', id: message.id, ok: true, json: JSON.stringify(value) }),
          (failure: { status?: number; code?: string; message?: string; expose?: boolean } | undefined) => {
            const error = failure ?? {};
            // Only the kernel's own errors (status and code) say why; any other failure is internal and its text stays here.
            const own = typeof error.status === 'number' && typeof error.code === 'string';
            this.send({
              t: 'reply', id: message.id, ok: false,
              error: own
                ? { status: error.status!, code: error.code!, message: error.expose === false ? 'Kernel call failed' : String(error.message ?? 'Kernel call failed') }
                // A kernel capability that met an unreachable database (a failover) is as retryable as a kernel route.
                : isDatabaseUnavailable(failure) ? { ...DATABASE_UNAVAILABLE }
                  : { status: 500, code: 'kernel_error', message: 'Kernel call failed' },
            });
          },
        );
        break;
      case 'log':
        this.onLog({ at: new Date().toISOString(), level: message.level, message: message.message, fields: message.fields });
        break;
    }
  }

  /** This loading of the plugin is gone (its process died, or it must start afresh): calls in flight fail, and it loads again (see the class comment for when it waits). */
  private lost(slot: string, exit: WorkerExit): void {
    if (this.slot !== slot) return;
    this.slot = null;
    this.health.pid = null;
    const { code, signal, reason } = exit;
    this.health.lastExit = { code, signal, reason, at: new Date().toISOString() };
    for (const [id, waiter] of this.pending) {
      clearTimeout(waiter.timer);
      waiter.resolve({ ok: false, error: { status: 503, code: 'plugin_crashed', message: `${this.key} stopped while handling the call${reason ? `: ${reason}` : ''}` }, activityWritten: false });
      this.pending.delete(id);
    }
    this.health.inFlight = 0;
    if (this.stopped) { this.health.status = 'stopped'; return; }
    this.health.consecutiveFailures++;
    this.health.restarts++;
    const delay = this.backoff(exit);
    this.health.status = 'restarting';
    this.log.warn({ plugin: this.key, code, signal, reason, delay }, 'plugin worker exited; restarting');
    this.onLog({ at: new Date().toISOString(), level: 'warn', message: `worker exited (code ${code}${signal ? `, ${signal}` : ''}); restarting${delay ? ` in ${delay} ms` : ''}` });
    if (delay === 0) { this.reload(); return; }
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (!this.stopped) this.reload();
    }, delay);
    this.restartTimer.unref();
  }

  /** How long to wait before loading again after this loss: nothing, unless this plugin is in a crash loop. */
  private backoff(exit: WorkerExit): number {
    const stable = this.answered || (this.loadedAt !== null && performance.now() - this.loadedAt >= STABLE_MS);
    if (stable) this.crashLoop = 0;
    // Another plugin ended the shared process: this one did nothing wrong and comes back at once.
    if (exit.culprit && exit.culprit !== this.key) return 0;
    this.crashLoop++;
    return this.crashLoop <= 1 ? 0 : Math.min(MAX_BACKOFF_MS, 100 * 2 ** Math.min(this.crashLoop - 2, 9));
  }

  /** Loads the plugin again; calls that arrive meanwhile wait for it (invoke awaits `ready`). */
  private reload(): void {
    this.ready = this.load();
    this.ready.then(() => {
      this.health.consecutiveFailures = 0;
      this.log.info({ plugin: this.key, restarts: this.health.restarts, pid: this.health.pid }, 'plugin worker restarted');
    }, (error: Error) => this.log.warn({ plugin: this.key, reason: error.message }, 'plugin worker failed to restart'));
  }

  private get running(): boolean {
    return this.slot !== null && this.health.status === 'running' && this.host.connected;
  }

  private send(message: SlotMessage): boolean {
    if (this.slot === null) return false;
    return this.host.send({ ...message, slot: this.slot } as KernelToWorker);
  }

  /** A call overran the kernel's own deadline: the worker process did not answer in time, so it is ended (this plugin is its culprit). */
  private unresponsive(): void {
    this.host.kill(this.key);
  }

  private settle(message: CallResult): void {
    const waiter = this.pending.get(message.id);
    if (!waiter) return;
    this.pending.delete(message.id);
    clearTimeout(waiter.timer);
    this.health.inFlight = this.pending.size;
    if (message.ok) this.answered = true;
    waiter.resolve({ ok: message.ok, value: message.value, envelope: message.envelope, error: message.error, activityWritten: message.activityWritten, kernelRowsWritten: message.kernelRowsWritten });
  }

  /** Sends one invocation and resolves with its result; never rejects. */
  /**
   * Sends the calls of one batch together (group commit in the worker: one transaction, a
   * savepoint per item). Each item resolves on its own result; the kernel's deadline for the
   * batch allows every item its own deadline in turn.
   */
  async invokeBatch(messages: InvokeMessage[]): Promise<InvokeResult[]> {
    const refuse = (error: WireError) => messages.map(() => ({ ok: false, error, activityWritten: false }) as InvokeResult);
    if (this.stopped) return refuse({ status: 503, code: 'plugin_unavailable', message: `${this.key} is stopping` });
    this.lastCalledAt = performance.now();
    // No plugin_busy here: a batch is one unit of work in the worker, and its route's batcher
    // already bounds how many are in flight; counting its calls would refuse the very load
    // that batching exists to absorb.
    try { await this.ready; } catch { if (this.health.status === 'restarting' && this.ready) await this.ready.catch(() => undefined); }
    if (!this.running) return refuse({ status: 503, code: 'plugin_unavailable', message: `${this.key} is not running (${this.health.status})` });
    const budget = messages.reduce((sum, m) => sum + m.deadlineMs, 0) + 1000;
    const results = messages.map((message) => new Promise<InvokeResult>((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(message.id);
        this.health.inFlight = this.pending.size;
        resolve({ ok: false, error: { status: 504, code: 'plugin_timeout', message: `${this.key} did not answer within its deadline` }, activityWritten: false });
        this.unresponsive();
      }, budget);
      this.pending.set(message.id, { resolve, timer });
    }));
    this.health.inFlight = this.pending.size;
    if (!this.send({ t: 'invoke_batch', items: messages })) {
      for (const message of messages) {
        const waiter = this.pending.get(message.id);
        if (!waiter) continue;
        clearTimeout(waiter.timer);
        this.pending.delete(message.id);
        waiter.resolve({ ok: false, error: { status: 503, code: 'plugin_unavailable', message: `${this.key} is not running` }, activityWritten: false });
      }
    }
    return Promise.all(results);
  }

  async invoke(message: InvokeMessage): Promise<InvokeResult> {
    if (this.stopped) {
      return { ok: false, error: { status: 503, code: 'plugin_unavailable', message: `${this.key} is stopping` }, activityWritten: false };
    }
    this.lastCalledAt = performance.now();
    if (this.pending.size >= this.maxConcurrent) {
      return { ok: false, error: { status: 503, code: 'plugin_busy', message: `${this.key} has ${this.maxConcurrent} calls in flight; retry shortly` }, activityWritten: false };
    }
    try {
      await this.ready;
    } catch {
      if (this.health.status === 'restarting' && this.ready) await this.ready.catch(() => undefined);
    }
    if (!this.running) {
      return { ok: false, error: { status: 503, code: 'plugin_unavailable', message: `${this.key} is not running (${this.health.status})` }, activityWritten: false };
    }
    return new Promise<InvokeResult>((resolve) => {
      // The kernel's own deadline, a little after the worker's: it holds even if the worker hangs.
      const timer = setTimeout(() => {
        this.pending.delete(message.id);
        this.health.inFlight = this.pending.size;
        resolve({ ok: false, error: { status: 504, code: 'plugin_timeout', message: `${this.key} did not answer within ${message.deadlineMs} ms` }, activityWritten: false });
        this.unresponsive();
      }, message.deadlineMs + 1000);
      this.pending.set(message.id, { resolve, timer });
      this.health.inFlight = this.pending.size;
      if (!this.send(message)) {
        clearTimeout(timer);
        this.pending.delete(message.id);
        resolve({ ok: false, error: { status: 503, code: 'plugin_unavailable', message: `${this.key} is not running` }, activityWritten: false });
      }
    });
  }

  updateConfig(config: Record<string, unknown>): void {
    this.init = { ...this.init, config };
    this.send({ t: 'config', config });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    await this.drain();
    const slot = this.slot;
    this.slot = null;
    if (slot) await this.host.unload(slot);
    this.health.pid = null;
    this.health.status = 'stopped';
  }

  /**
   * Lets calls in flight finish before the worker goes away, so an upgrade (a hot swap) or a
   * disable never cuts one off. Bounded by the call deadline: by then the kernel's own timer
   * has failed every call still pending.
   */
  private async drain(): Promise<void> {
    const until = Date.now() + this.init.limits.callTimeoutMs + 1000;
    while (this.pending.size > 0 && this.running && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}
