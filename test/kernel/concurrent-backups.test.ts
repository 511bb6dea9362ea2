import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BACKUP_LOCK_KEY } from '../../kernel/backup/backup-lock.ts';
import { createCompany } from '../support/fixtures.ts';
import { startPeerKernel, startTestKernel, type ApiResponse, type PeerKernel, type TestKernel } from '../support/harness.ts';
import { runTool } from './backup-helpers.ts';

/**
 * Backups asked for at once, by several requests to two processes sharing the database and
 * the backup directory: one runs at a time cluster-wide; the others are refused with 409
 * database_backup_in_progress. No answer is a 500, no two backups share a name, and what is
 * answered lists and restores.
 */
let t: TestKernel;
let peer: PeerKernel;
let backupDir: string;
const restoreDatabases: string[] = [];
const admin = () => new pg.Client({ connectionString: inject('adminDatabaseUrl') });

beforeAll(async () => {
  backupDir = await mkdtemp(join(tmpdir(), 'keel-concurrent-backups-'));
  t = await startTestKernel({ backups: { directory: backupDir } });
  peer = await startPeerKernel(t, { backups: { directory: backupDir } });
  await createCompany(t.api, { name: 'Backed Up Co' });
});
afterAll(async () => {
  await peer?.stop();
  await t?.stop();
  await rm(backupDir, { recursive: true, force: true });
  const client = admin();
  await client.connect();
  for (const name of restoreDatabases) await client.query(`drop database if exists ${name} with (force)`).catch(() => undefined);
  await client.end();
});

const count = async (sql: string) => (await t.sql.query<{ n: number }>(sql)).rows[0]!.n;
const backupRows = () => count('select count(*)::int as n from database_backups');
const backupActivity = () => count(`select count(*)::int as n from activity_log where action = 'instance.database_backup_created'`);

describe('concurrent database backups', () => {
  it('8 at once over two processes: 201 or 409, never 500; distinct names; the newest lists and restores', async () => {
    const rowsBefore = await backupRows();
    const answers: ApiResponse[] = await Promise.all(Array.from({ length: 8 }, (_, i) =>
      (i % 2 === 0 ? t.api : peer.api).post('/api/instance/database-backups')));
    const statuses = answers.map((res) => res.status);
    expect(statuses.filter((status) => status !== 201 && status !== 409), JSON.stringify(answers.map((res) => res.text))).toEqual([]);
    const taken = answers.filter((res) => res.status === 201).map((res) => res.body);
    const refused = answers.filter((res) => res.status === 409);
    expect(taken.length).toBeGreaterThanOrEqual(1);
    for (const res of refused) {
      expect(res.body).toMatchObject({ code: 'database_backup_in_progress', error: expect.stringContaining('already running') });
    }
    // Each backup taken is its own file and its own record; a refusal recorded nothing.
    const names = taken.map((body) => basename(body.file));
    expect(new Set(names).size).toBe(names.length);
    expect(await backupRows()).toBe(rowsBefore + taken.length);
    // Only finished backups in the directory: no partial file left behind.
    expect((await readdir(backupDir)).filter((name) => name.endsWith('.partial'))).toEqual([]);

    // Retention keeps the newest of the day: the newest taken is listed by both processes; an
    // older one taken in this burst is listed too, or was pruned by a later one of it.
    const newest = taken.reduce((a, b) => (a.startedAt >= b.startedAt ? a : b));
    for (const api of [t.api, peer.api]) {
      const listed = await api.get('/api/instance/database-backups');
      expect(listed.status, listed.text).toBe(200);
      expect(listed.body[0]).toEqual({ file: basename(newest.file), sizeBytes: newest.sizeBytes, takenAt: newest.startedAt });
    }
    const prunedLater = (body: { startedAt: string }) => taken.some((other) => other.startedAt > body.startedAt && other.prunedCount > 0);
    for (const body of taken) expect(existsSync(body.file) || prunedLater(body), basename(body.file)).toBe(true);

    const name = `t_restore_${randomBytes(5).toString('hex')}`;
    restoreDatabases.push(name);
    const client = admin();
    await client.connect();
    await client.query(`create database ${name}`);
    await client.end();
    const restoredUrl = t.databaseUrl.replace(/\/[^/]*$/, `/${name}`);
    const run = await runTool('db-restore', [newest.file, '--data-dir', t.dataDir], { DATABASE_URL: restoredUrl });
    expect(run.code, run.stderr).toBe(0);
    const check = new pg.Client({ connectionString: restoredUrl });
    await check.connect();
    try {
      expect((await check.query('select name from companies order by name')).rows).toEqual((await t.sql.query('select name from companies order by name')).rows);
    } finally {
      await check.end();
    }
  }, 180_000);

  it('a backup running elsewhere (the lock held by another session) refuses at once and writes nothing', async () => {
    const holder = new pg.Client({ connectionString: t.databaseUrl });
    await holder.connect();
    try {
      expect((await holder.query('select pg_try_advisory_lock($1) as locked', [BACKUP_LOCK_KEY])).rows[0].locked).toBe(true);
      const [rows, activity, files] = [await backupRows(), await backupActivity(), (await readdir(backupDir)).sort()];
      for (const api of [t.api, peer.api]) {
        const refused = await api.post('/api/instance/database-backups');
        expect(refused.status, refused.text).toBe(409);
        expect(refused.body.code).toBe('database_backup_in_progress');
      }
      expect(await backupRows()).toBe(rows);
      expect(await backupActivity()).toBe(activity);
      expect((await readdir(backupDir)).sort()).toEqual(files);
    } finally {
      await holder.end();
    }
    // The lock goes with the session that held it (as when a process dies mid-backup).
    const after = await t.api.post('/api/instance/database-backups');
    expect(after.status, after.text).toBe(201);
  });
});
