import { fork, type ChildProcess } from 'node:child_process';
import type { Logger } from 'pino';
import { KERNEL_ENV } from '../node-flags.ts';
import { workerEntry } from './worker-entry.ts';

/**
 * Starts the extension host's worker processes, and keeps one of them warm: a standby process
 * with Node booted and the worker bundle (isolated-vm, pg) loaded, waiting for its first
 * plugin. A worker that dies is replaced by the standby at once (a fresh process costs a few
 * hundred milliseconds of start-up, most of a plugin's restart), and the next standby starts
 * at once, beside it: a standby that started later was often still booting when the next
 * start or crash came (plugins enabled one after another, a crash a second). One standby in
 * all, whatever the number of worker processes: it costs one idle Node process (about 60 MiB
 * resident), and none before the first worker starts. A worker asked for while the standby
 * boots takes it: the second shared worker of a kernel's start is not a second cold start.
 */
export class WorkerProcesses {
  private readonly log: Logger;
  /** The standby: booting (`ready` null) or booted. */
  private spare: { booting: Promise<ChildProcess>; ready: ChildProcess | null } | null = null;
  private stopped = false;

  constructor(log: Logger) {
    this.log = log;
  }

  /** The standby's pid, for health diagnostics. */
  get standbyPid(): number | null {
    const ready = this.spare?.ready;
    return ready?.connected ? ready.pid ?? null : null;
  }

  /** A worker process for a host to adopt: the warm standby when there is one (waiting for it while it boots), a fresh one otherwise. */
  async take(): Promise<ChildProcess> {
    const spare = this.spare;
    this.spare = null;
    const warm = spare ? await spare.booting.then((child) => {
      if (child.connected) return child;
      child.kill('SIGKILL');
      return null;
    }, () => null) : null;
    this.replenish();
    return warm ?? await this.fork();
  }

  /** Ends the standby; none is started after this. */
  stop(): void {
    this.stopped = true;
    const spare = this.spare;
    this.spare = null;
    void spare?.booting.then((child) => child.kill('SIGKILL'), () => undefined);
  }

  private replenish(): void {
    if (this.stopped || this.spare) return;
    const spare: NonNullable<WorkerProcesses['spare']> = { booting: this.fork(), ready: null };
    this.spare = spare;
    spare.booting.then((child) => {
      if (this.stopped) { child.kill('SIGKILL'); return; }
      spare.ready = child;
      // A standby that dies idle is simply forgotten: the next take starts a fresh process,
      // so a worker that cannot start is never restarted in a loop here.
      child.once('exit', () => { if (this.spare === spare) this.spare = null; });
    }, (error: Error) => {
      if (this.spare === spare) this.spare = null;
      this.log.warn({ err: error }, 'could not start a standby plugin worker');
    });
  }

  private async fork(): Promise<ChildProcess> {
    const child = fork(await workerEntry(), [], {
      // No --max-semi-space-size here (the kernel has one, kernel/node-flags.ts): V8's flag
      // overrides the young generation isolated-vm sizes for each plugin's isolate from its
      // memory limit, and would give every isolate 16 MiB semi-spaces.
      execArgv: ['--no-node-snapshot', '--disable-warning=ExperimentalWarning'],
      // V8's serialization copies the long JSON texts messages carry (answers, inputs) as
      // they are; the JSON channel escaped and unescaped them again on every hop. Messages
      // stay plain data (protocol/messages.ts).
      serialization: 'advanced',
      // A process group of its own: a Ctrl-C in the operator's terminal reaches the kernel,
      // which stops workers in order, not every worker at once mid-request.
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      // The kernel's allocator setting too (MALLOC_ARENA_MAX, node-flags.ts): a worker's threads
      // (V8's platform, libuv's pool, isolated-vm's) each kept a glibc arena of their own.
      env: { ...KERNEL_ENV, NODE_ENV: process.env.NODE_ENV ?? 'production', PATH: process.env.PATH ?? '' },
    });
    // A write to a worker that is dying fails with EPIPE, reported as an 'error' event: without
    // a listener that event would end the kernel. The exit handler deals with the worker.
    child.on('error', (error) => this.log.warn({ err: error }, 'plugin worker channel error'));
    return child;
  }
}
