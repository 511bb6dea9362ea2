import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernelProcess, type KernelProcess } from '../support/kernel-process.ts';
import { createRestrictedDatabase, type RestrictedDatabase } from '../support/restricted-database.ts';

/**
 * Keel as deployed behind a round-robin: several `kernel/main.ts` processes, each with its own
 * data directory, sharing one external PostgreSQL through a role that is not a superuser (as
 * managed services grant), and the agent JWT secret and vault master key.
 */
const shared = { KEEL_AGENT_JWT_SECRET: randomBytes(32).toString('hex'), KEEL_SECRETS_MASTER_KEY: randomBytes(32).toString('hex') };
const homes: string[] = [];
const processes: KernelProcess[] = [];
const databases: RestrictedDatabase[] = [];

async function startProcess(databaseUrl: string): Promise<KernelProcess> {
  const home = await mkdtemp(join(tmpdir(), 'keel-multi-'));
  homes.push(home);
  const started = startKernelProcess({ env: { ...shared, KEEL_HOME: home, DATABASE_URL: databaseUrl } });
  processes.push(started);
  return started;
}

afterAll(async () => {
  await Promise.all(processes.map((p) => p.kill()));
  for (const database of databases) await database.drop();
  for (const home of homes) await rm(home, { recursive: true, force: true });
});

describe('a start that fails', () => {
  it('exits non-zero with the reason, releasing the database (a role that cannot create plugin roles)', async () => {
    const database = await createRestrictedDatabase({ createRole: false });
    databases.push(database);
    const started = await startProcess(database.url);
    const outcome = await Promise.race([started.exited, new Promise((resolve) => setTimeout(() => resolve('still running after 90 s'), 90_000))]);
    expect(outcome, started.output()).not.toBe('still running after 90 s');
    expect(outcome).not.toBe(0);
    expect(started.output()).toMatch(/Keel could not start: .*permission denied to create role .*needs CREATEROLE/);
    // Nothing of the process stays connected.
    const { rows } = await database.asSuperuser('select count(*)::int as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()');
    expect(rows[0].n).toBe(0);
  }, 120_000);
});
