import { clientFor, emit, formatBytes, formatMs, withProgress, type GlobalOptions } from '../output.ts';

interface BackupAnswer { file?: string; sizeBytes?: number; prunedCount?: number; durationMs?: number }

/**
 * `keel backup`: asks the server for a database backup (POST /api/instance/database-backups,
 * instance admins) and waits for it, showing progress on stderr. With --json the answer as the
 * server sends it (`{file, sizeBytes, prunedCount, directory, retention, startedAt, finishedAt,
 * durationMs}`). A backup takes as long as the database is large, so the time limit is an hour.
 */
export async function backupCommand(options: GlobalOptions): Promise<void> {
  const client = clientFor(options, 60 * 60_000);
  const answer = await withProgress(options, 'Backing up the database', () => client.post<BackupAnswer>('/api/instance/database-backups', {}));
  const size = typeof answer.sizeBytes === 'number' ? ` (${formatBytes(answer.sizeBytes)})` : '';
  const took = typeof answer.durationMs === 'number' ? ` in ${formatMs(answer.durationMs)}` : '';
  const pruned = answer.prunedCount ? `; retention removed ${answer.prunedCount} older backup${answer.prunedCount === 1 ? '' : 's'}` : '';
  emit(options, `Backup written to ${answer.file ?? 'the backup directory'}${size}${took}${pruned}`, answer);
}
