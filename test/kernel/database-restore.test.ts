import { randomBytes } from 'node:crypto';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAgent, createCompany } from '../support/fixtures.ts';
import { FIRST_PARTY_PLUGINS, startTestKernel, type TestKernel } from '../support/harness.ts';
import { runTool } from './backup-helpers.ts';

/**
 * A backup taken through the API is restored with `npm run db:restore` into a new, empty
 * database and a data directory holding the original's keys; the restored instance serves the
 * same companies, agents, work issues and cost events, decrypts the same secrets, and its
 * activity chains verify.
 */
let t: TestKernel;
let restored: TestKernel | undefined;
let restoredUrl: string;
let restoredDir: string;
/** These tests start the operator commands as processes of their own, several each. */
const COMMANDS_TIMEOUT_MS = 180_000;
const admin = () => new pg.Client({ connectionString: inject('adminDatabaseUrl') });

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  const name = `t_restore_${randomBytes(5).toString('hex')}`;
  const client = admin();
  await client.connect();
  await client.query(`create database ${name}`);
  await client.end();
  restoredUrl = t.databaseUrl.replace(/\/[^/]*$/, `/${name}`);
  restoredDir = await mkdtemp(join(tmpdir(), 'keel-restored-'));
  // The backup carries encrypted secrets, never the keys: the restored instance gets the original's.
  for (const file of ['agent-jwt.secret', 'secrets-master.keys']) await copyFile(join(t.dataDir, file), join(restoredDir, file));
});

afterAll(async () => {
  await restored?.stop();
  await t?.stop();
  await rm(restoredDir, { recursive: true, force: true });
  const client = admin();
  await client.connect();
  await client.query(`drop database if exists ${new URL(restoredUrl).pathname.slice(1)} with (force)`).catch(() => undefined);
  await client.end();
});

/** md5 of a table's rows in a stable order: equal digests, equal contents. */
async function digest(sql: pg.Pool | pg.Client, table: string, where = 'true'): Promise<{ n: number; md5: string | null }> {
  const { rows } = await sql.query(`select count(*)::int as n, md5(string_agg(r::text, E'\\n' order by r::text)) as md5 from ${table} r where ${where}`);
  return rows[0];
}

const TABLES = ['companies', 'agents', 'secrets', 'secret_versions', 'vault_data_keys', 'plugin_work.issues', 'plugin_costs.cost_events', 'instance_settings'];

describe('npm run db:restore', () => {
  it('round-trips kernel and plugin data, secrets and the activity chain', async () => {
    const company = await createCompany(t.api, { name: 'Restored Co' });
    const agent = await createAgent(t.api, company.id, { name: 'Keeper' });
    const secret = await t.api.post(`/api/companies/${company.id}/secrets`, { name: 'API_TOKEN', value: 'sk-restore-me' });
    expect(secret.status, secret.text).toBe(201);
    for (let i = 0; i < 3; i++) {
      const issue = await t.api.post(`/api/companies/${company.id}/issues`, { title: `Issue ${i}`, description: 'line one\nline "two"\t\\ tab' });
      expect(issue.status, issue.text).toBe(201);
      const cost = await t.api.post(`/api/companies/${company.id}/cost-events`, { agentId: agent.id, provider: 'alpha', model: 'm', costCents: 10 + i, occurredAt: new Date().toISOString() });
      expect(cost.status, cost.text).toBe(201);
    }
    await t.api.patch('/api/instance/settings/general', { backupRetention: { dailyDays: 3 } });

    const backup = await t.api.post('/api/instance/database-backups');
    expect(backup.status, backup.text).toBe(201);
    const cutoff = `created_at < '${backup.body.startedAt}'`;
    const before: Record<string, unknown> = {};
    for (const table of TABLES) before[table] = await digest(t.sql, table);
    before.activity_log = await digest(t.sql, 'activity_log', cutoff);
    expect((before['plugin_costs.cost_events'] as { n: number }).n).toBe(3);

    const run = await runTool('db-restore', [backup.body.file, '--data-dir', restoredDir], { DATABASE_URL: restoredUrl });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^OK: \d+ rows in \d+ tables/);
    expect(run.stderr).toMatch(/restoring \d+\/\d+ plugin_costs\.cost_events/);

    const check = new pg.Client({ connectionString: restoredUrl });
    await check.connect();
    try {
      for (const table of TABLES) expect(await digest(check, table), table).toEqual(before[table]);
      expect(await digest(check, 'activity_log', cutoff)).toEqual(before.activity_log);
      const migrations = (c: pg.Client | pg.Pool) => c.query('select plugin_key, name, checksum from plugin_migrations order by 1, 2').then((r) => r.rows);
      expect(await migrations(check)).toEqual(await migrations(t.sql));
    } finally {
      await check.end();
    }

    const verify = await runTool('activity-verify', ['--data-dir', restoredDir], { DATABASE_URL: restoredUrl });
    expect(verify.code, verify.stderr).toBe(0);
    expect(verify.stdout).toMatch(/^OK: \d+ entries in \d+ chains$/);

    restored = await startTestKernel({ dataDir: restoredDir }, { databaseUrl: restoredUrl, firstPartyDir: FIRST_PARTY_PLUGINS });
    const agents = await restored.api.get(`/api/companies/${company.id}/agents`);
    expect(agents.status).toBe(200);
    expect(agents.body.map((a: { id: string }) => a.id)).toContain(agent.id);
    const issues = await restored.api.get(`/api/companies/${company.id}/issues`);
    expect(issues.status, issues.text).toBe(200);
    expect(issues.body).toHaveLength(3);
    const services = restored.kernel.services;
    const revealed = await services.vault.reveal(services.db, company.id, secret.body.id, 'latest');
    expect(revealed.value).toBe('sk-restore-me');
    // The restored instance keeps working: numbering and costs go on from the restored state.
    const next = await restored.api.post(`/api/companies/${company.id}/issues`, { title: 'After restore' });
    expect(next.status, next.text).toBe(201);
    expect(issues.body.map((i: { identifier: string }) => i.identifier)).not.toContain(next.body.identifier);
  }, COMMANDS_TIMEOUT_MS);

  it('refuses a database that is not empty, and a file that is not a backup', async () => {
    const file = join(restoredDir, 'not-a-backup.gz');
    const { writeFile } = await import('node:fs/promises');
    const { gzipSync } = await import('node:zlib');
    await writeFile(file, gzipSync('hello\n'));
    const bad = await runTool('db-restore', [file, '--data-dir', restoredDir], { DATABASE_URL: restoredUrl });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/is not a Keel database backup/);
    // The command-line backup: same file and record as the route, progress per table on stderr.
    const taken = await runTool('db-backup', ['--data-dir', t.dataDir], { DATABASE_URL: t.databaseUrl });
    expect(taken.code, taken.stderr).toBe(0);
    expect(taken.stderr).toMatch(/backing up \d+\/\d+ plugin_work\.issues/);
    const backup = { body: JSON.parse(taken.stdout) as { file: string; directory: string } };
    expect(backup.body.directory).toBe(join(t.dataDir, 'backups'));
    const again = await runTool('db-restore', [backup.body.file, '--data-dir', restoredDir], { DATABASE_URL: restoredUrl });
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/The target database is not empty/);
    const usage = await runTool('db-restore', [], { DATABASE_URL: restoredUrl });
    expect(usage.code).toBe(2);
  }, COMMANDS_TIMEOUT_MS);
});
