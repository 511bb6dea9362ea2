import { randomBytes } from 'node:crypto';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { BackupRetention } from '../tenancy/instance-settings.ts';

/**
 * Backup files are named `keel-backup-<UTC yyyymmddThhmmssmmmZ>-<8 hex>.gz` (older ones without
 * the random part); nothing else in the directory is touched. The random part keeps two backups
 * of one millisecond apart, whichever process or instance sharing the directory takes them.
 */
const BACKUP_NAME = /^keel-backup-(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})Z(?:-[0-9a-f]{8})?\.gz$/;

export function backupFileName(at: Date, unique?: string): string {
  return `keel-backup-${at.toISOString().replace(/[-:.]/g, '')}${unique === undefined ? '' : `-${unique}`}.gz`;
}

/** A name for a backup taken now: its time and 32 random bits. */
export function newBackupFileName(at: Date): string {
  return backupFileName(at, randomBytes(4).toString('hex'));
}

export function backupTime(name: string): Date | null {
  const m = BACKUP_NAME.exec(name);
  if (!m) return null;
  return new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!, +m[7]!));
}

/**
 * Which backups retention keeps: the newest backup of each of the last `dailyDays` UTC days,
 * of each of the last `weeklyWeeks` weeks (Monday to Sunday) and of each of the last
 * `monthlyMonths` calendar months, counted back from `now`. A schedule that backs up every
 * hour therefore keeps at most dailyDays + weeklyWeeks + monthlyMonths files, never a disk full.
 */
export function backupsToKeep(times: readonly Date[], retention: BackupRetention, now: Date): Set<number> {
  const keep = new Set<number>();
  const newestPerBucket = (bucketOf: (t: Date) => number, buckets: number) => {
    const current = bucketOf(now);
    const newest = new Map<number, number>();
    times.forEach((time, index) => {
      const bucket = bucketOf(time);
      if (bucket > current || bucket <= current - buckets) return;
      const previous = newest.get(bucket);
      if (previous === undefined || times[previous]!.getTime() < time.getTime()) newest.set(bucket, index);
    });
    for (const index of newest.values()) keep.add(index);
  };
  const DAY = 86_400_000;
  const day = (t: Date) => Math.floor(t.getTime() / DAY);
  // 1970-01-01 was a Thursday: shift by three days so that weeks start on Monday.
  const week = (t: Date) => Math.floor((day(t) + 3) / 7);
  const month = (t: Date) => t.getUTCFullYear() * 12 + t.getUTCMonth();
  newestPerBucket(day, retention.dailyDays);
  newestPerBucket(week, retention.weeklyWeeks);
  newestPerBucket(month, retention.monthlyMonths);
  return keep;
}

/** Deletes the backups of `directory` that retention does not keep; `justWritten` is always kept. Answers how many went. */
export async function applyRetention(directory: string, retention: BackupRetention, justWritten: string, now = new Date()): Promise<number> {
  const names = (await readdir(directory)).filter((name) => backupTime(name) !== null);
  const keep = backupsToKeep(names.map((name) => backupTime(name)!), retention, now);
  let pruned = 0;
  for (const [index, name] of names.entries()) {
    if (keep.has(index) || name === justWritten) continue;
    const file = join(directory, name);
    // Only regular files: a directory or link of that name is not ours to remove.
    if (!(await stat(file).catch(() => null))?.isFile()) continue;
    await rm(file, { force: true });
    pruned++;
  }
  return pruned;
}
