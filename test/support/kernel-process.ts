import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';

/**
 * `kernel/main.ts` in its own process, as operators run it: the output it printed, the URL it
 * listens on once it says so, and how it ended. Tests kill every process they start in
 * afterAll with `kill()`, which is safe to call on one that already exited.
 */
export interface KernelProcess {
  child: ChildProcess;
  output(): string;
  /** Resolves with the URL once the process prints `listening on`; rejects if it exits first. */
  listening: Promise<string>;
  /** Resolves with the exit code (or the signal's name) once the process has ended. */
  exited: Promise<number | string>;
  /** SIGINT, then SIGKILL after `graceMs`; resolves once the process has ended. */
  stop(graceMs?: number): Promise<number | string>;
  kill(): Promise<void>;
}

export function startKernelProcess(options: { env: Record<string, string>; args?: string[] }): KernelProcess {
  const child = spawn(process.execPath, ['--no-node-snapshot', 'kernel/main.ts', '--port', '0', ...(options.args ?? [])], {
    env: { ...process.env, KEEL_LOG_LEVEL: 'warn', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  child.stdout!.on('data', (chunk: Buffer) => { text += chunk.toString(); });
  child.stderr!.on('data', (chunk: Buffer) => { text += chunk.toString(); });
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  const listening = new Promise<string>((resolve, reject) => {
    const timer = setInterval(() => {
      const match = /listening on (http:\/\/\S+)/.exec(text);
      if (match) { clearInterval(timer); resolve(match[1]!); }
    }, 50);
    void exited.then((code) => { clearInterval(timer); reject(new Error(`exited with ${code}: ${text}`)); });
  });
  listening.catch(() => undefined);
  const ended = () => child.exitCode !== null || child.signalCode !== null;
  return {
    child, listening, exited,
    output: () => text,
    async stop(graceMs = 20_000) {
      if (!ended()) {
        child.kill('SIGINT');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      }
      return exited;
    },
    async kill() {
      if (!ended()) child.kill('SIGKILL');
      await exited;
    },
  };
}

/** Pids of the plugin worker processes a kernel process runs (its children running the worker bundle). */
export async function workerPids(kernelPid: number): Promise<number[]> {
  const { stdout } = await promisify(execFile)('ps', ['-o', 'pid=,args=', '--ppid', String(kernelPid)]).catch((error: { stdout?: string; code?: number }) => {
    // ps exits 1 when the process has no children.
    if (error.code === 1) return { stdout: error.stdout ?? '' };
    throw error;
  });
  return stdout.split('\n').filter((line) => line.includes('plugin-worker.mjs')).map((line) => Number(line.trim().split(/\s+/)[0]));
}

/** Polls `probe` until `accept` holds or `timeoutMs` passes; answers the last value either way. */
export async function eventually<T>(probe: () => Promise<T>, accept: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await probe();
  while (!accept(value) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    value = await probe();
  }
  return value;
}
