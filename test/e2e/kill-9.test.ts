import { spawn } from 'node:child_process';
import { readFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processesMatching, startServer, stopOrphanedPostgres, stopServer, type ServerProcess } from '../support/server-process.ts';

/**
 * A SIGKILL of the kernel under cost-event load, then a restart on the same data directory:
 * every event that was acknowledged is still there, none is stored twice (idempotency keys
 * survive, and clients retrying the requests that got no answer store each at most once),
 * the totals agree with the stored events, and the activity hash chains are intact.
 */
let home: string;
let server: ServerProcess | undefined;
beforeAll(async () => { home = await mkdtemp(join(tmpdir(), 'keel-kill9-')); });
afterAll(async () => {
  if (server) await stopServer(server, 'SIGKILL');
  await stopOrphanedPostgres(home);
  await rm(home, { recursive: true, force: true });
});

const json = { 'content-type': 'application/json' };

interface Sent { key: string; costCents: number }

async function post(url: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url + path, { method: 'POST', headers: { ...json, ...headers }, body: JSON.stringify(body) });
  return { status: response.status, headers: response.headers, body: await response.json() as Record<string, any> };
}

describe('kill -9 under cost-event load', () => {
  it('keeps every acknowledged event exactly once, exact totals and an intact activity chain after a restart', async () => {
    server = startServer({ home });
    let url = await server.listening;
    const company = await post(url, '/api/companies', { name: 'Kill Nine Co', budgetMonthlyCents: 1_000_000_000 });
    expect(company.status).toBe(201);
    const agent = await post(url, `/api/companies/${company.body.id}/agents`, { name: 'Spender', role: 'engineer', adapterType: 'process' });
    expect(agent.status).toBe(201);
    const companyId = company.body.id as string;
    const occurredAt = new Date().toISOString();
    const eventBody = (costCents: number) => ({ agentId: agent.body.id, provider: 'openai', model: 'gpt', costCents, occurredAt });

    // Eight clients post events with idempotency keys; the kernel is killed once 300 are acknowledged.
    const acknowledged = new Map<string, { costCents: number; id: string }>();
    const unanswered: Sent[] = [];
    let next = 0;
    let killed = false;
    let reached!: () => void;
    const enough = new Promise<void>((resolve) => { reached = resolve; });
    const client = async () => {
      while (!killed) {
        const sent = { key: `event-${next++}`, costCents: 1 + (next % 97) };
        try {
          const answer = await post(url, `/api/companies/${companyId}/cost-events`, eventBody(sent.costCents), { 'idempotency-key': sent.key });
          expect(answer.status).toBe(201);
          acknowledged.set(sent.key, { costCents: sent.costCents, id: answer.body.id });
          if (acknowledged.size >= 300) reached();
        } catch (error) {
          if ((error as Error).name === 'AssertionError') throw error;
          unanswered.push(sent);
        }
      }
    };
    const clients = Array.from({ length: 8 }, client);
    await enough;
    killed = true;
    await stopServer(server, 'SIGKILL');
    await Promise.all(clients);
    expect(acknowledged.size).toBeGreaterThanOrEqual(300);

    server = startServer({ home });
    url = await server.listening;

    // Retries of acknowledged events replay the stored event; retries of unanswered ones store each once at most.
    for (const [key, stored] of acknowledged) {
      const retry = await post(url, `/api/companies/${companyId}/cost-events`, eventBody(stored.costCents), { 'idempotency-key': key });
      expect(retry.status).toBe(201);
      expect(retry.headers.get('x-idempotent-replayed')).toBe('true');
      expect(retry.body.id).toBe(stored.id);
    }
    for (const sent of unanswered) {
      const retry = await post(url, `/api/companies/${companyId}/cost-events`, eventBody(sent.costCents), { 'idempotency-key': sent.key });
      expect(retry.status).toBe(201);
    }

    const credentials = JSON.parse(await readFile(join(home, 'db.json'), 'utf8')) as { password: string; port: number };
    const sql = new pg.Client({ connectionString: `postgres://keel:${encodeURIComponent(credentials.password)}@127.0.0.1:${credentials.port}/keel` });
    await sql.connect();
    try {
      const rows = (await sql.query<{ idempotency_key: string; n: string; cost: string }>(
        'select idempotency_key, count(*) as n, sum(cost_cents) as cost from plugin_costs.cost_events where company_id = $1 group by idempotency_key', [companyId])).rows;
      const stored = new Map(rows.map((row) => [row.idempotency_key, row]));
      for (const key of acknowledged.keys()) expect(stored.get(key)?.n, key).toBe('1');
      expect(rows.filter((row) => row.n !== '1')).toEqual([]);
      expect(rows).toHaveLength(acknowledged.size + unanswered.length);
      const storedSum = rows.reduce((sum, row) => sum + Number(row.cost), 0);

      // The running totals and the company's month-to-date spend agree with the stored events.
      const summary = await (await fetch(`${url}/api/companies/${companyId}/costs/summary`)).json() as { spendCents: number };
      expect(summary.spendCents).toBe(storedSum);
      const after = await (await fetch(`${url}/api/companies/${companyId}`)).json() as { spentMonthlyCents: number };
      expect(after.spentMonthlyCents).toBe(storedSum);
    } finally {
      await sql.end();
    }

    // The activity log's hash chains verify (the command connects to the running server's database).
    const verify = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = spawn(process.execPath, ['--no-node-snapshot', 'kernel/tools/activity-verify.ts', '--data-dir', home], { env: { ...process.env, DATABASE_URL: undefined }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
      child.stderr.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
      child.once('exit', (code) => resolve({ code, stdout }));
    });
    expect(verify.stdout).toMatch(/^OK: \d+ entries in \d+ chains/);
    expect(verify.code).toBe(0);
    expect(await stopServer(server)).toBe(0);
    server = undefined;
  }, 180_000);
});
