import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { backupTime } from './retention.ts';

/** One entry of GET /api/instance/database-backups (docs/api/instance.md): a name in the backup directory, never a path. */
export interface ListedBackup {
  file: string;
  sizeBytes: number;
  takenAt: string;
}

/** The listing answers at most this many backups, newest first; retention keeps far fewer. */
export const MAX_LISTED_BACKUPS = 500;

/**
 * The backups in `directory`, newest first: files named like backups (`keel-backup-<time>.gz`),
 * regular files only (a directory or a link of that name is not a backup, and a link is never
 * followed out of the directory). A missing directory has no backups yet.
 */
export async function listBackups(directory: string): Promise<ListedBackup[]> {
  let names: string[];
  try {
    names = await readdir(directory);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const dated = names
    .map((name) => ({ name, at: backupTime(name) }))
    .filter((entry): entry is { name: string; at: Date } => entry.at !== null)
    .sort((a, b) => b.at.getTime() - a.at.getTime() || (a.name < b.name ? 1 : -1));
  const listed: ListedBackup[] = [];
  for (const { name, at } of dated) {
    if (listed.length >= MAX_LISTED_BACKUPS) break;
    // lstat: a link named like a backup is reported as a link, and skipped.
    const info = await lstat(join(directory, name)).catch(() => null);
    if (!info?.isFile()) continue;
    listed.push({ file: name, sizeBytes: info.size, takenAt: at.toISOString() });
  }
  return listed;
}
