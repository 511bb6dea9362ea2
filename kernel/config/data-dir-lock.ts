import { mkdir, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * One server per data directory. The server using a data directory holds `keel.lock` in it:
 * a file created exclusively (O_EXCL) that names the holder's process, its start time and,
 * once it listens, its address. A second start on the same directory reads the file and
 * refuses at once, naming the running server. A lock whose process is gone (a crash, a
 * SIGKILL) is stale: it is taken over, and only then may the new server clear what the dead
 * one left behind (an orphaned PostgreSQL).
 *
 * The process start time guards against pid reuse: a pid that is alive but started at
 * another time than the one recorded belongs to some other process, so the lock is stale.
 */
export interface LockHolder {
  pid: number;
  /** Start time of the holder process in clock ticks since boot (Linux), when known. */
  startTime: number | null;
  startedAt: string;
  url: string | null;
}

export class DataDirInUseError extends Error {
  readonly holder: LockHolder;
  constructor(dataDir: string, holder: LockHolder) {
    const where = holder.url ? `listening on ${holder.url}` : 'still starting';
    super(`Data directory ${dataDir} is in use by Keel process ${holder.pid} (${where}, since ${holder.startedAt}). `
      + 'Stop that server first, or start this one with another data directory (--data-dir or KEEL_HOME).');
    this.name = 'DataDirInUseError';
    this.holder = holder;
  }
}

export class DataDirLock {
  readonly file: string;
  private readonly holder: LockHolder;
  private released = false;

  private constructor(file: string, holder: LockHolder) {
    this.file = file;
    this.holder = holder;
  }

  /** Takes the lock, taking over a stale one; throws DataDirInUseError while a live server holds it. */
  static async acquire(dataDir: string): Promise<DataDirLock> {
    await mkdir(dataDir, { recursive: true });
    const file = join(dataDir, 'keel.lock');
    const holder: LockHolder = { pid: process.pid, startTime: processStartTime(process.pid), startedAt: new Date().toISOString(), url: null };
    // Two rounds are enough: a stale lock is moved aside once, then created exclusively;
    // a racer that created it first in between is a live holder and wins.
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const handle = await open(file, 'wx', 0o600);
        try { await handle.writeFile(JSON.stringify(holder)); } finally { await handle.close(); }
        return new DataDirLock(file, holder);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const current = await readHolder(file);
      if (current && isAlive(current)) throw new DataDirInUseError(dataDir, current);
      await takeOverStale(file, dataDir);
    }
    const current = await readHolder(file);
    throw new DataDirInUseError(dataDir, current ?? { pid: 0, startTime: null, startedAt: 'unknown', url: null });
  }

  /** Records where the server listens, so a second start can name it. */
  async listening(url: string): Promise<void> {
    if (this.released) return;
    this.holder.url = url;
    const temp = `${this.file}.${process.pid}.tmp`;
    await writeFile(temp, JSON.stringify(this.holder), { mode: 0o600 });
    await rename(temp, this.file);
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    const current = await readHolder(this.file);
    // Never remove a lock that another server has since taken over.
    if (current?.pid === process.pid) await rm(this.file, { force: true });
  }
}

/**
 * Moves a stale lock aside. If what was moved turns out to be a live server's lock (a racer
 * took the stale one over between our read and our move), it is put back and that server
 * keeps the directory.
 */
async function takeOverStale(file: string, dataDir: string): Promise<void> {
  const aside = `${file}.stale-${process.pid}`;
  try {
    await rename(file, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  const moved = await readHolder(aside);
  if (moved && isAlive(moved)) {
    await rename(aside, file);
    throw new DataDirInUseError(dataDir, moved);
  }
  await rm(aside, { force: true });
}

async function readHolder(file: string): Promise<LockHolder | null> {
  try {
    const parsed = JSON.parse(await readFile(file, 'utf8')) as Partial<LockHolder>;
    if (typeof parsed.pid !== 'number' || !Number.isInteger(parsed.pid) || parsed.pid <= 0) return null;
    return { pid: parsed.pid, startTime: typeof parsed.startTime === 'number' ? parsed.startTime : null, startedAt: String(parsed.startedAt ?? 'unknown'), url: typeof parsed.url === 'string' ? parsed.url : null };
  } catch {
    // Unreadable or half-written by a server that died while writing it: stale.
    return null;
  }
}

function isAlive(holder: LockHolder): boolean {
  try { process.kill(holder.pid, 0); } catch (error) { return (error as NodeJS.ErrnoException).code === 'EPERM'; }
  const now = processStartTime(holder.pid);
  return holder.startTime === null || now === null || now === holder.startTime;
}

/** Field 22 of /proc/<pid>/stat: when the process started, in clock ticks since boot. */
function processStartTime(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces and parentheses: count from the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const value = Number(fields[19]);
    return Number.isFinite(value) ? value : null;
  } catch {
    return null;
  }
}
