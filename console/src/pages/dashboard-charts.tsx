import { api } from '../api.ts';
import { RateLine, StackedColumns } from '../charts.tsx';
import { ErrorNote, money, useLoad } from '../ui.tsx';

export const DAYS = 14;

type RunCounts = { succeeded: number; failed: number; cancelled: number; timedOut: number; lost: number; total: number; successRate: number | null };
interface RunsDaily { series: Array<{ date: string } & RunCounts>; totals: RunCounts }
interface SpendDaily { series: Array<{ date: string; spendCents: number; measuredCents: number; reportedCents: number }> }
export interface IssuesDaily { byStatus: Record<string, number>; open: number; series: Array<{ date: string; created: number; completed: number; byStatus: Record<string, number> }> }

const ISSUE_SERIES = [['done', 'Done', 0], ['in_review', 'In review', 3], ['in_progress', 'In progress', 5], ['todo', 'To do', 6], ['blocked', 'Blocked', 1], ['backlog', 'Backlog', 4], ['cancelled', 'Cancelled', 2]] as const;

/**
 * The last 14 days from the per-day routes of the plugins that own the data (runtime for runs,
 * costs for spend, work for issues): the same answers `keel dashboard` prints.
 */
export function DashboardCharts({ companyId, issues }: { companyId: string; issues: IssuesDaily | undefined }) {
  const base = `/api/companies/${companyId}`;
  const runs = useLoad(() => api.get<RunsDaily>(`${base}/heartbeat-runs/daily`, { days: DAYS }), [companyId]);
  const spend = useLoad(() => api.get<SpendDaily>(`${base}/costs/daily`, { days: DAYS }), [companyId]);
  const runDates = runs.data?.series.map((day) => day.date) ?? [];
  const spendDates = spend.data?.series.map((day) => day.date) ?? [];
  const issueDates = issues?.series.map((day) => day.date) ?? [];
  return (
    <>
      <ErrorNote error={runs.error ?? spend.error} />
      <div className="grid2 charts">
        {runs.data ? (
          <StackedColumns title={`Runs by outcome, last ${DAYS} days`} dates={runDates} empty="No run has finished in these days."
            series={[
              { key: 'succeeded', label: 'Succeeded', values: runs.data.series.map((d) => d.succeeded) },
              { key: 'failed', label: 'Failed', values: runs.data.series.map((d) => d.failed) },
              { key: 'timedOut', label: 'Timed out', values: runs.data.series.map((d) => d.timedOut) },
              { key: 'lost', label: 'Lost', values: runs.data.series.map((d) => d.lost) },
              { key: 'cancelled', label: 'Cancelled', values: runs.data.series.map((d) => d.cancelled) },
            ]} />
        ) : null}
        {runs.data ? <RateLine title={`Success rate, last ${DAYS} days`} dates={runDates} rates={runs.data.series.map((d) => d.successRate)} overall={runs.data.totals.successRate} /> : null}
        {spend.data ? (
          <StackedColumns title={`Spend per day, last ${DAYS} days`} dates={spendDates} format={money} empty="No spend in these days."
            series={[
              { key: 'measured', label: 'Measured (gateway)', tone: 5, values: spend.data.series.map((d) => d.measuredCents) },
              { key: 'reported', label: 'Reported', tone: 3, values: spend.data.series.map((d) => d.reportedCents) },
            ]} />
        ) : null}
        {issues ? (
          <StackedColumns title={`Issues created per day by status now, last ${DAYS} days`} dates={issueDates} empty="No issue was created in these days."
            series={ISSUE_SERIES.map(([key, label, tone]) => ({ key, label, tone, values: issues.series.map((d) => d.byStatus[key] ?? 0) }))} />
        ) : null}
      </div>
    </>
  );
}
