import type { ChildProcess } from 'node:child_process';
import type { Logger } from 'pino';
import type { KernelToWorker, WorkerInit, WorkerToKernel } from './protocol/messages.ts';
import type { WorkerProcesses } from './worker-standby.ts';
import { BatchingSender, unbatched, type Batched } from './protocol/message-batch.ts';

/** `loadingSlot` between a load's answer and the next load (slot ids are uuids: never this). */
const NEXT_LOAD_SCHEDULED = 'next load scheduled';

/** How a worker process ended; `culprit` is the plugin that ended it, when one is known. */
export interface WorkerExit { code: number | null; signal: string | null; reason: string | null; culprit?: string | null }

/** What a plugin loaded in a worker process hears from it. */
export interface SlotListener {
  message(message: Exclude<WorkerToKernel, { t: 'fatal' }>): void;
  /** The process ended, with every plugin in it. */
  exited(exit: WorkerExit): void;
  /** When the plugin was last called (performance.now(), 0 if never): the plugins called most recently load first after a crash. */
  lastCalled(): number;
}

/**
 * One extension-host worker process, and the plugins loaded in it. A third-party plugin has a
 * host of its own; the first-party plugins share one (each still in its own isolate, with its
 * own database role and deadlines). The process is started when a plugin is loaded into it and
 * ends when the last one leaves; when it dies, every plugin in it is told and loads itself
 * again (plugin-process.ts), which takes a new process: the warm standby (worker-standby.ts).
 */
export class WorkerHost {
  readonly name: string;
  private readonly log: Logger;
  private child: ChildProcess | null = null;
  private starting: Promise<ChildProcess> | null = null;
  private readonly slots = new Map<string, SlotListener>();
  private fatalReason: string | null = null;
  /** The plugin that ended the process (a V8 fatal error in its isolate, or a call of its that the kernel's deadline ended). */
  private culprit: string | null = null;
  private stderr = '';
  private readonly processes: WorkerProcesses;
  /** Loads waiting their turn, and the slot whose load the process is working on. */
  private loads: Array<{ slot: string; init: () => WorkerInit }> = [];
  private loadingSlot: string | null = null;
  /** Messages to the running process, gathered per turn of the event loop (protocol/message-batch.ts). */
  private channel: { child: ChildProcess; sender: BatchingSender<KernelToWorker> } | null = null;

  /** `processes` starts worker processes for every host of the kernel, and keeps the one warm standby they share. */
  constructor(options: { name: string; log: Logger; processes: WorkerProcesses }) {
    this.name = options.name;
    this.log = options.log;
    this.processes = options.processes;
  }

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  get connected(): boolean {
    return Boolean(this.child?.connected);
  }

  /**
   * Loads a plugin into the process (starting the process if it is not running). Loads are sent
   * one at a time, each once the one before has answered: a load carries the plugin's bundle
   * (hundreds of KiB), and a call sent to a plugin already loaded must not queue behind the
   * bundles of every other plugin on their way to a process that took over after a crash.
   * `init` is read when the load is sent, so that a configuration changed meanwhile goes with it.
   */
  async load(slot: string, init: () => WorkerInit, listener: SlotListener): Promise<void> {
    const child = await this.running();
    if (!child.connected) throw new Error(`the ${this.name} worker process is not running`);
    this.slots.set(slot, listener);
    this.loads.push({ slot, init });
    if (this.loadingSlot === null) this.sendNextLoad(child);
  }

  private sendNextLoad(child: ChildProcess): void {
    this.loadingSlot = null;
    if (this.child !== child) return;
    for (let next = this.loads.shift(); next; next = this.loads.shift()) {
      // Unloaded while it waited its turn: nothing to send.
      if (!this.slots.has(next.slot)) continue;
      this.loadingSlot = next.slot;
      // A process that cannot be written to is ending: its exit tells every plugin in it.
      this.sendTo(child, { t: 'load', slot: next.slot, init: next.init() });
      return;
    }
  }

  /** The load in flight answered: the next is sent after the calls this answer lets through (they go first). */
  private loadAnswered(child: ChildProcess, slot: string): void {
    if (this.child !== child || this.loadingSlot !== slot) return;
    this.loadingSlot = NEXT_LOAD_SCHEDULED;
    setImmediate(() => { if (this.child === child && this.loadingSlot === NEXT_LOAD_SCHEDULED) this.sendNextLoad(child); });
  }

  send(message: KernelToWorker): boolean {
    return this.child ? this.sendTo(this.child, message) : false;
  }

  /**
   * Takes a plugin out of the process; the process ends with its last plugin. Resolves when
   * the plugin is gone (its isolate disposed and connections closed, or the process ended).
   */
  async unload(slot: string): Promise<void> {
    if (!this.slots.delete(slot)) return;
    const child = this.child;
    if (!child) return;
    // Its load may never be answered now (the process skips a plugin unloaded before its boot).
    this.loadAnswered(child, slot);
    if (this.slots.size > 0) { this.sendTo(child, { t: 'unload', slot }); return; }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
      child.once('exit', () => { clearTimeout(timer); resolve(); });
      if (!this.sendTo(child, { t: 'shutdown' })) child.kill('SIGKILL');
    });
  }

  /** Ends a process that stopped answering (a call of `culprit` overran): every plugin in it is told, and loads itself again. */
  kill(culprit: string): void {
    if (!this.child) return;
    this.culprit ??= culprit;
    this.child.kill('SIGKILL');
  }

  private running(): Promise<ChildProcess> {
    if (this.child?.connected) return Promise.resolve(this.child);
    this.starting ??= this.spawn().finally(() => { this.starting = null; });
    return this.starting;
  }

  private async spawn(): Promise<ChildProcess> {
    const child = await this.processes.take();
    this.child = child;
    this.fatalReason = null;
    this.culprit = null;
    this.loads = [];
    this.loadingSlot = null;
    this.stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => { this.stderr = (this.stderr + chunk.toString()).slice(-4000); });
    // A process that stopped reading (it is ending) is not written to: its exit tells every plugin in it.
    this.channel = { child, sender: new BatchingSender<KernelToWorker>((item) => { if (child.connected) child.send(item); }) };
    child.on('message', (received: Batched<WorkerToKernel>) => {
      for (const message of unbatched(received)) this.received(child, message);
    });
    child.on('exit', (code, signal) => this.exited(child, code, signal));
    this.log.debug({ worker: this.name, pid: child.pid }, 'plugin worker process started');
    // It may have died while it stood by (between the check and the take).
    if (child.exitCode !== null || child.signalCode !== null) queueMicrotask(() => this.exited(child, child.exitCode, child.signalCode));
    return child;
  }

  private received(child: ChildProcess, message: WorkerToKernel): void {
    if (message.t === 'fatal') { this.fatalReason = message.reason; this.culprit = message.pluginKey ?? this.culprit; return; }
    this.slots.get(message.slot)?.message(message);
    if (message.t === 'loaded' || message.t === 'load_failed') this.loadAnswered(child, message.slot);
  }

  private exited(child: ChildProcess, code: number | null, signal: string | null): void {
    if (this.child !== child) return;
    this.child = null;
    this.channel = null;
    this.loads = [];
    this.loadingSlot = null;
    const reason = this.fatalReason ?? (this.stderr.split('\n').filter(Boolean).slice(-2).join(' | ') || null);
    // Each reloads in the order told, and the new process boots them one after another: the
    // plugins that serve traffic come back first, the idle ones after them.
    const listeners = [...this.slots.values()].sort((a, b) => b.lastCalled() - a.lastCalled());
    this.slots.clear();
    for (const listener of listeners) listener.exited({ code, signal, reason, culprit: this.culprit });
  }

  private sendTo(child: ChildProcess, message: KernelToWorker): boolean {
    if (!child.connected) return false;
    if (this.channel?.child === child) this.channel.sender.send(message);
    else child.send(message);
    return true;
  }
}
