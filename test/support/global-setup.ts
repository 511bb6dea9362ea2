import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { Database } from '../../kernel/db/database.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../kernel/db/embedded-postgres.ts';
import { createLogger } from '../../kernel/logger.ts';
import { installCodingTools } from './coding-tools.ts';

/**
 * Starts one embedded PostgreSQL for the whole run (or uses TEST_DATABASE_URL), migrates a
 * template database once, and hands its address to the test files, which clone it.
 */
let embedded: EmbeddedDatabase | undefined;

export async function setup(project: TestProject): Promise<void> {
  const log = createLogger('warn');
  // The real coding-agent tools the local adapters' tests drive (once per machine; in parallel with the database's start).
  const tools = installCodingTools();
  let adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) {
    const root = join(process.cwd(), 'test', '.tmp');
    await removeStaleClusters(root);
    const dir = join(root, `pg-${process.pid}`);
    await mkdir(dir, { recursive: true });
    embedded = await startEmbeddedPostgres(dir, log, { anyPort: true });
    adminUrl = embedded.url;
  }
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query('drop database if exists keel_template');
  await admin.query('create database keel_template');
  await admin.end();
  const templateUrl = adminUrl.replace(/\/[^/]*$/, '/keel_template');
  const db = await Database.connect(templateUrl, { poolSize: 2 });
  await db.migrate();
  await db.close();
  project.provide('adminDatabaseUrl', adminUrl);
  await tools;
}

export async function teardown(): Promise<void> {
  await embedded?.stop();
  await rm(join(process.cwd(), 'test', '.tmp', `pg-${process.pid}`), { recursive: true, force: true });
}

/** Removes clusters of earlier runs whose process is gone; clusters of concurrent runs stay. */
async function removeStaleClusters(root: string): Promise<void> {
  const entries = await readdir(root).catch(() => [] as string[]);
  for (const entry of entries) {
    const pid = Number(/^pg-(\d+)$/.exec(entry)?.[1]);
    if (!pid) continue;
    let alive = true;
    try { process.kill(pid, 0); } catch { alive = false; }
    if (!alive) await rm(join(root, entry), { recursive: true, force: true });
  }
}

declare module 'vitest' {
  export interface ProvidedContext {
    adminDatabaseUrl: string;
  }
}
