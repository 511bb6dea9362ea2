import type { RouteRequest } from '@keel/sdk/plugin';
import type { CostsContext } from './context.ts';
import { SUMMED } from './spend-source.ts';

const DAY_MS = 86_400_000;
/** Spend Keel measured itself; every other source was reported to it. */
const MEASURED_SOURCE = 'gateway';

/** The `days` UTC calendar days ending today, oldest first, as `YYYY-MM-DD`, and the first one's start. */
export function utcDays(days: number, now = new Date()): { dates: string[]; from: Date } {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const from = new Date(today - (days - 1) * DAY_MS);
  const dates = Array.from({ length: days }, (_, index) => new Date(from.getTime() + index * DAY_MS).toISOString().slice(0, 10));
  return { dates, from };
}

/**
 * Spend per UTC day over the last `days` days (today included), measured and reported apart and
 * per source: read from the daily rollups, which the transaction that accepts an event updates,
 * so today's partial day is exact too. Days without spend are answered with zeros.
 */
export async function dailySpend(req: RouteRequest, ctx: CostsContext) {
  const companyId = req.companyId!;
  const days = Number(req.query.days ?? 14);
  const { dates, from } = utcDays(days);
  const to = new Date(from.getTime() + days * DAY_MS);
  const { rows } = await ctx.db.query(
    `select to_char(day at time zone 'UTC', 'YYYY-MM-DD') as date, source, ${SUMMED}
       from cost_rollups_daily where company_id = $1 and day >= $2 and day < $3 group by 1, 2`,
    [companyId, from.toISOString(), to.toISOString()]);
  const perDay = new Map(dates.map((date) => [date, { date, spendCents: 0, measuredCents: 0, reportedCents: 0, eventCount: 0, bySource: {} as Record<string, number> }]));
  for (const row of rows) {
    const day = perDay.get(String(row.date));
    if (!day) continue;
    const cents = Number(row.cost_cents);
    day.spendCents += cents;
    day.eventCount += Number(row.event_count);
    day.bySource[String(row.source)] = (day.bySource[String(row.source)] ?? 0) + cents;
    if (row.source === MEASURED_SOURCE) day.measuredCents += cents;
    else day.reportedCents += cents;
  }
  const series = [...perDay.values()];
  return {
    companyId, days, from: from.toISOString(), to: to.toISOString(),
    totalCents: series.reduce((sum, day) => sum + day.spendCents, 0),
    series,
  };
}
