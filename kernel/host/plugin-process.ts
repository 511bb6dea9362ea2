import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { CallResult, InvokeMessage, KernelEffect, KernelToWorker, WireError, WorkerInit, WorkerToKernel } from './protocol/messages.ts';

import { DeliversSecrets } from './capabilities/types.ts';
import { workerEntry } from './worker-entry.ts';

export interface InvokeResult { ok: boolean; value?: string; error?: WireError; activityWritten: boolean; effects?: KernelEffect[] }
export type KernelCallHandler = (call: Extract<WorkerToKernel, { t: 'call' }>) => Promise<unknown>;

export interface PluginHealth {
  status: 'starting' | 'running' | 'restarting' | 'stopped' | 'failed';
  pid: number | null;
  restarts: number;
  consecutiveFailures: number;
  lastExit: { code: number | null; signal: string | null; reason: string | null; at: string } | null;
  lastBootMs: number | null;
  inFlight: number;
  startedAt: string | null;
}

export interface LogLine { at: string; level: string; message: string; fields?: Record<string, unknown> }

const MAX_BACKOFF_MS = 30_000;

/**
 * Supervises one plugin's worker process: boots it, sends it invocations with a deadline,
 * answers its kernel-capability calls through the broker, and restarts it with exponential
 * backoff when it dies (crash, out of memory, runaway call). Calls in flight when the worker
 * dies fail with a clear error; nothing else in the kernel notices.
 */
export class PluginProcess {
  readonly key: string;
  private child: ChildProcess | null = null;
  private init: WorkerInit;
  private readonly log: Logger;
  private readonly onCall: KernelCallHandler;
  private readonly onLog: (line: LogLine) => void;
  private readonly pending = new Map<string, { resolve(result: InvokeResult): void; timer: NodeJS.Timeout }>();
  private ready: Promise<void> | null = null;
  private stopped = false;
  private restartTimer: NodeJS.Timeout | null = null;
  private fatalReason: string | null = null;
  readonly health: PluginHealth = { status: 'starting', pid: null, restarts: 0, consecutiveFailures: 0, lastExit: null, lastBootMs: null, inFlight: 0, startedAt: null };
  readonly maxConcurrent: number;

  /** Told when a worker process is gone, with the database session name it used (see spawn). */
  private readonly onExit: (applicationName: string) => void;

  constructor(options: { init: WorkerInit; log: Logger; onCall: KernelCallHandler; onLog: (line: LogLine) => void; maxConcurrent: number; onExit?: (applicationName: string) => void }) {
    this.key = options.init.pluginKey;
    this.init = options.init;
    this.log = options.log;
    this.onCall = options.onCall;
    this.onLog = options.onLog;
    this.maxConcurrent = options.maxConcurrent;
    this.onExit = options.onExit ?? (() => undefined);
  }

  start(): Promise<void> {
    this.stopped = false;
    this.ready = this.spawn();
    return this.ready;
  }

  private async spawn(): Promise<void> {
    this.health.status = this.health.restarts > 0 ? 'restarting' : 'starting';
    const child = fork(await workerEntry(), [], {
      execArgv: ['--no-node-snapshot', '--disable-warning=ExperimentalWarning'],
      serialization: 'json',
      // A process group of its own: a Ctrl-C in the operator's terminal reaches the kernel,
      // which stops workers in order, not every worker at once mid-request.
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      env: { NODE_ENV: process.env.NODE_ENV ?? 'production', PATH: process.env.PATH ?? '' },
    });
    this.child = child;
    this.fatalReason = null;
    this.health.pid = child.pid ?? null;
    // Each process names its database sessions uniquely: once it is gone, the kernel ends what
    // they still run (a statement a crashed or killed worker left behind would otherwise run on
    // until statement_timeout, whatever its call's deadline was).
    const applicationName = `keel-w${randomBytes(6).toString('hex')}-${this.key}`.slice(0, 63);
    const init: WorkerInit = this.init.database ? { ...this.init, database: { ...this.init.database, applicationName } } : this.init;
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => { stderr = (stderr + chunk.toString()).slice(-4000); });
    const booted = new Promise<void>((resolve, reject) => {
      const onMessage = (message: WorkerToKernel) => {
        if (message.t === 'ready') {
          this.health.status = 'running';
          this.health.lastBootMs = Math.round(message.bootMs);
          this.health.startedAt = new Date().toISOString();
          resolve();
        } else if (message.t === 'boot_failed') {
          this.fatalReason = message.error.message;
          reject(Object.assign(new Error(message.error.message), { code: message.error.code }));
        }
      };
      child.on('message', onMessage);
      child.once('exit', (code) => reject(new Error(`worker exited during boot (code ${code}): ${this.fatalReason ?? stderr.split('\n').filter(Boolean).slice(-3).join(' | ')}`)));
    });
    child.on('message', (message: WorkerToKernel) => this.handle(message));
    child.on('exit', (code, signal) => {
      if (this.init.database) this.onExit(applicationName);
      this.exited(child, code, signal, stderr);
    });
    // A write to a worker that is dying fails with EPIPE, reported as an 'error' event: without
    // a listener that event would end the kernel. The exit handler deals with the worker.
    child.on('error', (error) => this.log.warn({ plugin: this.key, err: error }, 'plugin worker channel error'));
    child.send({ t: 'init', init } satisfies KernelToWorker);
    booted.catch(() => undefined);
    return booted;
  }

  private handle(message: WorkerToKernel): void {
    switch (message.t) {
      case 'result':
        this.settle(message);
        break;
      case 'results':
        for (const result of message.results) this.settle(result);
        break;
      case 'call':
        this.onCall(message).then(
          (value) => this.send(value instanceof DeliversSecrets
            ? { t: 'reply', id: message.id, ok: true, value: value.value, secrets: value.secrets }
            : { t: 'reply', id: message.id, ok: true, value }),
          (failure: { status?: number; code?: string; message?: string; expose?: boolean } | undefined) => {
            const error = failure ?? {};
            // Only the kernel's own errors (status and code) say why; any other failure is internal and its text stays here.
            const own = typeof error.status === 'number' && typeof error.code === 'string';
            this.send({
              t: 'reply', id: message.id, ok: false,
              error: own
                ? { status: error.status!, code: error.code!, message: error.expose === false ? 'Kernel call failed' : String(error.message ?? 'Kernel call failed') }
                : { status: 500, code: 'kernel_error', message: 'Kernel call failed' },
            });
          },
        );
        break;
      case 'log':
        this.onLog({ at: new Date().toISOString(), level: message.level, message: message.message, fields: message.fields });
        break;
      case 'fatal':
        this.fatalReason = message.reason;
        this.onLog({ at: new Date().toISOString(), level: 'error', message: `worker fatal: ${message.reason}` });
        break;
    }
  }

  private exited(child: ChildProcess, code: number | null, signal: string | null, stderr: string): void {
    if (this.child !== child) return;
    this.child = null;
    this.health.pid = null;
    const reason = this.fatalReason ?? (stderr.split('\n').filter(Boolean).slice(-2).join(' | ') || null);
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
    const delay = Math.min(MAX_BACKOFF_MS, 100 * 2 ** Math.min(this.health.consecutiveFailures - 1, 9));
    this.health.status = 'restarting';
    this.log.warn({ plugin: this.key, code, signal, reason, delay }, 'plugin worker exited; restarting');
    this.onLog({ at: new Date().toISOString(), level: 'warn', message: `worker exited (code ${code}${signal ? `, ${signal}` : ''}); restarting in ${delay} ms` });
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (this.stopped) return;
      this.ready = this.spawn();
      this.ready.then(() => {
        this.health.consecutiveFailures = 0;
        this.log.info({ plugin: this.key, restarts: this.health.restarts, pid: this.health.pid }, 'plugin worker restarted');
      }, (error: Error) => this.log.warn({ plugin: this.key, reason: error.message }, 'plugin worker failed to restart'));
    }, delay);
    this.restartTimer.unref();
  }

  private send(message: KernelToWorker): boolean {
    if (!this.child?.connected) return false;
    this.child.send(message);
    return true;
  }

  private settle(message: CallResult): void {
    const waiter = this.pending.get(message.id);
    if (!waiter) return;
    this.pending.delete(message.id);
    clearTimeout(waiter.timer);
    this.health.inFlight = this.pending.size;
    waiter.resolve({ ok: message.ok, value: message.value, error: message.error, activityWritten: message.activityWritten, effects: message.effects });
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
    // No plugin_busy here: a batch is one unit of work in the worker, and its route's batcher
    // already bounds how many are in flight; counting its calls would refuse the very load
    // that batching exists to absorb.
    try { await this.ready; } catch { if (this.health.status === 'restarting' && this.ready) await this.ready.catch(() => undefined); }
    if (!this.child?.connected) return refuse({ status: 503, code: 'plugin_unavailable', message: `${this.key} is not running (${this.health.status})` });
    const budget = messages.reduce((sum, m) => sum + m.deadlineMs, 0) + 1000;
    const results = messages.map((message) => new Promise<InvokeResult>((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(message.id);
        this.health.inFlight = this.pending.size;
        resolve({ ok: false, error: { status: 504, code: 'plugin_timeout', message: `${this.key} did not answer within its deadline` }, activityWritten: false });
        this.child?.kill('SIGKILL');
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
    if (this.pending.size >= this.maxConcurrent) {
      return { ok: false, error: { status: 503, code: 'plugin_busy', message: `${this.key} has ${this.maxConcurrent} calls in flight; retry shortly` }, activityWritten: false };
    }
    try {
      await this.ready;
    } catch {
      if (this.health.status === 'restarting' && this.ready) await this.ready.catch(() => undefined);
    }
    if (!this.child?.connected) {
      return { ok: false, error: { status: 503, code: 'plugin_unavailable', message: `${this.key} is not running (${this.health.status})` }, activityWritten: false };
    }
    return new Promise<InvokeResult>((resolve) => {
      // The kernel's own deadline, a little after the worker's: it holds even if the worker hangs.
      const timer = setTimeout(() => {
        this.pending.delete(message.id);
        this.health.inFlight = this.pending.size;
        resolve({ ok: false, error: { status: 504, code: 'plugin_timeout', message: `${this.key} did not answer within ${message.deadlineMs} ms` }, activityWritten: false });
        this.child?.kill('SIGKILL');
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
    const child = this.child;
    if (!child) { this.health.status = 'stopped'; return; }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
      child.once('exit', () => { clearTimeout(timer); resolve(); });
      if (!this.send({ t: 'shutdown' })) child.kill('SIGKILL');
    });
    this.health.status = 'stopped';
  }

  /**
   * Lets calls in flight finish before the worker goes away, so an upgrade (a hot swap) or a
   * disable never cuts one off. Bounded by the call deadline: by then the kernel's own timer
   * has failed every call still pending.
   */
  private async drain(): Promise<void> {
    const until = Date.now() + this.init.limits.callTimeoutMs + 1000;
    while (this.pending.size > 0 && this.child?.connected && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}
