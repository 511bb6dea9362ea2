import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyActivityChains } from '../../kernel/activity/verify-chain.ts';
import { Database } from '../../kernel/db/database.ts';
import { startEmbeddedPostgres } from '../../kernel/db/embedded-postgres.ts';
import { DataDirLock } from '../../kernel/config/data-dir-lock.ts';
import { createLogger } from '../../kernel/logger.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { waitFor } from '../support/wait-for.ts';

let t: TestKernel;
let companyId: string;
let otherCompanyId: string;
beforeAll(async () => {
  t = await startTestKernel();
  companyId = await createCompany('Audited');
  otherCompanyId = await createCompany('Untouched');
  for (let i = 0; i < 5; i++) await post(companyId, i);
  for (let i = 0; i < 3; i++) await post(otherCompanyId, i);
  await t.api.patch('/api/instance/settings/general', { instanceName: 'Verify me' });
});
afterAll(async () => { await t?.stop(); });

async function createCompany(name: string): Promise<string> {
  return (await t.sql.query('insert into companies (name, issue_prefix) values ($1, $2) returning id',
    [name, `V${randomUUID().replace(/-/g, '').slice(0, 8)}`])).rows[0].id;
}

async function post(company: string, i: number): Promise<string> {
  const res = await t.api.post(`/api/companies/${company}/activity`,
    { actorId: 'auditor', action: 'audit.step', entityType: 'step', entityId: String(i), details: { step: i } });
  expect(res.status).toBe(201);
  return res.body.id;
}

interface CommandResult { code: number | null; stdout: string; stderr: string }

function runVerify(args: string[], env: Record<string, string | undefined>): Promise<CommandResult> {
  const childEnv = { ...process.env, ...env };
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete childEnv[key];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--no-node-snapshot', 'kernel/tools/activity-verify.ts', ...args], { env: childEnv, cwd: process.cwd() });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => { stdout += chunk; });
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout: stdout.trim(), stderr: stderr.trim() }));
  });
}

describe('the database keeps activity_log append-only', () => {
  it('refuses UPDATE, DELETE and TRUNCATE', async () => {
    const before = (await t.sql.query('select id, hash, details from activity_log order by id')).rows;
    await expect(t.sql.query(`update activity_log set details = '{"step": 99}' where company_id = $1`, [companyId])).rejects.toThrow(/append-only: UPDATE refused/);
    await expect(t.sql.query('delete from activity_log where company_id = $1', [companyId])).rejects.toThrow(/append-only: DELETE refused/);
    await expect(t.sql.query('truncate activity_log')).rejects.toThrow(/append-only: TRUNCATE refused/);
    expect((await t.sql.query('select id, hash, details from activity_log order by id')).rows).toEqual(before);
  });
});

describe('npm run activity:verify', () => {
  it('reports an intact log as OK', async () => {
    const report = await verifyActivityChains(t.kernel.services.db);
    expect(report.firstBreak).toBeNull();
    expect(report.chains).toBe(3);
    const result = await runVerify([], { DATABASE_URL: t.databaseUrl });
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe(`OK: ${report.entries} entries in 3 chains`);
    expect(result.code).toBe(0);
    const one = await runVerify(['--company', otherCompanyId], { DATABASE_URL: t.databaseUrl });
    expect(one.stdout).toBe('OK: 3 entries in 1 chains');
  });

  it('reports a tampered entry as the first break, from the library and from the command', async () => {
    const target = (await t.sql.query('select id, seq from activity_log where company_id = $1 and seq = 3', [companyId])).rows[0];
    await t.sql.query('alter table activity_log disable trigger activity_log_no_update');
    try {
      await t.sql.query(`update activity_log set details = '{"step": 999}' where id = $1`, [target.id]);
    } finally {
      await t.sql.query('alter table activity_log enable trigger activity_log_no_update');
    }
    const report = await verifyActivityChains(t.kernel.services.db);
    expect(report.firstBreak).toEqual({ chain: companyId, seq: 3, entryId: target.id, reason: 'hash_mismatch' });

    const result = await runVerify([], { DATABASE_URL: t.databaseUrl });
    expect(result.stdout).toBe(`BROKEN: chain ${companyId} at seq 3 (entry ${target.id}): hash_mismatch`);
    expect(result.code).toBe(1);
    // The other company's chain is still intact on its own.
    const other = await runVerify(['--company', otherCompanyId], { DATABASE_URL: t.databaseUrl });
    expect(other.stdout).toBe('OK: 3 entries in 1 chains');
    expect(other.code).toBe(0);
  });

  it('exits 2 with a message on bad usage', async () => {
    const badCompany = await runVerify(['--company', 'acme'], { DATABASE_URL: t.databaseUrl });
    expect(badCompany.code).toBe(2);
    expect(badCompany.stderr).toBe('--company must be a company id (uuid), got "acme"');
    const unknownFlag = await runVerify(['--frobnicate'], { DATABASE_URL: t.databaseUrl });
    expect(unknownFlag.code).toBe(2);
    const dir = await mkdtemp(join(tmpdir(), 'keel-verify-empty-'));
    try {
      const noDb = await runVerify(['--data-dir', dir], { DATABASE_URL: undefined });
      expect(noDb.code).toBe(2);
      expect(noDb.stderr).toBe(`No embedded database in ${dir} (db.json is missing); set DATABASE_URL or pass --data-dir`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('uses the embedded database of a data directory, running or not', { timeout: 180_000 }, async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'keel-verify-embedded-'));
    const log = createLogger('silent');
    // As a running Keel server does: hold the data directory's lock while its PostgreSQL runs.
    const lock = await DataDirLock.acquire(dataDir);
    let server = await startEmbeddedPostgres(dataDir, log);
    try {
      const admin = new pg.Client({ connectionString: server.url });
      await admin.connect();
      await admin.query('create database keel');
      await admin.end();
      const db = await Database.connect(server.url.replace(/\/postgres$/, '/keel'), { poolSize: 2 });
      await db.migrate();
      await db.transaction(async (tx) => {
        await t.kernel.services.activity.record(tx, { companyId: null, actorType: 'system', actorId: 'test', action: 'x', entityType: 'y', entityId: 'z' });
      });
      await db.close();

      // Server running: the command connects with the credentials in db.json and leaves it running.
      const running = await runVerify(['--data-dir', dataDir], { DATABASE_URL: undefined });
      expect(running.stderr).toBe('');
      expect(running.stdout).toBe('OK: 1 entries in 1 chains');
      const probe = new pg.Client({ connectionString: server.url });
      await probe.connect();
      await probe.end();

      // Server stopped: the command starts it for the check and stops it again.
      await server.stop();
      await lock.release();
      const stopped = await runVerify(['--data-dir', dataDir], { DATABASE_URL: undefined });
      expect(stopped.stdout).toBe('OK: 1 entries in 1 chains');
      expect(stopped.code).toBe(0);
      expect(existsSync(join(dataDir, 'db', 'postmaster.pid'))).toBe(false);
    } finally {
      await server.stop();
      await lock.release();
      server = undefined as never;
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('the one writer, keel_private.append_activities', () => {
  const entry = (company: string | null, i: number) => ({ companyId: company, actorType: 'system', actorId: 'writer-test', action: 'writer.step', entityType: 'step', entityId: String(i), details: { i } });
  const append = (client: pg.Pool | pg.PoolClient, entries: unknown[]) => client.query('select id, company_id, seq from keel_private.append_activities($1::jsonb)', [JSON.stringify(entries)]);
  const head = async (chain: string) => (await t.sql.query('select last_seq::int as seq, last_hash as hash from activity_chain_heads where chain_key = $1', [chain])).rows[0];

  it('chains the entries of one statement over several companies, each continuing its own chain in the order given', async () => {
    const first = await createCompany('Chained first');
    const second = await createCompany('Chained second');
    await append(t.sql, [entry(first, 0)]);
    const instanceBefore = (await head('instance'))?.seq ?? 0;
    const { rows } = await append(t.sql, [entry(second, 1), entry(first, 2), entry(null, 3), entry(second, 4), entry(first, 5)]);
    expect(rows.map((row: any) => [row.company_id, Number(row.seq)])).toEqual([[second, 1], [first, 2], [null, instanceBefore + 1], [second, 2], [first, 3]]);
    for (const company of [first, second]) expect((await verifyActivityChains(t.kernel.services.db, company)).firstBreak).toBeNull();
    const last = (await t.sql.query("select hash from activity_log where company_id = $1 order by seq desc limit 1", [first])).rows[0].hash;
    expect(await head(first)).toEqual({ seq: 3, hash: last });
  });

  it('takes the chains of one statement in key order, so that it never waits in a circle with another writer', async () => {
    const [low, high] = [await createCompany('Crossed'), await createCompany('Crossed')].sort();
    const holder = await t.sql.connect();
    const crossing = await t.sql.connect();
    try {
      // The holder appends to the lower chain and keeps it until it commits.
      await holder.query('begin');
      await append(holder, [entry(low!, 1)]);
      // The crossing statement names the higher chain first: it waits for the lower one
      // before taking any, rather than holding the higher one while it waits.
      const pid = async (client: pg.PoolClient) => (await client.query('select pg_backend_pid() as pid')).rows[0].pid;
      const [holderPid, crossingPid] = [await pid(holder), await pid(crossing)];
      const crossed = append(crossing, [entry(high!, 2), entry(low!, 3)]);
      await waitFor(async () => (await t.sql.query('select $1 = any(pg_blocking_pids($2)) as waits', [holderPid, crossingPid])).rows[0].waits,
        'the crossing statement to wait for the holder');
      // So the holder can still append to the higher chain (entry order would deadlock here).
      await holder.query('set local lock_timeout = 5000');
      await append(holder, [entry(high!, 4)]);
      await holder.query('commit');
      await crossed;
    } finally {
      await holder.query('rollback').catch(() => undefined);
      holder.release();
      crossing.release();
    }
    for (const [company, entries] of [[low!, 2], [high!, 2]] as const) {
      const report = await verifyActivityChains(t.kernel.services.db, company);
      expect([report.firstBreak, report.entries]).toEqual([null, entries]);
    }
    const order = (await t.sql.query("select entity_id from activity_log where company_id = any($1::uuid[]) and action = 'writer.step' order by company_id, seq", [[low, high]])).rows.map((row: any) => row.entity_id);
    expect(order).toEqual(['1', '3', '4', '2']);
  });

  it('is the only way in: an insert into activity_log past it is refused and adds nothing', async () => {
    const before = (await t.sql.query('select count(*)::int as n from activity_log')).rows[0].n;
    await expect(t.sql.query(`insert into activity_log (company_id, actor_type, actor_id, action, entity_type, entity_id, seq, prev_hash, hash)
      values ($1, 'system', 'forger', 'forged.entry', 'step', 'x', 999, '', '')`, [companyId])).rejects.toThrow(/appended to only through keel_private.append_activities/);
    expect((await t.sql.query('select count(*)::int as n from activity_log')).rows[0].n).toBe(before);
    // Every function that writes the log does so through the writer.
    const writers = (await t.sql.query("select p.oid::regprocedure::text as name from pg_proc p where p.prosrc ilike '%insert into activity_log%'")).rows.map((row: any) => row.name);
    expect(writers).toEqual(['keel_private.append_activities(jsonb)']);
  });
});
