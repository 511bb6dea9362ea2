const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 30_000;

/**
 * When a process cannot bring a plugin in line with the database (its worker would not start,
 * provisioning met a transient error), it tries again later, 250 ms doubling to 30 s, until it
 * succeeds or a newer change supersedes the attempt. One pending retry per plugin.
 */
export class ReconcileRetries {
  private readonly pending = new Map<string, { failures: number; timer: NodeJS.Timeout | null }>();

  /** Records a failure and schedules `run`; answers the delay. */
  failed(key: string, run: () => void): number {
    const entry = this.pending.get(key) ?? { failures: 0, timer: null };
    if (entry.timer) clearTimeout(entry.timer);
    const delay = Math.min(FIRST_RETRY_MS * 2 ** entry.failures, MAX_RETRY_MS);
    entry.failures++;
    entry.timer = setTimeout(() => { entry.timer = null; run(); }, delay);
    entry.timer.unref();
    this.pending.set(key, entry);
    return delay;
  }

  /** An attempt is about to run anyway: its scheduled retry is not needed. */
  superseded(key: string): void {
    const entry = this.pending.get(key);
    if (entry?.timer) clearTimeout(entry.timer);
    if (entry) entry.timer = null;
  }

  succeeded(key: string): void {
    this.superseded(key);
    this.pending.delete(key);
  }

  /** Failures so far of a plugin that is not yet in line (0 when it is). */
  failures(key: string): number {
    return this.pending.get(key)?.failures ?? 0;
  }

  /** Cancels every pending retry (the host is stopping). */
  clear(): void {
    for (const key of this.pending.keys()) this.superseded(key);
    this.pending.clear();
  }
}
