import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The address a running server recorded in its data directory. The server holds
 * `<data dir>/keel.lock` while it runs (kernel/config/data-dir-lock.ts) and writes its URL into
 * it once it serves; that URL is where it really listens, even with port 0 or settings the
 * CLI cannot see (flags given to `npm start`). Read here without importing the kernel, which
 * the SDK ships without. Returns null when no live server holds the directory.
 */
export function runningServerUrl(dataDir: string): { url: string; lockFile: string } | null {
  const lockFile = join(dataDir, 'keel.lock');
  let holder: { pid?: unknown; startTime?: unknown; url?: unknown };
  try {
    holder = JSON.parse(readFileSync(lockFile, 'utf8')) as typeof holder;
  } catch {
    return null;
  }
  if (typeof holder.url !== 'string' || typeof holder.pid !== 'number' || !Number.isInteger(holder.pid) || holder.pid <= 0) return null;
  if (!isAlive(holder.pid, typeof holder.startTime === 'number' ? holder.startTime : null)) return null;
  return { url: holder.url, lockFile };
}

/** Alive and, where Linux tells, started when the lock says: a reused pid is another process. */
function isAlive(pid: number, startTime: number | null): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const now = processStartTime(pid);
  return startTime === null || now === null || now === startTime;
}

/** Field 22 of /proc/<pid>/stat, the process start in clock ticks since boot (as the server records it). */
function processStartTime(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const value = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
    return Number.isFinite(value) ? value : null;
  } catch {
    return null;
  }
}
