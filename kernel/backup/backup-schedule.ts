import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { KeelConfig } from '../config/schema.ts';
import type { Database } from '../db/database.ts';
import { isBackupInProgress } from './backup-lock.ts';
import { takeDatabaseBackup } from './database-backup.ts';

/**
 * Scheduled backups (config backups.intervalSeconds). Every Keel process on the database
 * checks a few times per interval; the one whose conditional update advances the single
 * database_backup_schedule row takes the backup, the others find the row already advanced.
 * The database decides, so N processes take one backup per interval, not N. The clock is
 * the database's (now()), never the processes' own.
 */
export function startBackupSchedule(deps: { db: Database; config: KeelConfig; log: Logger }): { stop(): Promise<void> } {
  const intervalSeconds = deps.config.backups?.intervalSeconds;
  if (!intervalSeconds) return { async stop() {} };
  const holder = `${hostname()}:${process.pid}`;
  // Checking four times per interval bounds the lateness to a quarter of it; at most once a minute.
  const checkMs = Math.min(60_000, Math.max(1_000, (intervalSeconds * 1000) / 4));
  let running: Promise<void> | null = null;
  let stopped = false;

  const tick = async () => {
    const claimed = await deps.db.maybeOne(
      `update database_backup_schedule set last_started_at = now(), holder = ?
        where id and (last_started_at is null or last_started_at <= now() - make_interval(secs => ?))
        returning last_started_at`, [holder, intervalSeconds]);
    if (!claimed || stopped) return;
    await takeDatabaseBackup(deps, 'scheduled');
  };
  const timer = setInterval(() => {
    if (running || stopped) return;
    running = tick()
      .catch((error: unknown) => {
        if (stopped) return;
        // A backup asked for by hand (here or in another process) is running: it stands for this one.
        if (isBackupInProgress(error)) deps.log.info('scheduled database backup skipped: another backup is running');
        else deps.log.error({ err: error }, 'scheduled database backup failed');
      })
      .finally(() => { running = null; });
  }, checkMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
