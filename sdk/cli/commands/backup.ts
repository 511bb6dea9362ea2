import { clientFor, emitRecord, withProgress, type GlobalOptions } from '../output.ts';

/**
 * `keel backup`: asks the server for a database backup (POST /api/instance/database-backups,
 * instance admins) and waits for it, showing progress on stderr. The answer is printed as the
 * server sends it. A backup takes as long as the database is large, so the time limit is long.
 */
export async function backupCommand(options: GlobalOptions): Promise<void> {
  const client = clientFor(options, 60 * 60_000);
  const answer = await withProgress(options, 'Backing up the database', () => client.post('/api/instance/database-backups', {}));
  emitRecord(options, answer, 'Backup done');
}
