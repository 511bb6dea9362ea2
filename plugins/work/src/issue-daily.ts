import type { RouteRequest } from '@keel/sdk/plugin';
import type { WorkContext } from './context.ts';

const DAY_MS = 86_400_000;
const STATUSES = ['backlog', 'todo', 'in_progress', 'in_review', 'blocked', 'done', 'cancelled'] as const;

const zero = (): Record<string, number> => Object.fromEntries(STATUSES.map((status) => [status, 0]));

/**
 * The company's visible issues by status now, and per UTC day over the last `days` days (today
 * included): the issues created that day, by the status they have now, and the issues completed
 * that day. Hidden issues (a plugin's internal tasks) are left out, as the issue list leaves them.
 */
export async function dailyIssues(req: RouteRequest, ctx: WorkContext) {
  const days = Number(req.query.days ?? 14);
  const now = new Date();
  const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - (days - 1) * DAY_MS);
  const to = new Date(from.getTime() + days * DAY_MS);
  const range = [req.companyId, from.toISOString(), to.toISOString()];
  const { rows: current } = await ctx.db.query(
    'select status, count(*)::int as n from issues where company_id = $1 and hidden_at is null group by status', [req.companyId]);
  const { rows: created } = await ctx.db.query(
    `select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD') as date, status, count(*)::int as n
       from issues where company_id = $1 and hidden_at is null and created_at >= $2 and created_at < $3 group by 1, 2`, range);
  const { rows: completed } = await ctx.db.query(
    `select to_char(completed_at at time zone 'UTC', 'YYYY-MM-DD') as date, count(*)::int as n
       from issues where company_id = $1 and hidden_at is null and completed_at >= $2 and completed_at < $3 group by 1`, range);
  const byStatus = zero();
  for (const row of current) byStatus[String(row.status)] = Number(row.n);
  const series = Array.from({ length: days }, (_, index) => ({
    date: new Date(from.getTime() + index * DAY_MS).toISOString().slice(0, 10), created: 0, completed: 0, byStatus: zero(),
  }));
  const day = new Map(series.map((entry) => [entry.date, entry]));
  for (const row of created) {
    const entry = day.get(String(row.date));
    if (!entry) continue;
    entry.created += Number(row.n);
    entry.byStatus[String(row.status)] = Number(row.n);
  }
  for (const row of completed) {
    const entry = day.get(String(row.date));
    if (entry) entry.completed = Number(row.n);
  }
  return {
    companyId: req.companyId, days, from: from.toISOString(), to: to.toISOString(),
    byStatus, open: STATUSES.filter((s) => s !== 'done' && s !== 'cancelled').reduce((sum, s) => sum + byStatus[s]!, 0),
    series,
  };
}
