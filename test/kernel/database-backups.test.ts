import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backupFileName, backupsToKeep } from '../../kernel/backup/retention.ts';
import { createAgent, createAgentKey, createCompany } from '../support/fixtures.ts';
import { startPeerKernel, startTestKernel, type PeerKernel, type TestKernel } from '../support/harness.ts';

let local: TestKernel;
let authed: TestKernel;
let backupDir: string;
beforeAll(async () => {
  backupDir = await mkdtemp(join(tmpdir(), 'keel-backups-'));
  [local, authed] = await Promise.all([startTestKernel({ backups: { directory: backupDir } }), startTestKernel({ deploymentMode: 'authenticated' })]);
});
afterAll(async () => {
  await Promise.all([local?.stop(), authed?.stop()]);
  await rm(backupDir, { recursive: true, force: true });
});

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const DAY = 86_400_000;

async function signUp(k: TestKernel, email: string): Promise<{ userId: string; cookie: string }> {
  const res = await k.api.post('/api/auth/sign-up', { email, password: 'password-123' });
  const token = /keel_session=([^;]*)/.exec(res.headers.get('set-cookie') ?? '')![1];
  return { userId: res.body.user.id, cookie: `keel_session=${token}` };
}

describe('POST /api/instance/database-backups', () => {
  it('writes a compressed backup into the configured directory and answers file, size, retention and timing', async () => {
    const res = await local.api.post('/api/instance/database-backups');
    expect(res.status, res.text).toBe(201);
    expect(res.body).toEqual({
      file: expect.stringMatching(/keel-backup-\d{8}T\d{9}Z-[0-9a-f]{8}\.gz$/), sizeBytes: expect.any(Number), prunedCount: 0,
      directory: backupDir, retention: { dailyDays: 7, weeklyWeeks: 4, monthlyMonths: 1 },
      startedAt: expect.stringMatching(ISO), finishedAt: expect.stringMatching(ISO), durationMs: expect.any(Number),
    });
    expect(res.body.file.startsWith(`${backupDir}/`)).toBe(true);
    expect((await stat(res.body.file)).size).toBe(res.body.sizeBytes);
    expect(res.body.durationMs).toBe(Date.parse(res.body.finishedAt) - Date.parse(res.body.startedAt));
    // gzip magic bytes
    const { readFile } = await import('node:fs/promises');
    const bytes = await readFile(res.body.file);
    expect([bytes[0], bytes[1]]).toEqual([0x1f, 0x8b]);
    expect(existsSync(`${res.body.file}.partial`)).toBe(false);
    const rows = (await local.sql.query('select * from database_backups where file = $1', [res.body.file])).rows;
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ trigger: 'manual', size_bytes: String(res.body.sizeBytes), pruned_count: 0 });
    const entry = (await local.sql.query(`select * from activity_log where action = 'instance.database_backup_created'`)).rows;
    expect(entry.at(-1)).toMatchObject({ company_id: null, entity_type: 'database_backup' });
  });

  it('applies the retention of the general settings after each backup, touching nothing but backups', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keel-retention-'));
    const k = await startPeerKernel(local, { backups: { directory: dir } });
    try {
      const now = Date.now();
      const old = [1, 2, 3, 4, 10, 40, 100].map((days) => backupFileName(new Date(now - days * DAY)));
      for (const name of old) await writeFile(join(dir, name), 'x');
      await writeFile(join(dir, 'notes.txt'), 'keep me');
      await mkdir(join(dir, backupFileName(new Date(now - 50 * DAY))));
      expect((await local.api.patch('/api/instance/settings/general', { backupRetention: { dailyDays: 3, weeklyWeeks: 1, monthlyMonths: 1 } })).status).toBe(200);
      const res = await k.api.post('/api/instance/database-backups');
      expect(res.status, res.text).toBe(201);
      expect(res.body.retention).toEqual({ dailyDays: 3, weeklyWeeks: 1, monthlyMonths: 1 });
      // Kept: today's new backup and the newest of yesterday and the day before (3 days); the
      // current week and month are covered by the new one. Pruned: days 3, 4, 10, 40 and 100.
      expect(res.body.prunedCount).toBe(5);
      const left = (await readdir(dir)).sort();
      expect(left).toEqual([old[0], old[1], res.body.file.split('/').at(-1), backupFileName(new Date(now - 50 * DAY)), 'notes.txt'].sort());
    } finally {
      await local.api.patch('/api/instance/settings/general', { backupRetention: { dailyDays: 7, weeklyWeeks: 4, monthlyMonths: 1 } });
      await k.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('takes no fields: a body naming one, or that is not a JSON object, is refused with 400 and nothing is written', async () => {
    const before = (await local.sql.query('select count(*)::int as n from database_backups')).rows[0].n;
    const files = (await readdir(backupDir)).length;
    const extra = await local.api.post('/api/instance/database-backups', { directory: '/etc' });
    expect(extra.status).toBe(400);
    expect(extra.body.code).toBe('validation_failed');
    const array = await local.api.post('/api/instance/database-backups', [1]);
    expect(array.status).toBe(400);
    const malformed = await local.api.request('POST', '/api/instance/database-backups', { rawBody: '{"a":', headers: { 'content-type': 'application/json' } });
    expect(malformed.status).toBe(400);
    expect((await local.sql.query('select count(*)::int as n from database_backups')).rows[0].n).toBe(before);
    expect((await readdir(backupDir)).length).toBe(files);
  });

  it('refuses agents with 403 and writes nothing', async () => {
    const company = await createCompany(local.api);
    const agent = await createAgent(local.api, company.id, { permissions: { canCreateAgents: true } });
    const key = await createAgentKey(local.api, agent.id);
    const before = (await local.sql.query('select count(*)::int as n from database_backups')).rows[0].n;
    const files = (await readdir(backupDir)).length;
    const res = await local.api.post('/api/instance/database-backups', undefined, { token: key });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('board_required');
    expect((await local.sql.query('select count(*)::int as n from database_backups')).rows[0].n).toBe(before);
    expect((await readdir(backupDir)).length).toBe(files);
  });

  it('is for instance admins only: 403 for other boards, 401 anonymous, nothing written', async () => {
    const member = await signUp(authed, 'member@example.com');
    const adminUser = await signUp(authed, 'admin@example.com');
    await authed.sql.query('update users set is_instance_admin = true where id = $1', [adminUser.userId]);
    authed.kernel.services.authCache.apply({ type: 'user', id: adminUser.userId });
    expect((await authed.api.post('/api/instance/database-backups')).status).toBe(401);
    const denied = await authed.api.post('/api/instance/database-backups', undefined, { cookie: member.cookie });
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ error: 'Instance admin access required', code: 'instance_admin_required' });
    expect((await authed.sql.query('select count(*)::int as n from database_backups')).rows[0].n).toBe(0);
    expect(existsSync(join(authed.dataDir, 'backups'))).toBe(false);
    const ok = await authed.api.post('/api/instance/database-backups', undefined, { cookie: adminUser.cookie });
    expect(ok.status, ok.text).toBe(201);
    expect(ok.body.directory).toBe(join(authed.dataDir, 'backups'));
  });
});

describe('GET /api/instance/database-backups', () => {
  it('lists the backup files of the directory newest first, by name and size, and nothing else', async () => {
    const parent = await mkdtemp(join(tmpdir(), 'keel-backup-list-'));
    const dir = join(parent, 'backups');
    const k = await startPeerKernel(local, { backups: { directory: dir } });
    try {
      // No directory yet: no backups, and reading creates nothing.
      const none = await k.api.get('/api/instance/database-backups');
      expect(none.status, none.text).toBe(200);
      expect(none.body).toEqual([]);
      expect(existsSync(dir)).toBe(false);

      await mkdir(dir);
      const now = Date.now();
      const [newest, middle, oldest] = [1, 5, 40].map((days) => new Date(now - days * DAY));
      await writeFile(join(dir, backupFileName(middle!)), 'x'.repeat(200));
      await writeFile(join(dir, backupFileName(oldest!)), 'x'.repeat(30));
      await writeFile(join(dir, backupFileName(newest!)), 'x'.repeat(1000));
      // Not backups: another file, an unfinished backup, a directory and a link named like one (pointing outside).
      await writeFile(join(dir, 'notes.txt'), 'keep me');
      await writeFile(join(dir, `${backupFileName(new Date(now))}.partial`), 'half');
      await mkdir(join(dir, backupFileName(new Date(now - 2 * DAY))));
      await symlink('/etc/hostname', join(dir, backupFileName(new Date(now - 3 * DAY))));

      const res = await k.api.get('/api/instance/database-backups');
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual([
        { file: backupFileName(newest!), sizeBytes: 1000, takenAt: newest!.toISOString() },
        { file: backupFileName(middle!), sizeBytes: 200, takenAt: middle!.toISOString() },
        { file: backupFileName(oldest!), sizeBytes: 30, takenAt: oldest!.toISOString() },
      ]);
      // Names only: the directory's path is not in the answer.
      expect(res.text).not.toContain(parent);

      // A backup taken now is listed first.
      const taken = await k.api.post('/api/instance/database-backups');
      expect(taken.status, taken.text).toBe(201);
      const after = await k.api.get('/api/instance/database-backups');
      expect(after.body[0]).toEqual({ file: taken.body.file.split('/').at(-1), sizeBytes: taken.body.sizeBytes, takenAt: taken.body.startedAt });
    } finally {
      await k.stop();
      await rm(parent, { recursive: true, force: true });
    }
  });

  it('is for instance admins only: 403 for agents and other boards, 401 anonymous', async () => {
    const company = await createCompany(local.api);
    const agent = await createAgent(local.api, company.id, { permissions: { canCreateAgents: true } });
    const key = await createAgentKey(local.api, agent.id);
    const byAgent = await local.api.get('/api/instance/database-backups', { token: key });
    expect(byAgent.status).toBe(403);
    expect(byAgent.body).toMatchObject({ code: 'board_required' });

    const member = await signUp(authed, 'list-member@example.com');
    const adminUser = await signUp(authed, 'list-admin@example.com');
    await authed.sql.query('update users set is_instance_admin = true where id = $1', [adminUser.userId]);
    authed.kernel.services.authCache.apply({ type: 'user', id: adminUser.userId });
    const anonymous = await authed.api.get('/api/instance/database-backups');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error).toEqual(expect.any(String));
    const denied = await authed.api.get('/api/instance/database-backups', { cookie: member.cookie });
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ error: 'Instance admin access required', code: 'instance_admin_required' });
    const ok = await authed.api.get('/api/instance/database-backups', { cookie: adminUser.cookie });
    expect(ok.status, ok.text).toBe(200);
    expect(Array.isArray(ok.body)).toBe(true);
  });
});

describe('retention rule', () => {
  it('keeps the newest backup of each day, week and month in the windows, and nothing else', () => {
    const now = new Date('2026-05-20T12:00:00Z'); // a Wednesday
    const times = [
      '2026-05-20T11:00:00Z', '2026-05-20T01:00:00Z', // today: the newer is kept
      '2026-05-19T23:00:00Z', '2026-05-18T05:00:00Z', // daily window (3 days)
      '2026-05-17T05:00:00Z', // Sunday: last week, newest of it -> weekly (2 weeks)
      '2026-05-12T05:00:00Z', // last week, older -> pruned
      '2026-05-03T05:00:00Z', // two weeks ago: outside 2 weeks; May is kept by today's
      '2026-04-30T05:00:00Z', // newest of April -> monthly (2 months)
      '2026-04-01T05:00:00Z', // April, older -> pruned
      '2026-02-01T05:00:00Z', // outside every window
    ].map((s) => new Date(s));
    const kept = [...backupsToKeep(times, { dailyDays: 3, weeklyWeeks: 1, monthlyMonths: 1 } as never, now)].sort((a, b) => a - b);
    expect(kept).toEqual([0, 2, 3]);
    const wider = [...backupsToKeep(times, { dailyDays: 3, weeklyWeeks: 2, monthlyMonths: 3 } as never, now)].sort((a, b) => a - b);
    expect(wider).toEqual([0, 2, 3, 4, 7]);
  });
});

describe('scheduled backups across processes', () => {
  it('take one backup per interval between all processes on the database', async () => {
    const dirs = [await mkdtemp(join(tmpdir(), 'keel-sched-a-')), await mkdtemp(join(tmpdir(), 'keel-sched-b-'))];
    const first = await startTestKernel({ backups: { directory: dirs[0], intervalSeconds: 5 } });
    let second: PeerKernel | undefined;
    try {
      second = await startPeerKernel(first, { backups: { directory: dirs[1], intervalSeconds: 5 } });
      const scheduled = async () => (await first.sql.query(`select * from database_backups where trigger = 'scheduled' order by started_at`)).rows;
      const deadline = Date.now() + 60_000;
      while ((await scheduled()).length < 3) {
        if (Date.now() > deadline) throw new Error('scheduled backups did not come');
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      await second.stop();
      second = undefined;
      await first.kernel.stop();
      const rows = await scheduled();
      for (let i = 1; i < rows.length; i++) {
        // The lease is taken on the database's clock; the rows carry each process's start, within a second of it.
        expect(Date.parse(rows[i].started_at) - Date.parse(rows[i - 1].started_at)).toBeGreaterThan(4_000);
      }
      const files = [...await readdir(dirs[0]), ...await readdir(dirs[1])].filter((name) => name.startsWith('keel-backup-'));
      // Every scheduled run wrote one file; retention (newest per day) pruned the older ones of each directory.
      const pruned = rows.reduce((sum, row) => sum + row.pruned_count, 0);
      expect(files.length + pruned).toBe(rows.length);
    } finally {
      await second?.stop();
      await first.stop();
      for (const dir of dirs) await rm(dir, { recursive: true, force: true });
    }
  });
});
