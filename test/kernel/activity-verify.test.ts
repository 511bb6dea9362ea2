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
