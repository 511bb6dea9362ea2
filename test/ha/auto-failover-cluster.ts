import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/**
 * A PostgreSQL 15 cluster managed by pg_auto_failover, from Debian's packages: a monitor, a
 * primary and a synchronous standby (replication quorum, so a commit is acknowledged only
 * once the standby has it) on free local ports: trust on 127.0.0.1 for its own roles, a SCRAM
 * password for Keel's role `keel`. Its processes run as the `postgres` OS user (PostgreSQL
 * refuses root) in a temporary directory that user owns; `stop` ends them all and removes it.
 */
const PG_BIN = '/usr/lib/postgresql/15/bin';
const SOCKET_DIR = '/var/run/postgresql';
const INSTALL = 'apt-get install -y postgresql-15 postgresql-15-auto-failover pg-auto-failover-cli';
/** Failure detection tuned for a test (the defaults take ~30-60 s); docs/high-availability.md lists them. */
const MONITOR_SETTINGS: Record<string, number> = {
  'pgautofailover.health_check_period': 1000,
  'pgautofailover.health_check_timeout': 1000,
  'pgautofailover.health_check_max_retries': 1,
  'pgautofailover.health_check_retry_delay': 200,
  'pgautofailover.node_considered_unhealthy_timeout': 3000,
  'pgautofailover.primary_demote_timeout': 3000,
};

export interface ClusterNode { name: string; port: number; pgdata: string; process: ChildProcess }

export interface AutoFailoverCluster {
  nodes: ClusterNode[];
  /** What `pg_autoctl show uri --formation default` prints, with the keel role's credentials. */
  keelUrl: string;
  /** A superuser connection to one node (trust on 127.0.0.1). */
  adminUrl(node: ClusterNode, database?: string): string;
  /** The node the monitor reports as primary (read-write), once one (other than `not`) is. */
  primary(options?: { not?: ClusterNode; timeoutMs?: number }): Promise<ClusterNode>;
  /** Kills a node outright: its pg_autoctl and its postmaster (SIGKILL), as a machine that died. */
  kill(node: ClusterNode): void;
  /** Starts a killed node's pg_autoctl again and waits until it has rejoined as the synchronous standby. */
  rejoin(node: ClusterNode): Promise<void>;
  stop(): Promise<void>;
}

/** Fails with what to install when the packages are missing: the test must not pass by skipping. */
export function assertPackagesInstalled(): void {
  const missing = [join(PG_BIN, 'pg_ctl'), '/usr/bin/pg_autoctl'].filter((file) => !existsSync(file));
  if (missing.length > 0) throw new Error(`pg_auto_failover is not installed (missing ${missing.join(', ')}); run: ${INSTALL}`);
  if (process.getuid?.() !== 0) throw new Error('the failover test runs PostgreSQL as the postgres user (runuser): run it as root, as .ci/run does');
}

export async function startAutoFailoverCluster(): Promise<AutoFailoverCluster> {
  assertPackagesInstalled();
  const dir = mkdtempSync(join(tmpdir(), 'keel-ha-'));
  const [uid, gid] = ['-u', '-g'].map((flag) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim()));
  chownSync(dir, uid!, gid!);
  const [monitorPort, port1, port2] = await freePorts(3);
  const children: ChildProcess[] = [];
  // pg_autoctl keeps its configuration and state under XDG directories: inside the cluster's folder.
  const env = [`PATH=${PG_BIN}:/usr/bin:/bin`, `XDG_CONFIG_HOME=${dir}/config`, `XDG_DATA_HOME=${dir}/data`, `XDG_RUNTIME_DIR=${dir}/run`, 'PG_AUTOCTL_DEBUG='];
  const autoctl = (args: string[], log: string): ChildProcess => {
    const out = openSync(join(dir, log), 'a');
    const child = spawn('runuser', ['-u', 'postgres', '--', 'env', ...env, 'pg_autoctl', ...args], { detached: true, stdio: ['ignore', out, out] });
    children.push(child);
    return child;
  };
  const autoctlOutput = (args: string[]) => execFileSync('runuser', ['-u', 'postgres', '--', 'env', ...env, 'pg_autoctl', ...args], { encoding: 'utf8' });
  const common = ['--hostname', '127.0.0.1', '--auth', 'trust', '--no-ssl'];
  const monitorUrl = `postgres://postgres@127.0.0.1:${monitorPort}/pg_auto_failover`;
  const nodeStates = async () => (await query<{ nodename: string; nodeport: number; reportedstate: string; goalstate: string }>(monitorUrl,
    'select nodename, nodeport, reportedstate, goalstate from pgautofailover.node order by nodeid'));
  const until = async <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe().catch(() => undefined);
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`pg_auto_failover: ${what} did not happen within ${timeoutMs} ms; logs in ${dir}:\n${tail(dir)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };
  const nodes: ClusterNode[] = [];
  const cluster: AutoFailoverCluster = {
    nodes,
    keelUrl: '',
    adminUrl: (node, database = 'keel') => `postgres://postgres@127.0.0.1:${node.port}/${database}`,
    primary: ({ not, timeoutMs = 90_000 } = {}) => until('a promotion', async () => {
      const states = await nodeStates();
      const primary = states.find((state) => state.nodeport !== not?.port && ['primary', 'wait_primary', 'single'].includes(state.reportedstate) && state.reportedstate === state.goalstate);
      return primary ? nodes.find((node) => node.port === primary.nodeport) : undefined;
    }, timeoutMs),
    kill(node) {
      const postmaster = postmasterPid(node.pgdata);
      try { process.kill(-node.process.pid!, 'SIGKILL'); } catch { /* gone */ }
      if (postmaster) { try { process.kill(postmaster, 'SIGKILL'); } catch { /* gone */ } }
    },
    async rejoin(node) {
      node.process = autoctl(['run', '--pgdata', node.pgdata], `${node.name}.log`);
      await until(`${node.name} to rejoin as standby`, async () => {
        const states = await nodeStates();
        const standby = states.find((state) => state.nodeport === node.port);
        return standby?.reportedstate === 'secondary' && standby.goalstate === 'secondary'
          && states.some((state) => state.reportedstate === 'primary' && state.goalstate === 'primary') ? true : undefined;
      });
    },
    async stop() {
      // SIGINT: pg_autoctl stops its PostgreSQL (fast shutdown) and exits; what remains after that is killed.
      const postmasters = [join(dir, 'monitor'), ...nodes.map((node) => node.pgdata)].map(postmasterPid).filter((pid): pid is number => pid !== null);
      await Promise.all(children.map((child) => endGroup(child)));
      for (const pid of postmasters) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
      // A killed PostgreSQL leaves its socket and lock file in Debian's socket directory.
      for (const port of [monitorPort, port1, port2]) {
        for (const file of [`.s.PGSQL.${port}`, `.s.PGSQL.${port}.lock`]) rmSync(join(SOCKET_DIR, file), { force: true });
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    autoctl(['create', 'monitor', '--pgdata', join(dir, 'monitor'), '--pgport', String(monitorPort), ...common, '--run'], 'monitor.log');
    await until('the monitor start', async () => (await query(monitorUrl, 'select 1 from pgautofailover.formation')).length > 0 ? true : undefined);
    for (const [name, value] of Object.entries(MONITOR_SETTINGS)) await query(monitorUrl, `alter system set ${name} = ${value}`);
    await query(monitorUrl, 'select pg_reload_conf()');
    const monitorUri = `${monitorUrl.replace('postgres@', 'autoctl_node@')}?sslmode=disable`;
    const createNode = (name: string, port: number) => {
      const pgdata = join(dir, name);
      const child = autoctl(['create', 'postgres', '--pgdata', pgdata, '--pgport', String(port), ...common, '--name', name,
        '--monitor', monitorUri, '--dbname', 'keel', '--replication-quorum', 'true', '--run'], `${name}.log`);
      const node = { name, port, pgdata, process: child };
      nodes.push(node);
      return node;
    };
    const first = createNode('node_a', port1!);
    await until('the first node start', async () => (await nodeStates()).some((state) => state.reportedstate === 'single') ? true : undefined);
    // A test cluster need not survive an operating system crash; a killed PostgreSQL loses nothing with fsync off.
    await query(cluster.adminUrl(first), 'alter system set fsync = off');
    await query(cluster.adminUrl(first), 'select pg_reload_conf()');
    await query(cluster.adminUrl(first), "create role keel login superuser password 'keel-ha'");
    // Keel logs in with a password (SCRAM), as in production; pg_auto_failover's own roles keep trust.
    // The standby's base backup copies this file.
    const hba = join(first.pgdata, 'pg_hba.conf');
    writeFileSync(hba, `host all keel 127.0.0.1/32 scram-sha-256\n${readFileSync(hba, 'utf8')}`);
    await query(cluster.adminUrl(first), 'select pg_reload_conf()');
    createNode('node_b', port2!);
    // pg_basebackup waits for a spread checkpoint on the primary: asking for one at once ends the wait.
    await until('the standby to catch up', async () => {
      const states = await nodeStates();
      if (states.filter((state) => state.reportedstate === 'primary' || state.reportedstate === 'secondary').length === 2) return true;
      await query(cluster.adminUrl(first), 'checkpoint');
      return undefined;
    });
    const [{ names }] = await query<{ names: string }>(cluster.adminUrl(first), 'select current_setting(\'synchronous_standby_names\') as names') as [{ names: string }];
    if (!names) throw new Error('pg_auto_failover left the standby asynchronous');
    // node-postgres reads sslmode=prefer as verify-full; this cluster runs without TLS (docs/high-availability.md).
    const uri = autoctlOutput(['show', 'uri', '--pgdata', join(dir, 'monitor'), '--formation', 'default']).trim();
    cluster.keelUrl = uri.replace('postgres://', 'postgres://keel:keel-ha@').replace('sslmode=prefer', 'sslmode=disable');
    return cluster;
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}

async function query<T = Record<string, unknown>>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end().catch(() => undefined);
  }
}

function postmasterPid(pgdata: string): number | null {
  try { return Number(readFileSync(join(pgdata, 'postmaster.pid'), 'utf8').split('\n')[0]) || null; } catch { return null; }
}

async function endGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try { process.kill(-child.pid!, 'SIGINT'); } catch { return; }
  const timer = setTimeout(() => { try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ } }, 15_000);
  await exited;
  clearTimeout(timer);
}

function freePorts(count: number): Promise<number[]> {
  return Promise.all(Array.from({ length: count }, () => new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  })));
}

function tail(dir: string): string {
  return ['monitor.log', 'node_a.log', 'node_b.log'].map((file) => {
    try { return `== ${file}\n${readFileSync(join(dir, file), 'utf8').split('\n').slice(-15).join('\n')}`; } catch { return ''; }
  }).join('\n');
}
