import { hostname } from 'node:os';
import { newClient } from '../db/connections.ts';
import { KeelError } from '../http/errors.ts';

/**
 * One database backup at a time, across every Keel process on the database: a session-level
 * advisory lock (key next to the kernel's 727001-727003, kernel/host/cluster-lock.ts) held on a
 * connection of its own for the whole backup, retention included. A second backup asked for
 * meanwhile (a request, the schedule, `npm run db:backup`, in this process or another) is
 * refused with 409 database_backup_in_progress rather than queued: it would copy the same data
 * again, and retention would prune the first one as soon as the second was written. Ending the
 * connection releases the lock, also when the process holding it dies.
 */
export const BACKUP_LOCK_KEY = 727004;

export async function withBackupLock<T>(databaseUrl: string, fn: () => Promise<T>): Promise<T> {
  const client = newClient(databaseUrl, { application_name: `keel-backup-lock ${hostname()}:${process.pid}` });
  // A connection lost while held loses the lock with it; the backup in hand carries on.
  client.on('error', () => undefined);
  await client.connect();
  try {
    const { rows: [row] } = await client.query<{ locked: boolean }>('select pg_try_advisory_lock($1) as locked', [BACKUP_LOCK_KEY]);
    if (!row?.locked) throw backupInProgress();
    return await fn();
  } finally {
    await client.end().catch(() => undefined);
  }
}

export function backupInProgress(): KeelError {
  return new KeelError(409, 'database_backup_in_progress',
    'A database backup is already running (asked for by another request, the schedule or npm run db:backup, in this or another Keel process); it will be listed by GET /api/instance/database-backups when done. Retry after it has finished.');
}

export function isBackupInProgress(error: unknown): boolean {
  return error instanceof KeelError && error.code === 'database_backup_in_progress';
}
