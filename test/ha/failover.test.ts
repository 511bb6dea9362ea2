import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from '../../kernel/db/connection-errors.ts';
import { newClient } from '../../kernel/db/connections.ts';
import { eventually, startServer, stopServer, type ServerProcess } from '../support/server-process.ts';
import { startAutoFailoverCluster, type AutoFailoverCluster, type ClusterNode } from './auto-failover-cluster.ts';
import { startLoad, type Load } from './write-load.ts';

/**
 * Keel on a highly available PostgreSQL (docs/high-availability.md): pg_auto_failover with a
 * primary and a synchronous standby, three Keel processes on the multi-host DATABASE_URL that
 * `pg_autoctl show uri` prints. Under cost-event and issue-create load the primary is killed:
 * the standby is promoted, every process follows it without a restart, every acknowledged
 * write is there exactly once, and no request answers 500 (503 with Retry-After meanwhile).
 * Then the killed node rejoins as the standby and the new primary is killed in turn: Keel
 * follows the primary back to the first host of its list.
 */
let cluster: AutoFailoverCluster;
const servers: ServerProcess[] = [];
const homes: string[] = [];
/** What every process on one database shares (docs/operations): the agent token secret and the vault key. */
const shared = { KEEL_AGENT_JWT_SECRET: randomBytes(32).toString('hex'), KEEL_SECRETS_MASTER_KEY: randomBytes(32).toString('hex') };

beforeAll(async () => { cluster = await startAutoFailoverCluster(); }, 180_000);
afterAll(async () => {
  await Promise.all(servers.map((server) => stopServer(server, 'SIGKILL')));
  await cluster?.stop();
  for (const home of homes) await rm(home, { recursive: true, force: true });
}, 60_000);

const hostUrl = (nodes: Array<ClusterNode | number>, attrs = 'read-write') =>
  `postgres://keel:keel-ha@${nodes.map((node) => `127.0.0.1:${typeof node === 'number' ? node : node.port}`).join(',')}/keel?target_session_attrs=${attrs}&sslmode=disable`;

async function serverPort(url: string): Promise<{ port: number; recovery: boolean }> {
  const client = newClient(url);
  await client.connect();
  try {
    const { rows } = await client.query<{ port: number; recovery: boolean }>('select inet_server_port() as port, pg_is_in_recovery() as recovery');
    return rows[0]!;
  } finally {
    await client.end();
  }
}

describe('Keel on pg_auto_failover', () => {
  it('walks the host list: a standby or a dead host first still reaches the read-write primary', async () => {
    const primary = await cluster.primary();
    const standby = cluster.nodes.find((node) => node !== primary)!;
    expect(await serverPort(hostUrl([standby, primary]))).toEqual({ port: primary.port, recovery: false });
    // A port nobody listens on (the monitor's own port plus one is not ours to guess: a closed one is found by binding).
    const dead = await closedPort();
    expect(await serverPort(hostUrl([dead, standby, primary]))).toEqual({ port: primary.port, recovery: false });
    // `any` keeps the first server that answers, as libpq does.
    expect(await serverPort(hostUrl([standby, primary], 'any'))).toEqual({ port: standby.port, recovery: true });
    // With no read-write server in the list, the connection fails as "unavailable" (a 503), naming what it found.
    const refused = await serverPort(hostUrl([dead, standby])).catch((error: Error) => error);
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toMatch(/no read-write server among .*is not read-write/);
    expect(isDatabaseUnavailable(refused)).toBe(true);
  });

  it('loses and doubles nothing when the primary is killed under load, and every process serves again without a restart', async () => {
    await startKeel();
    killed = await failoverUnderLoad('failover', 'a');
  }, 240_000);

  it('follows the primary back when the old one has rejoined as the standby and the new one dies', async () => {
    await cluster.rejoin(killed);
    await failoverUnderLoad('failover back', 'b');
  }, 240_000);
});

let urls: string[] = [];
let companyId: string;
let agentId: string;
/** The node the first failover killed. */
let killed: ClusterNode;

/** Three Keel processes on the host-list URL, a company and an agent, both plugins served by each process. */
async function startKeel(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    const home = await mkdtemp(join(tmpdir(), 'keel-ha-home-'));
    homes.push(home);
    servers.push(startServer({ home, env: { ...shared, DATABASE_URL: cluster.keelUrl, KEEL_LOG_LEVEL: 'warn' } }));
  }
  urls = await Promise.all(servers.map((server) => server.listening));
  const company = await post(urls[0]!, '/api/companies', { name: 'Failover Co', budgetMonthlyCents: 1_000_000_000 });
  expect(company.status).toBe(201);
  const agent = await post(urls[0]!, `/api/companies/${company.body.id}/agents`, { name: 'Spender', role: 'engineer', adapterType: 'process' });
  expect(agent.status).toBe(201);
  companyId = company.body.id as string;
  agentId = agent.body.id as string;
  for (const url of urls) {
    expect((await eventually(() => fetch(`${url}/api/companies/${companyId}/costs/summary`).then((r) => r.status), (s) => s === 200))).toBe(200);
    expect((await eventually(() => fetch(`${url}/api/companies/${companyId}/issues`).then((r) => r.status), (s) => s === 200))).toBe(200);
  }
}

/**
 * Writes through every process, kills the primary, and checks what the clients were told
 * against what the promoted node holds. Answers the node that was killed.
 */
async function failoverUnderLoad(label: string, prefix: string): Promise<ClusterNode> {
  const load: Load = startLoad({ urls, companyId, agentId, clientsPerServer: 2, prefix });
  await load.acknowledged(60);
  const primary = await cluster.primary();
  const killedAt = Date.now();
  cluster.kill(primary);
  const promoted = await cluster.primary({ not: primary });
  expect(promoted).not.toBe(primary);
  // Each process acknowledges writes it received after the kill: it followed the new primary by itself.
  await load.servedAfter(killedAt, 10);
  await load.stop();

  const stored = await storedWrites(cluster.adminUrl(promoted), companyId);
  const acknowledged = load.acknowledgedWrites();
  const lost = acknowledged.filter((write) => (stored.get(write.key) ?? 0) === 0);
  const doubled = [...stored.entries()].filter(([, count]) => count > 1);
  const servingAgainMs = load.firstAcknowledgedAfter(killedAt) - killedAt;
  const tally = new Map<string, number>();
  for (const answer of [...load.answersOf(503), ...load.unexpected()]) tally.set(`${answer.status} ${answer.code ?? answer.error}`, (tally.get(`${answer.status} ${answer.code ?? answer.error}`) ?? 0) + 1);
  if (tally.size > 0) console.log(`${label}: answers other than acknowledgements: ${JSON.stringify(Object.fromEntries(tally))}`);
  for (const answer of load.unexpected()) console.log(`${label}: unexpected answer: ${JSON.stringify(answer)}`);
  if (process.env.KEEL_HA_OUTPUT) servers.forEach((server, i) => writeFileSync(`${process.env.KEEL_HA_OUTPUT}-${prefix}-${i}.log`, server.output()));
  console.log(`${label}: acknowledged ${acknowledged.length}, lost ${lost.length}, doubled ${doubled.length}, serving again after ${servingAgainMs} ms`);
  expect(lost).toEqual([]);
  expect(doubled).toEqual([]);
  expect(load.answersOf(500)).toEqual([]);
  expect(load.unexpected()).toEqual([]);
  // Requests that met the outage answered 503 database_unavailable with Retry-After.
  for (const answer of load.answersOf(503)) expect(answer, JSON.stringify(answer)).toMatchObject({ code: 'database_unavailable', retryAfter: '1' });
  expect(servers.every((server) => server.child.exitCode === null)).toBe(true);
  // Nor did a plugin worker die with its connections (each logs 'plugin worker exited' when it does).
  for (const server of servers) expect(server.output()).not.toContain('plugin worker exited');

  // Durable events of the company reach their subscribers: those stored while the listeners were
  // cut off are drained when they listen again.
  const deliveries = await eventually(() => deliveryStates(cluster.adminUrl(promoted), companyId), (states) => !states.pending && !states.leased, 30_000);
  expect(deliveries).toEqual({ delivered: expect.any(Number) });

  // Every process reports its database, notifications and job engine up again (they reconnected on their own).
  for (const url of urls) {
    await expect.poll(async () => {
      const health = await (await fetch(`${url}/api/health`)).json() as { components?: Record<string, { status?: string }> };
      return ['database', 'notifications', 'jobs'].map((part) => health.components?.[part]?.status);
    }, { timeout: 30_000 }).toEqual(['up', 'up', 'up']);
  }
  return primary;
}

async function post(url: string, path: string, body: unknown) {
  const response = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: response.status, body: await response.json() as Record<string, any> };
}

/** How many rows each idempotency key left: cost events and issues (whose titles carry their key). */
async function storedWrites(adminUrl: string, companyId: string): Promise<Map<string, number>> {
  const sql = new pg.Client({ connectionString: adminUrl });
  await sql.connect();
  try {
    const costs = await sql.query<{ key: string; n: string }>('select idempotency_key as key, count(*) as n from plugin_costs.cost_events where company_id = $1 group by 1', [companyId]);
    const issues = await sql.query<{ key: string; n: string }>('select title as key, count(*) as n from plugin_work.issues where company_id = $1 group by 1', [companyId]);
    const numbers = await sql.query<{ n: string; distinct: string }>('select count(*) as n, count(distinct issue_number) as distinct from plugin_work.issues where company_id = $1', [companyId]);
    expect(numbers.rows[0]!.n).toBe(numbers.rows[0]!.distinct);
    return new Map([...costs.rows, ...issues.rows].map((row) => [row.key, Number(row.n)]));
  } finally {
    await sql.end();
  }
}

async function deliveryStates(adminUrl: string, companyId: string): Promise<Record<string, number>> {
  const sql = new pg.Client({ connectionString: adminUrl });
  await sql.connect();
  try {
    const { rows } = await sql.query<{ state: string; n: string }>(
      'select d.state, count(*) as n from keel_events.deliveries d join keel_events.outbox o on o.id = d.event_id where o.company_id = $1 group by d.state', [companyId]);
    return Object.fromEntries(rows.map((row) => [row.state, Number(row.n)]));
  } finally {
    await sql.end();
  }
}

async function closedPort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
