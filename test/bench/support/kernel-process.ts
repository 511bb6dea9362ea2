import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { KERNEL_ENV, KERNEL_NODE_FLAGS } from '../../../kernel/node-flags.ts';

/**
 * A kernel started the way operators start it (`kernel/main.ts` in its own process, embedded
 * PostgreSQL in a fresh data directory), so that benchmarks measure the real server and the
 * load generator does not share its event loop.
 */
export interface KernelProcess {
  url: string;
  pid: number;
  dataDir: string;
  /** A pool on the kernel's own database, for setup that has no public route. */
  sql(): Promise<pg.Pool>;
  databaseUrl(): Promise<string>;
  /** A setup request that must succeed; answers the parsed JSON body. */
  call(method: string, path: string, body?: unknown): Promise<any>;
  stop(): Promise<void>;
}

export async function startKernelProcess(env: Record<string, string> = {}, entry: string[] = ['kernel/main.ts'], config?: Record<string, unknown>): Promise<KernelProcess> {
  const dataDir = await mkdtemp(join(tmpdir(), 'keel-bench-'));
  // Settings with no environment variable (for example plugins.sharedWorker.plugins) go in the directory's config file.
  if (config) await writeFile(join(dataDir, 'config.json'), JSON.stringify(config));
  const args = entry[0] === 'kernel/main.ts' ? [...entry, '--data-dir', dataDir, '--port', '0'] : [...entry, dataDir];
  // KEEL_BENCH_CPU_PROFILE=<dir>: the kernel writes a V8 CPU profile there when it stops (node --cpu-prof), to see where a benchmark's time goes.
  const profile = process.env.KEEL_BENCH_CPU_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.KEEL_BENCH_CPU_PROFILE}`] : [];
  const child = spawn(process.execPath, [...KERNEL_NODE_FLAGS, ...profile, ...args], {
    env: { ...process.env, ...KERNEL_ENV, KEEL_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) resolve(match[1]!);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    child.once('exit', (code) => reject(new Error(`kernel exited with ${code}: ${output}`)));
  });
  let pool: pg.Pool | undefined;
  const databaseUrl = async () => {
    const credentials = JSON.parse(await readFile(join(dataDir, 'db.json'), 'utf8'));
    return `postgres://keel:${encodeURIComponent(credentials.password)}@127.0.0.1:${credentials.port}/keel`;
  };
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(url + path, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
  return {
    url,
    call,
    dataDir,
    pid: child.pid!,
    databaseUrl,
    async sql() {
      pool ??= new pg.Pool({ connectionString: await databaseUrl(), max: 2 });
      return pool;
    },
    async stop() {
      await pool?.end();
      await stopChild(child);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGINT');
  });
}
