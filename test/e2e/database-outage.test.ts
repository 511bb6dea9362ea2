import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../kernel/db/embedded-postgres.ts';
import { createLogger } from '../../kernel/logger.ts';
import { startServer, stopOrphanedPostgres, stopServer, type ServerProcess } from '../support/server-process.ts';

/**
 * The database goes away under a running server and comes back: health says 503 and names
 * the database while it is gone, requests answer 503 `database_unavailable` (not 500), and
 * the server recovers by itself, without a restart.
 */
const homes: string[] = [];
const servers: ServerProcess[] = [];
let external: EmbeddedDatabase | undefined;
let externalDir: string;

beforeAll(async () => { externalDir = await mkdtemp(join(tmpdir(), 'keel-outage-pg-')); });
afterAll(async () => {
  await Promise.all(servers.map((server) => stopServer(server, 'SIGKILL')));
  await external?.stop();
  for (const home of homes) {
    await stopOrphanedPostgres(home);
    await rm(home, { recursive: true, force: true });
  }
  await rm(externalDir, { recursive: true, force: true });
});

async function newHome(): Promise<string> {
  const home = await mkdtemp(join(tmpdir(), 'keel-outage-'));
  homes.push(home);
  return home;
}

async function health(url: string): Promise<{ status: number; body: Record<string, any> }> {
  const response = await fetch(`${url}/api/health`);
  return { status: response.status, body: await response.json() as Record<string, any> };
}

/** Polls health: an outage and a recovery are states of another process, with no event to await. */
async function healthUntil(url: string, status: number, timeoutMs = 30_000): Promise<Record<string, any>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const answer = await health(url);
    if (answer.status === status) return answer.body;
    if (Date.now() > until) throw new Error(`health stayed ${answer.status}: ${JSON.stringify(answer.body)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const createCompany = (url: string, name: string) => fetch(`${url}/api/companies`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name }) });

describe('a database lost under a running server', () => {
  it('answers 503 naming the database while an external PostgreSQL is down, and recovers when it is back', async () => {
    const log = createLogger('silent');
    external = await startEmbeddedPostgres(externalDir, log, { anyPort: true });
    const admin = new pg.Client({ connectionString: external.url });
    await admin.connect();
    await admin.query('create database keel');
    await admin.end();
    const server = startServer({ home: await newHome(), env: { DATABASE_URL: external.url.replace(/\/postgres$/, '/keel'), KEEL_LOG_LEVEL: 'info' } });
    servers.push(server);
    const url = await server.listening;
    const healthy = await health(url);
    expect(healthy.status).toBe(200);
    expect(healthy.body.components).toMatchObject({ database: { status: 'up' }, notifications: { status: 'up' }, jobs: { status: 'up' }, plugins: { costs: { status: 'up', worker: 'running' } } });

    await external.stop();
    const down = await healthUntil(url, 503);
    expect(down).toMatchObject({ code: 'unhealthy', status: 'unavailable', components: { database: { status: 'down', detail: 'unreachable' } } });
    expect(down.error).toMatch(/^Unhealthy: database/);
    expect(JSON.stringify(down)).not.toMatch(/127\.0\.0\.1|ECONNREFUSED|postgres:\/\//);
    // A load balancer takes the process out of rotation; a supervisor leaves it running.
    const ready = await fetch(`${url}/api/health/ready`);
    expect(ready.status).toBe(503);
    expect(ready.headers.get('retry-after')).toBe('5');
    expect(await ready.json()).toMatchObject({ code: 'not_ready', status: 'unavailable', components: { database: { status: 'down' } } });
    expect((await fetch(`${url}/api/health/live`)).status).toBe(200);
    const refused = await createCompany(url, 'During the outage');
    expect(refused.status).toBe(503);
    expect(await refused.json()).toMatchObject({ code: 'database_unavailable', error: 'The database is unavailable; retry shortly' });

    // The same cluster on the same port (remembered in its db.json) comes back.
    external = await startEmbeddedPostgres(externalDir, log);
    const recovered = await healthUntil(url, 200);
    expect(recovered.components).toMatchObject({ database: { status: 'up' }, jobs: { status: 'up' }, plugins: { costs: { status: 'up' } } });
    const created = await createCompany(url, 'After the outage');
    expect(created.status).toBe(201);
    const company = await created.json() as { id: string };
    // A plugin route reaches the database again through the worker's own pool.
    expect((await fetch(`${url}/api/companies/${company.id}/costs/summary`)).status).toBe(200);
    // The notification listener listens again (it reconnects with backoff).
    await expect.poll(async () => (await health(url)).body.components.notifications.status, { timeout: 15_000 }).toBe('up');
    expect(server.output()).toContain('database notifications resumed');
    expect(server.child.exitCode).toBeNull();
    expect(await stopServer(server)).toBe(0);
  }, 120_000);

  it('restarts an embedded PostgreSQL that died under the server', async () => {
    const home = await newHome();
    const server = startServer({ home, env: { KEEL_LOG_LEVEL: 'info' } });
    servers.push(server);
    const url = await server.listening;
    const postmaster = Number((await readFile(join(home, 'db', 'postmaster.pid'), 'utf8')).split('\n')[0]);
    process.kill(postmaster, 'SIGKILL');
    await server.printed(/embedded PostgreSQL restarted/);
    await healthUntil(url, 200);
    expect((await createCompany(url, 'After the restart')).status).toBe(201);
    const restarted = Number((await readFile(join(home, 'db', 'postmaster.pid'), 'utf8')).split('\n')[0]);
    expect(restarted).not.toBe(postmaster);
    expect(await stopServer(server)).toBe(0);
  }, 120_000);
});
