import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eventually, processesMatching, startServer, stopOrphanedPostgres, type ServerProcess } from '../support/server-process.ts';

/**
 * One stop, however it is signalled, stops everything the server started. A service manager or
 * a container runtime signals the whole process group (and `npm start` forwards the signal to
 * Keel once more); a terminal that closes sends SIGHUP; an operator repeats a signal; SIGKILL
 * leaves the embedded PostgreSQL to its watchdog. After each: no PostgreSQL of the data
 * directory, no watchdog, no postmaster.pid, no lock, and the exit code says it went well.
 */
let home: string;
const running: ServerProcess[] = [];
beforeAll(async () => { home = await mkdtemp(join(tmpdir(), 'keel-e2e-signals-')); });
afterEach(async () => {
  for (const server of running.splice(0)) {
    if (server.child.exitCode === null && server.child.signalCode === null) {
      try { process.kill(-server.child.pid!, 'SIGKILL'); } catch { /* gone */ }
      await server.exited;
    }
  }
});
afterAll(async () => {
  await stopOrphanedPostgres(home);
  await rm(home, { recursive: true, force: true });
});

const cluster = () => join(home, 'db');

function start(options: { npm?: boolean } = {}): ServerProcess {
  const server = startServer({ home, detached: true, npm: options.npm, env: { KEEL_LOG_LEVEL: 'info' } });
  running.push(server);
  return server;
}

/** The Keel process's pid, from the data directory's lock (under npm it is not the child's). */
async function keelPid(): Promise<number> {
  return (JSON.parse(await readFile(join(home, 'keel.lock'), 'utf8')) as { pid: number }).pid;
}

async function expectEverythingStopped(): Promise<void> {
  expect(await processesMatching(`-D ${cluster()}`)).toEqual([]);
  expect(await processesMatching(`keel-postgres-watchdog ${cluster()}`)).toEqual([]);
  expect(existsSync(join(cluster(), 'postmaster.pid'))).toBe(false);
  expect(existsSync(join(home, 'keel.lock'))).toBe(false);
}

const stoppedInOrder = (server: ServerProcess) =>
  server.logLines().filter((line) => typeof line.msg === 'string' && line.msg.startsWith('stopped ')).map((line) => line.part as string);

describe('stopping on signals', () => {
  it('stops everything on SIGTERM to the process group of `npm start` (npm forwards it once more), exit 0', async () => {
    const server = start({ npm: true });
    await server.listening;
    const pid = await keelPid();
    expect(pid).not.toBe(server.child.pid);
    // The embedded PostgreSQL and its watchdog run outside the group the signal reaches.
    expect(await processesMatching(`-D ${cluster()}`)).toHaveLength(1);
    expect(await processesMatching(`keel-postgres-watchdog ${cluster()}`)).not.toEqual([]);
    process.kill(-server.child.pid!, 'SIGTERM');
    expect(await server.exited).toBe(0);
    expect(server.output()).toContain('Received SIGTERM, stopping');
    expect(server.output()).toContain('Keel stopped');
    const order = stoppedInOrder(server);
    expect(order.indexOf('plugin workers')).toBeLessThan(order.indexOf('PostgreSQL'));
    expect(order.at(-1)).toBe('data directory lock');
    expect(() => process.kill(pid, 0)).toThrow();
    await expectEverythingStopped();
  }, 120_000);

  it('hurries but never skips the stop on a second SIGTERM, exit 0', async () => {
    const server = start();
    await server.listening;
    process.kill(-server.child.pid!, 'SIGTERM');
    await server.printed(/Received SIGTERM, stopping/);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    expect(server.output()).toContain('Received SIGTERM again');
    expect(server.output()).not.toContain('exiting without waiting');
    expect(stoppedInOrder(server)).toContain('PostgreSQL');
    await expectEverythingStopped();
  }, 120_000);

  it('stops everything on SIGHUP to the process group (a terminal that closed), exit 0', async () => {
    const server = start();
    await server.listening;
    process.kill(-server.child.pid!, 'SIGHUP');
    expect(await server.exited).toBe(0);
    expect(server.output()).toContain('Received SIGHUP, stopping');
    await expectEverythingStopped();
  }, 120_000);

  it('leaves no PostgreSQL running when Keel is killed outright: its watchdog stops it', async () => {
    const server = start();
    await server.listening;
    expect(await processesMatching(`-D ${cluster()}`)).toHaveLength(1);
    server.child.kill('SIGKILL');
    expect(await server.exited).toBe('SIGKILL');
    // Another process stops it, with no event this test could await: poll until it is gone.
    expect(await eventually(() => processesMatching(`-D ${cluster()}`), (pids) => pids.length === 0, 30_000)).toEqual([]);
    expect(await eventually(() => processesMatching(`keel-postgres-watchdog ${cluster()}`), (pids) => pids.length === 0)).toEqual([]);
    expect(existsSync(join(cluster(), 'postmaster.pid'))).toBe(false);
    // The lock of the killed server is still there; the next start takes it over.
    const next = start();
    await next.listening;
    process.kill(-next.child.pid!, 'SIGTERM');
    expect(await next.exited).toBe(0);
    await expectEverythingStopped();
  }, 120_000);
});
