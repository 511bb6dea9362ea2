import type { RouteRequest } from '@keel/sdk/plugin';
import type { RuntimeContext } from './context.ts';

const DAY_MS = 86_400_000;
/** The outcomes a run ends with, as the API names them in a day's counts. */
const OUTCOMES = { succeeded: 'succeeded', failed: 'failed', cancelled: 'cancelled', timed_out: 'timedOut', lost: 'lost' } as const;
type Counts = Record<(typeof OUTCOMES)[keyof typeof OUTCOMES], number>;

const zero = (): Counts => ({ succeeded: 0, failed: 0, cancelled: 0, timedOut: 0, lost: 0 });

/**
 * Of the runs that ran to an end, the share that succeeded: a cancelled run was stopped by
 * someone, not failed, so it counts for neither side. Null when no run could succeed or fail.
 */
function successRate(counts: Counts): number | null {
  const decided = counts.succeeded + counts.failed + counts.timedOut + counts.lost;
  return decided === 0 ? null : Math.round((counts.succeeded / decided) * 10_000) / 10_000;
}

/**
 * Runs that ended per UTC day over the last `days` days (today included), by outcome, with the
 * success rate per day and over the whole range. A run counts on the day it finished (its last
 * update for a run that ended without a finish time).
 */
export async function dailyRunsRoute(req: RouteRequest, ctx: RuntimeContext) {
  const days = Number(req.query.days ?? 14);
  const now = new Date();
  const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - (days - 1) * DAY_MS);
  const to = new Date(from.getTime() + days * DAY_MS);
  const { rows } = await ctx.db.query(
    `select to_char(coalesce(finished_at, updated_at) at time zone 'UTC', 'YYYY-MM-DD') as date, status, count(*)::int as n
       from runs
      where company_id = $1 and status in (${Object.keys(OUTCOMES).map((status) => `'${status}'`).join(', ')})
        and coalesce(finished_at, updated_at) >= $2 and coalesce(finished_at, updated_at) < $3
      group by 1, 2`,
    [req.companyId, from.toISOString(), to.toISOString()]);
  const perDay = new Map<string, Counts>();
  for (let index = 0; index < days; index++) perDay.set(new Date(from.getTime() + index * DAY_MS).toISOString().slice(0, 10), zero());
  const totals = zero();
  for (const row of rows) {
    const counts = perDay.get(String(row.date));
    const outcome = OUTCOMES[row.status as keyof typeof OUTCOMES];
    if (!counts || !outcome) continue;
    counts[outcome] += Number(row.n);
    totals[outcome] += Number(row.n);
  }
  const total = (counts: Counts) => Object.values(counts).reduce((sum, n) => sum + n, 0);
  return {
    companyId: req.companyId, days, from: from.toISOString(), to: to.toISOString(),
    totals: { ...totals, total: total(totals), successRate: successRate(totals) },
    series: [...perDay].map(([date, counts]) => ({ date, ...counts, total: total(counts), successRate: successRate(counts) })),
  };
}
