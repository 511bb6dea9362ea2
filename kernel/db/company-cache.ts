type Row = Record<string, any>;

/**
 * How long a cached company row's month-to-date spend is shown. The row is evicted in every
 * process by the companies trigger on each change of it (the keel_auth channel); the spend is
 * the costs plugin's (tenancy/month-spend.ts), changed in the plugin's own transactions, which cannot
 * notify. This process marks the spend stale after each such transaction it carried
 * (ExtensionHost.invoke), so it reads its own writes; another process shows a new figure
 * within this time.
 */
export const CACHED_SPEND_MS = 1_000;

/** The cache epoch a load began in: a value loaded before an invalidation or a `spendChanged` is not kept. */
export interface CacheStamp { epoch: number; spendChanges: number }

/** What the auth cache offers for company rows (AuthCache.companies and its epoch). */
export interface CompanyRows {
  get(id: string): Row | undefined;
  set(id: string, row: Row, since?: number): void;
  epoch(): number;
}

/**
 * The company rows this process caches for the company guard (readCompany), each with the
 * month-to-date spend it was read with and when.
 */
export class CompanyCache {
  private readonly rows: CompanyRows;
  private readonly spendReadAt = new Map<string, number>();
  private readonly spendChanges = new Map<string, number>();

  constructor(rows: CompanyRows) {
    this.rows = rows;
  }

  get(id: string): Row | undefined {
    return this.rows.get(id);
  }

  /** Read before loading a row or its spend, and pass to `set` / `setSpend`. */
  stamp(id: string): CacheStamp {
    return { epoch: this.rows.epoch(), spendChanges: this.spendChanges.get(id) ?? 0 };
  }

  set(id: string, row: Row, stamp: CacheStamp): void {
    if (!this.unchanged(id, stamp)) return;
    this.rows.set(id, row, stamp.epoch);
    this.spendReadAt.set(id, Date.now());
  }

  spendIsCurrent(id: string): boolean {
    return Date.now() - (this.spendReadAt.get(id) ?? 0) < CACHED_SPEND_MS;
  }

  /** A spend read after `stamp`, onto the cached row (if it is still cached). */
  setSpend(id: string, cents: unknown, stamp: CacheStamp): void {
    const row = this.rows.get(id);
    if (!row || !this.unchanged(id, stamp)) return;
    row.spent_monthly_cents = cents;
    this.spendReadAt.set(id, Date.now());
  }

  /** The company's spend may have changed (a costs plugin transaction committed): read it again next time. */
  spendChanged(id: string): void {
    this.spendChanges.set(id, (this.spendChanges.get(id) ?? 0) + 1);
    this.spendReadAt.delete(id);
  }

  private unchanged(id: string, stamp: CacheStamp): boolean {
    return stamp.epoch === this.rows.epoch() && stamp.spendChanges === (this.spendChanges.get(id) ?? 0);
  }
}

/**
 * After a transaction of a plugin that may write kernel rows (ExtensionHost.invoke): when it
 * wrote some (`wroteKernelRows`), waits for the notifications of its changes, as after a kernel
 * commit; either way marks the company's spend stale, which no notification announces.
 */
export async function afterPluginCommit(db: { afterEveryCommit?: () => Promise<void>; companyCache?: CompanyCache }, companyId: string | null, wroteKernelRows: boolean): Promise<void> {
  if (wroteKernelRows) await db.afterEveryCommit?.();
  if (companyId) db.companyCache?.spendChanged(companyId);
}
