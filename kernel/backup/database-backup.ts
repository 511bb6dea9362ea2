import { mkdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { KeelConfig } from '../config/schema.ts';
import type { Database } from '../db/database.ts';
import { readSettings, type BackupRetention } from '../tenancy/instance-settings.ts';
import { withBackupLock } from './backup-lock.ts';
import { applyRetention, newBackupFileName } from './retention.ts';
import { writeSnapshot, type SnapshotProgress } from './write-snapshot.ts';

/** The answer of POST /api/instance/database-backups (docs/api/instance.md). */
export interface DatabaseBackupResult {
  /** Absolute path of the new backup file. */
  file: string;
  /** Size of the compressed file in bytes. */
  sizeBytes: number;
  /** Older backups retention removed right after this one was written. */
  prunedCount: number;
  /** The backup directory. */
  directory: string;
  /** The retention policy applied (instance settings, general.backupRetention). */
  retention: BackupRetention;
  startedAt: string;
  finishedAt: string;
  durationMs: number;
}

export function backupDirectory(config: KeelConfig): string {
  return resolve(config.backups?.directory ?? join(config.dataDir, 'backups'));
}

/** Progress of a long backup is logged at most this often. */
const PROGRESS_LOG_MS = 5_000;

/**
 * Takes one backup into the backup directory, applies retention and records it in
 * database_backups. The same path serves the manual route, the schedule and `npm run
 * db:backup`, with the embedded PostgreSQL or DATABASE_URL alike. One backup runs at a time
 * across every process on the database; another asked for meanwhile is refused with 409
 * database_backup_in_progress (backup-lock.ts).
 */
export async function takeDatabaseBackup(
  deps: { db: Database; config: KeelConfig; log: Logger },
  trigger: 'manual' | 'scheduled',
  onProgress?: (progress: SnapshotProgress) => void,
): Promise<DatabaseBackupResult> {
  const databaseUrl = deps.db.url;
  return withBackupLock(databaseUrl, () => takeLockedBackup(deps, databaseUrl, trigger, onProgress));
}

async function takeLockedBackup(
  deps: { db: Database; config: KeelConfig; log: Logger },
  databaseUrl: string,
  trigger: 'manual' | 'scheduled',
  onProgress?: (progress: SnapshotProgress) => void,
): Promise<DatabaseBackupResult> {
  const directory = backupDirectory(deps.config);
  await mkdir(directory, { recursive: true, mode: 0o700 });
  const started = new Date();
  const name = newBackupFileName(started);
  const file = join(directory, name);
  let lastLog = Date.now();
  const snapshot = await writeSnapshot(deps.db.url, file, (progress) => {
    onProgress?.(progress);
    if (Date.now() - lastLog >= PROGRESS_LOG_MS) {
      lastLog = Date.now();
      deps.log.info({ backup: name, ...progress }, 'database backup in progress');
    }
  });
  const { backupRetention: retention } = await readSettings(deps.db, 'general');
  const prunedCount = await applyRetention(directory, retention, name);
  const finished = new Date();
  await deps.db.exec(
    `insert into database_backups (trigger, process, file, directory, size_bytes, pruned_count, started_at, finished_at)
     values (?, ?, ?, ?, ?, ?, ?, ?)`,
    [trigger, `${hostname()}:${process.pid}`, file, directory, snapshot.sizeBytes, prunedCount, started.toISOString(), finished.toISOString()]);
  deps.log.info({ file, sizeBytes: snapshot.sizeBytes, prunedCount, trigger, durationMs: finished.getTime() - started.getTime() }, 'database backup written');
  return {
    file, sizeBytes: snapshot.sizeBytes, prunedCount, directory, retention,
    startedAt: started.toISOString(), finishedAt: finished.toISOString(), durationMs: finished.getTime() - started.getTime(),
  };
}
