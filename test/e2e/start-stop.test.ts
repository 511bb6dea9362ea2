import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { processesMatching, startServer, stopOrphanedPostgres, stopServer, type ServerProcess } from '../support/server-process.ts';

/**
 * The server as operators run it: `kernel/main.ts` in its own process on an embedded
 * PostgreSQL in a data directory, started twice, on a busy port, and stopped with signals.
 */
let home: string;
const running: ServerProcess[] = [];
beforeAll(async () => { home = await mkdtemp(join(tmpdir(), 'keel-e2e-')); });
afterEach(async () => { await Promise.all(running.splice(0).map((server) => stopServer(server, 'SIGKILL'))); });
afterAll(async () => {
  // A server killed above leaves its PostgreSQL behind: stop it before the folder goes.
  await stopOrphanedPostgres(home);
  await rm(home, { recursive: true, force: true });
});

function start(args: string[] = ['--port', '0'], env: Record<string, string> = {}, dataDir = home): ServerProcess {
  const server = startServer({ home: dataDir, args, env });
  running.push(server);
  return server;
}

const errorLines = (server: ServerProcess) => server.logLines().filter((line) => Number(line.level) >= 50);

describe('starting and stopping the server', () => {
  it('prints where it listens and where the data lives, stops cleanly on SIGINT and reuses the data', async () => {
    const first = start();
    const url = await first.listening;
    expect(first.output()).toMatch(/Keel is listening on http:\/\/127\.0\.0\.1:\d+ \(mode local_trusted, private exposure\)/);
    expect(first.output()).toContain(`Data directory: ${home}; database: embedded PostgreSQL in ${join(home, 'db')}`);
    expect((await fetch(`${url}/api/health`)).status).toBe(200);
    const created = await (await fetch(`${url}/api/companies`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Persistent Co' }) })).json() as { id: string };
    expect(await stopServer(first)).toBe(0);
    // PostgreSQL stopped with the server, and the data directory is free again.
    expect(existsSync(join(home, 'db', 'postmaster.pid'))).toBe(false);
    expect(existsSync(join(home, 'keel.lock'))).toBe(false);

    const second = start();
    const again = await second.listening;
    const company = await fetch(`${again}/api/companies/${created.id}`);
    expect(company.status).toBe(200);
    expect(((await company.json()) as { name: string }).name).toBe('Persistent Co');
    expect(await stopServer(second)).toBe(0);
  }, 120_000);

  it('refuses a configuration that exposes local_trusted publicly, naming the field', async () => {
    const bad = start(['--mode', 'local_trusted', '--exposure', 'public']);
    await expect(bad.listening).rejects.toThrow(/Invalid configuration: server\.exposure must be "private" when deploymentMode is "local_trusted"/);
    expect(bad.child.exitCode).not.toBe(0);
  });

  it('refuses a second server on a data directory in use, naming the running one, and leaves the first serving', async () => {
    const first = start();
    const url = await first.listening;
    const second = start();
    await expect(second.listening).rejects.toThrow(/exited with 1/);
    expect(second.output()).toContain(`Keel could not start: Data directory ${home} is in use by Keel process ${first.child.pid} (listening on ${url}`);
    // The first server's PostgreSQL was not touched: it still answers, health included.
    const health = await fetch(`${url}/api/health`);
    expect(health.status).toBe(200);
    expect((await fetch(`${url}/api/companies`)).status).toBe(200);
    expect(await stopServer(first)).toBe(0);
  }, 120_000);

  it('takes over the lock of a server that died, then stops the PostgreSQL it left running', async () => {
    const crashed = start();
    await crashed.listening;
    const lock = JSON.parse(await readFile(join(home, 'keel.lock'), 'utf8')) as { pid: number };
    expect(lock.pid).toBe(crashed.child.pid);
    // Its watchdog killed first (else it stops PostgreSQL itself: stop-signals.test.ts), then the server.
    for (const pid of await processesMatching(`keel-postgres-watchdog ${join(home, 'db')}`)) process.kill(pid, 'SIGKILL');
    await stopServer(crashed, 'SIGKILL');
    // The orphaned PostgreSQL is still running, and the lock file is still there.
    expect(await processesMatching(`-D ${join(home, 'db')}`)).not.toHaveLength(0);
    expect(existsSync(join(home, 'keel.lock'))).toBe(true);

    const next = start();
    const url = await next.listening;
    expect(next.output()).toContain('stopping an orphaned embedded PostgreSQL server');
    expect((await fetch(`${url}/api/health`)).status).toBe(200);
    expect(await stopServer(next)).toBe(0);
    expect(await processesMatching(`-D ${join(home, 'db')}`)).toHaveLength(0);
  }, 120_000);

  it('treats a lock naming a live process that started at another time (a reused pid) as stale', async () => {
    // Our own pid is alive, but it did not start at time 1: the lock is not ours.
    await writeFile(join(home, 'keel.lock'), JSON.stringify({ pid: process.pid, startTime: 1, startedAt: '2020-01-01T00:00:00.000Z', url: null }));
    const server = start();
    await server.listening;
    expect(await stopServer(server)).toBe(0);
  }, 120_000);

  it('fails at once on a port in use, names it, exits non-zero and leaves nothing running', async () => {
    const busyHome = await mkdtemp(join(tmpdir(), 'keel-e2e-busy-'));
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', () => resolve()));
    const port = (blocker.address() as { port: number }).port;
    try {
      const server = start(['--port', String(port)], {}, busyHome);
      expect(await server.exited).toBe(1);
      expect(server.output()).toContain(`Keel could not start: port ${port} is in use on 127.0.0.1`);
      // The port is taken before anything else starts: no PostgreSQL, no lock left behind.
      expect(existsSync(join(busyHome, 'db', 'PG_VERSION'))).toBe(false);
      expect(existsSync(join(busyHome, 'keel.lock'))).toBe(false);
      expect(await processesMatching(`-D ${join(busyHome, 'db')}`)).toHaveLength(0);
    } finally {
      blocker.close();
      await rm(busyHome, { recursive: true, force: true });
    }
  }, 60_000);

  it('stops on SIGTERM under load in order: HTTP drains, then jobs, plugin workers and PostgreSQL, with no error lines and no worker restarted', async () => {
    const server = start(['--port', '0'], { KEEL_LOG_LEVEL: 'info' });
    const url = await server.listening;
    const plugin = await (await fetch(`${url}/api/plugins/costs/health`)).json() as { worker: { pid: number } };
    const workerPid = plugin.worker.pid;
    expect(workerPid).toBeGreaterThan(0);

    const statuses: number[] = [];
    let warmedUp!: () => void;
    const warm = new Promise<void>((resolve) => { warmedUp = resolve; });
    let sent = 0;
    let stop = false;
    const client = async () => {
      while (!stop && sent < 2_000) {
        sent++;
        try {
          const response = await fetch(`${url}/api/companies`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: `Load ${sent}` }) });
          statuses.push(response.status);
          if (statuses.length === 40) warmedUp();
          await response.arrayBuffer();
        } catch {
          // Refused or closed once the server stopped accepting: never a wrong answer.
          stop = true;
        }
      }
    };
    const clients = Array.from({ length: 8 }, client);
    await warm;
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    stop = true;
    await Promise.all(clients);

    expect(statuses.filter((status) => status >= 500)).toEqual([]);
    expect(errorLines(server)).toEqual([]);
    expect(server.output()).not.toContain('restarting');
    const order = server.logLines().filter((line) => typeof line.msg === 'string' && line.msg.startsWith('stopped ')).map((line) => line.part);
    expect(order.indexOf('HTTP server')).toBe(0);
    expect(order.indexOf('job engine')).toBeLessThan(order.indexOf('plugin workers'));
    expect(order.indexOf('plugin workers')).toBeLessThan(order.indexOf('PostgreSQL'));
    expect(order.at(-1)).toBe('data directory lock');
    expect(() => process.kill(workerPid, 0)).toThrow();
    expect(await processesMatching(`-D ${join(home, 'db')}`)).toHaveLength(0);
  }, 120_000);
});
