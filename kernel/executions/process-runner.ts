import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { LogStream } from './execution-log.ts';

export interface ProcessSpec {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  uid: number | undefined;
  gid: number | undefined;
}

export interface ProcessOutcome { exitCode: number | null; signal: string | null; spawnError: string | null }

/** How long the executor waits for the pipes to drain after the process exited (a grandchild may hold them open). */
const DRAIN_AFTER_EXIT_MS = 1_000;

/**
 * One agent process: spawned detached, so it leads a process group of its own, and every
 * signal goes to the whole group (the agent's children too). stdout and stderr are read as
 * lines. When the leader exits, whatever it left behind in its group is killed.
 */
export class AgentProcess {
  readonly child: ChildProcess;
  readonly done: Promise<ProcessOutcome>;
  private exited = false;
  private killTimer: NodeJS.Timeout | null = null;

  constructor(spec: ProcessSpec, onLine: (stream: LogStream, line: string) => void) {
    this.child = spawn(spec.command, spec.args, {
      cwd: spec.cwd, env: spec.env, detached: true, uid: spec.uid, gid: spec.gid,
      stdio: ['ignore', 'pipe', 'pipe'], windowsHide: true,
    });
    const drained: Array<Promise<void>> = [];
    for (const stream of ['stdout', 'stderr'] as const) {
      const pipe = this.child[stream];
      if (!pipe) continue;
      const lines = createInterface({ input: pipe, crlfDelay: Infinity });
      lines.on('line', (line) => onLine(stream, line));
      drained.push(new Promise((resolve) => lines.once('close', () => resolve())));
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
        const settle = () => resolve({ exitCode: code, signal, spawnError: null });
        void Promise.race([Promise.all(drained), new Promise((r) => setTimeout(r, DRAIN_AFTER_EXIT_MS))]).then(settle);
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

/** Kills a process group a dead Keel process left behind (found by its recorded pid), when it still runs as the agent user. */
export function killOrphanedGroup(pid: number, agentUid: number): boolean {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]);
    if (uid !== agentUid) return false;
    process.kill(-pid, 'SIGKILL');
    return true;
  } catch {
    return false;
  }
}
