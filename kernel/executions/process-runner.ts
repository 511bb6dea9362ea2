import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { LineReader } from './line-reader.ts';
import { namespacedCommand } from './pid-namespace.ts';

export interface ProcessSpec {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  uid: number | undefined;
  gid: number | undefined;
  /** Start it in a PID namespace of its own (pid-namespace.ts), as uid/gid. */
  pidNamespace: boolean;
  /** Written to its standard input, which is then closed (else it reads nothing: /dev/null). */
  stdin?: Buffer | null;
}

export interface ProcessOutcome { exitCode: number | null; signal: string | null; spawnError: string | null }

/** Where a process's output goes (an ExecutionLog): its lines, its decoded text, and whether to wait before reading on. */
export interface ProcessOutput {
  line(stream: 'stdout' | 'stderr', text: string, omittedBytes: number): void;
  raw(stream: 'stdout' | 'stderr', text: string): void;
  /** A promise while the output is behind: the pipe is paused (the process waits on its writes) until it settles. */
  ready(): Promise<void> | null;
}

/** How much of one line is held in memory (execution-log.ts: MAX_HELD_LINE_BYTES, plus room to mask a credential at the cut). */
export interface ReadLimits { holdChars: number }

/** How long the executor waits for the pipes to drain after the process exited (a grandchild may hold them open). */
const DRAIN_AFTER_EXIT_MS = 1_000;
/** How many more such waits a pipe paused for the log gets (the log being slow, not the process). */
const MAX_DRAIN_WAITS = 30;

/**
 * One agent process: spawned detached, so it leads a process group of its own, and every
 * signal goes to the whole group (the agent's children too). stdout and stderr are read as
 * lines of bounded length (line-reader.ts), the pipe paused while the output is behind. When
 * the leader exits, whatever it left behind in its group is killed.
 */
export class AgentProcess {
  readonly child: ChildProcess;
  readonly done: Promise<ProcessOutcome>;
  private exited = false;
  private killTimer: NodeJS.Timeout | null = null;

  constructor(spec: ProcessSpec, output: ProcessOutput, limits: ReadLimits) {
    const namespaced = spec.pidNamespace && spec.uid !== undefined && spec.gid !== undefined;
    // In a namespace the spawned program is unshare, which would report a missing command as an
    // exit code: it is looked up first, so that it still fails to start as it would outside.
    const missing = namespaced ? missingCommand(spec.command, spec.cwd, spec.env.PATH) : null;
    const inNamespace = namespaced && !missing;
    // A command found missing is spawned as it is, as the agent user: the kernel's own answer
    // (ENOENT, EACCES) is the error reported.
    const { command, args } = inNamespace ? namespacedCommand(spec.command, spec.args, spec.uid!, spec.gid!, spec.env) : spec;
    this.child = spawn(command, args, {
      cwd: spec.cwd, env: spec.env, detached: true,
      ...(inNamespace ? {} : { uid: spec.uid, gid: spec.gid }),
      stdio: [spec.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'], windowsHide: true,
    });
    if (spec.stdin && this.child.stdin) {
      // A process that exits without reading all of it closes the pipe: that is its business, not an error here.
      this.child.stdin.on('error', () => undefined);
      this.child.stdin.end(spec.stdin);
    }
    const drained: Array<Promise<void>> = [];
    const pipes: Readable[] = [];
    for (const stream of ['stdout', 'stderr'] as const) {
      const pipe = this.child[stream];
      if (!pipe) continue;
      pipes.push(pipe);
      drained.push(readLines(pipe, stream, output, limits));
    }
    this.done = new Promise<ProcessOutcome>((resolve) => {
      this.child.once('error', (error) => {
        this.exited = true;
        resolve({ exitCode: null, signal: null, spawnError: (error as NodeJS.ErrnoException).code ?? error.message });
      });
      this.child.once('exit', (code, signal) => {
        this.exited = true;
        // Whatever the leader left running in its group goes with it.
        this.signalGroup('SIGKILL');
        if (this.killTimer) clearTimeout(this.killTimer);
        const bySignal = inNamespace && signal === null ? signalOfShellStatus(code) : null;
        const settle = () => resolve(bySignal ? { exitCode: null, signal: bySignal, spawnError: null } : { exitCode: code, signal, spawnError: null });
        // Pipes still open then (held by something outside the group) are closed: nothing is read
        // after the end. A pipe paused because the log is behind is waited for: what it holds was written.
        let late: NodeJS.Timeout;
        let waits = 0;
        const closeLate = () => {
          if (waits++ < MAX_DRAIN_WAITS && pipes.some((pipe) => pipe.isPaused() && !pipe.destroyed)) { late = setTimeout(closeLate, DRAIN_AFTER_EXIT_MS); return; }
          for (const pipe of pipes) pipe.destroy();
        };
        late = setTimeout(closeLate, DRAIN_AFTER_EXIT_MS);
        void Promise.all(drained).then(() => { clearTimeout(late); settle(); });
      });
    });
  }

  get pid(): number | null {
    return this.child.pid ?? null;
  }

  /** SIGTERM to the group, SIGKILL after graceSec if anything of it is still there. */
  stop(graceSec: number): void {
    if (this.exited || this.killTimer) return;
    this.signalGroup('SIGTERM');
    this.killTimer = setTimeout(() => this.signalGroup('SIGKILL'), Math.max(0, graceSec) * 1000);
    this.killTimer.unref();
  }

  signalGroup(signal: NodeJS.Signals): void {
    const pid = this.child.pid;
    if (!pid) return;
    try { process.kill(-pid, signal); } catch { /* the group is gone */ }
  }
}

/** Reads one pipe to its end (or its destruction) through a LineReader; every line is handed on before this settles. */
function readLines(pipe: Readable, stream: 'stdout' | 'stderr', output: ProcessOutput, limits: ReadLimits): Promise<void> {
  const reader = new LineReader(limits.holdChars, (text, omitted) => output.line(stream, text, omitted));
  return new Promise<void>((resolve) => {
    let ended = false;
    const finish = () => {
      if (ended) return;
      ended = true;
      output.raw(stream, reader.end());
      resolve();
    };
    pipe.on('data', (chunk: Buffer) => {
      output.raw(stream, reader.push(chunk));
      const wait = output.ready();
      if (wait) { pipe.pause(); void wait.then(() => { if (!pipe.destroyed) pipe.resume(); }); }
    });
    pipe.once('end', finish);
    pipe.once('close', finish);
    pipe.once('error', finish);
  });
}

/** The signal a namespace's shell reported as 128 + its number (pid-namespace.ts). */
function signalOfShellStatus(code: number | null): NodeJS.Signals | null {
  if (code === null || code <= 128) return null;
  const found = Object.entries(osConstants.signals).find(([, number]) => number === code - 128);
  return (found?.[0] as NodeJS.Signals | undefined) ?? null;
}

/** Why a command cannot start ('ENOENT', 'EACCES'), looked up as spawn would (PATH of the new environment), or null. */
function missingCommand(command: string, cwd: string, path: string | undefined): string | null {
  const candidates = command.includes('/')
    ? [isAbsolute(command) ? command : resolve(cwd, command)]
    : (path ?? '').split(delimiter).filter(Boolean).map((dir) => join(dir, command));
  let reason = 'ENOENT';
  for (const candidate of candidates) {
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return null;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EACCES') reason = 'EACCES';
    }
  }
  return reason;
}

/**
 * Kills a process group a dead Keel process left behind, found by its recorded pid and
 * recognised by its environment, which names the run (or the workspace process): a pid reused since by anything else is
 * never touched.
 */
export function killOrphanedGroup(pid: number, marker: string): boolean {
  try {
    const environment = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    if (!environment.includes(marker)) return false;
    process.kill(-pid, 'SIGKILL');
    return true;
  } catch {
    return false;
  }
}
