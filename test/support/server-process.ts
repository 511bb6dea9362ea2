import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { KERNEL_ENV, KERNEL_NODE_FLAGS } from '../../kernel/node-flags.ts';

/**
 * The server as operators run it: `kernel/main.ts` in a process of its own. Tests read what
 * it prints (plain lines and pino's JSON lines) and stop it with signals.
 */
export interface ServerProcess {
  child: ChildProcess;
  /** Everything printed so far, stdout and stderr interleaved. */
  output(): string;
  /** The JSON log lines printed so far. */
  logLines(): Array<Record<string, any>>;
  /** Resolves with the URL once the server has printed where it listens and where its data lives; rejects if it exits first. */
  listening: Promise<string>;
  /** Resolves with the exit code (or the signal) once the process has ended. */
  exited: Promise<number | string>;
  /** Resolves once the output matches `pattern`; rejects if the process exits first. */
  printed(pattern: RegExp): Promise<void>;
}

export function startServer(options: { home: string; args?: string[]; env?: Record<string, string | undefined>; entry?: string; npm?: boolean; detached?: boolean }): ServerProcess {
  const args = options.args ?? ['--port', '0'];
  // `entry`: another module that starts a kernel (test/support/kernel-child.ts: no first-party plugins).
  // `npm`: through `npm start`, as operators run it (npm forwards the signals it gets); `detached`:
  // in a process group of its own (`-child.pid`), as a service manager or a container runs it.
  const [command, argv] = options.npm
    ? ['npm', ['start', '--silent', '--', ...args]]
    : [process.execPath, [...KERNEL_NODE_FLAGS, options.entry ?? 'kernel/main.ts', ...args]];
  const child = spawn(command, argv, {
    env: { ...process.env, ...KERNEL_ENV, KEEL_HOME: options.home, KEEL_LOG_LEVEL: 'warn', DATABASE_URL: undefined, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'], detached: options.detached === true,
  });
  let text = '';
  const waiters: Array<() => void> = [];
  const onData = (chunk: Buffer) => {
    text += chunk.toString();
    for (const wake of waiters.splice(0)) wake();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const printed = (pattern: RegExp) => new Promise<void>((resolve, reject) => {
    const check = () => { if (pattern.test(text)) resolve(); else waiters.push(check); };
    check();
    void exited.then((code) => reject(new Error(`exited with ${code} before printing ${pattern}: ${text}`)));
  });
  const listening = new Promise<string>((resolve, reject) => {
    const check = () => {
      const match = /Keel is listening on (http:\/\/\S+)[^\n]*\nData directory: [^\n]*\n/.exec(text);
      if (match) { resolve(match[1]!); return; }
      waiters.push(check);
    };
    check();
    void exited.then((code) => reject(new Error(`exited with ${code}: ${text}`)));
  });
  listening.catch(() => undefined);
  return {
    child,
    output: () => text,
    logLines: () => text.split('\n').filter((line) => line.startsWith('{')).flatMap((line) => {
      try { return [JSON.parse(line) as Record<string, any>]; } catch { return []; }
    }),
    listening,
    exited,
    printed,
  };
}

/** Sends a signal and waits for the process to end. */
export async function stopServer(server: ServerProcess, signal: NodeJS.Signals = 'SIGINT'): Promise<number | string> {
  if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill(signal);
  return server.exited;
}

/** Pids of the processes whose command line contains `needle` (ps, so this works for any user). */
export async function processesMatching(needle: string): Promise<number[]> {
  const { execFileSync } = await import('node:child_process');
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return out.split('\n').filter((line) => line.includes(needle) && !line.includes('ps -eo')).map((line) => Number(line.trim().split(/\s+/)[0]));
}

/**
 * Stops a PostgreSQL that a killed server left running in `dataDir` and waits until it is
 * gone, so the folder can be removed. It is no child of the test, so there is no exit event
 * to await: its pid is polled.
 */
export async function stopOrphanedPostgres(dataDir: string): Promise<void> {
  const pids = await processesMatching(`-D ${dataDir}`);
  for (const pid of pids) { try { process.kill(pid, 'SIGINT'); } catch { /* gone */ } }
  for (let i = 0; i < 200 && (await processesMatching(`-D ${dataDir}`)).length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
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

/** Polls `probe` until `accept` holds or `timeoutMs` passes (state of another process, with no event to await); answers the last value either way. */
export async function eventually<T>(probe: () => Promise<T>, accept: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await probe();
  while (!accept(value) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    value = await probe();
  }
  return value;
}
