import { api } from '../api.ts';
import { BudgetPolicies, type PolicyView } from './budget-policies.tsx';
import { SpendBySource } from './spend-by-source.tsx';
import { ActionButton, ErrorNote, Field, Form, Loading, money, useLoad } from '../ui.tsx';

interface Bar { label: string; cents: number }

/** A horizontal bar chart in SVG (no chart library: a few bars need no more), with the numbers as text for screen readers. */
export function BarChart({ title, bars }: { title: string; bars: Bar[] }) {
  const max = Math.max(1, ...bars.map((bar) => bar.cents));
  const rowHeight = 26;
  return (
    <figure className="chart">
      <figcaption>{title}</figcaption>
      {bars.length === 0 ? <p className="muted">No spend yet.</p> : (
        <svg role="img" aria-label={`${title}: ${bars.map((b) => `${b.label} ${money(b.cents)}`).join(', ')}`} viewBox={`0 0 400 ${bars.length * rowHeight}`} width="100%" preserveAspectRatio="xMinYMin meet">
          {bars.map((bar, index) => (
            <g key={bar.label + index} transform={`translate(0 ${index * rowHeight})`}>
              <text x="0" y="17" className="chart-label">{bar.label.slice(0, 18)}</text>
              <rect x="130" y="4" height="18" width={Math.max(1, (bar.cents / max) * 200)} className="chart-bar" />
              <text x={136 + (bar.cents / max) * 200} y="17" className="chart-value">{money(bar.cents)}</text>
            </g>
          ))}
        </svg>
      )}
    </figure>
  );
}

/** Spend per day for the last `days` days, from the summary route with a range per day. */
function ColumnChart({ title, bars }: { title: string; bars: Bar[] }) {
  const max = Math.max(1, ...bars.map((bar) => bar.cents));
  const width = 400 / Math.max(1, bars.length);
  return (
    <figure className="chart">
      <figcaption>{title}</figcaption>
      <svg role="img" aria-label={`${title}: ${bars.map((b) => `${b.label} ${money(b.cents)}`).join(', ')}`} viewBox="0 0 400 140" width="100%">
        {bars.map((bar, index) => {
          const height = (bar.cents / max) * 110;
          return (
            <g key={bar.label}>
              <rect x={index * width + 2} y={115 - height} width={width - 4} height={Math.max(height, 0.5)} className="chart-bar" />
              {index % 2 === 0 ? <text x={index * width + 2} y="135" className="chart-axis">{bar.label}</text> : null}
            </g>
          );
        })}
      </svg>
    </figure>
  );
}

const DAYS = 14;

interface Incident { id: string; scopeType: string; scopeId: string; status: string; thresholdType: string; amountObserved: number; amountLimit: number; createdAt: string }
interface Overview { policies: PolicyView[]; activeIncidents: Incident[]; pausedAgentCount: number; pausedProjectCount?: number }

export function CostsPage({ companyId }: { companyId: string }) {
  const base = `/api/companies/${companyId}`;
  const summary = useLoad(() => api.get<{ spendCents: number; budgetCents: number; utilizationPercent: number }>(`${base}/costs/summary`), [companyId]);
  const byAgent = useLoad(() => api.get<Array<{ agentId: string; agentName: string | null; spendCents: number }>>(`${base}/costs/by-agent`), [companyId]);
  const byProvider = useLoad(() => api.get<Array<{ provider: string; spendCents: number }>>(`${base}/costs/by-provider`), [companyId]);
  const byProject = useLoad(() => api.get<Array<{ projectId: string | null; projectName?: string | null; spendCents: number }>>(`${base}/costs/by-project`), [companyId]);
  const daily = useLoad(async () => {
    const today = new Date();
    today.setUTCHours(0, 0, 0, 0);
    const days = Array.from({ length: DAYS }, (_, index) => new Date(today.getTime() - (DAYS - 1 - index) * 86_400_000));
    return Promise.all(days.map(async (day) => {
      const to = new Date(day.getTime() + 86_400_000 - 1);
      const answer = await api.get<{ spendCents: number }>(`${base}/costs/summary`, { from: day.toISOString(), to: to.toISOString() });
      return { label: `${day.getUTCMonth() + 1}/${day.getUTCDate()}`, cents: answer.spendCents };
    }));
  }, [companyId]);
  const overview = useLoad(() => api.get<Overview>(`${base}/budgets/overview`), [companyId]);
  const company = useLoad(() => api.get<{ name: string }>(base), [companyId]);
  const reload = async () => { await Promise.all([summary.reload(), overview.reload()]); };
  return (
    <section>
      <h1>Costs</h1>
      {summary.loading && !summary.data ? <Loading what="costs" /> : null}
      <ErrorNote error={summary.error} />
      {summary.data ? (
        <dl className="facts">
          <div><dt>Spend this month</dt><dd data-testid="month-spend">{money(summary.data.spendCents)}</dd></div>
          <div><dt>Monthly budget</dt><dd>{summary.data.budgetCents ? money(summary.data.budgetCents) : 'none'}</dd></div>
          <div><dt>Used</dt><dd>{summary.data.utilizationPercent}%</dd></div>
        </dl>
      ) : null}
      <div className="grid2">
        <ColumnChart title={`Spend per day, last ${DAYS} days`} bars={daily.data ?? []} />
        <BarChart title="By agent" bars={(byAgent.data ?? []).map((row) => ({ label: row.agentName ?? row.agentId.slice(0, 8), cents: row.spendCents }))} />
        <BarChart title="By provider" bars={(byProvider.data ?? []).map((row) => ({ label: row.provider, cents: row.spendCents }))} />
        <BarChart title="By project" bars={(byProject.data ?? []).map((row) => ({ label: row.projectName ?? row.projectId?.slice(0, 8) ?? 'no project', cents: row.spendCents }))} />
      </div>
      <h2>Spend by source</h2>
      <SpendBySource companyId={companyId} />
      <h2>Budgets</h2>
      <ErrorNote error={overview.error} />
      <div className="grid2">
        <div className="card">
          <Form label="Company budget" submit="Set company budget" onSubmit={async (fields) => {
            await api.patch(`${base}/budgets`, { budgetMonthlyCents: Math.round(Number(fields.get('dollars')) * 100) });
            await reload();
          }}>
            <Field label="Monthly company budget in dollars (0: none)" name="dollars" type="number" step="0.01" required />
          </Form>
        </div>
        <BudgetPolicies companyId={companyId} companyName={company.data?.name ?? ''} policies={overview.data?.policies ?? []} onChange={reload} />
      </div>
      <h2>Incidents</h2>
      {(overview.data?.activeIncidents ?? []).length === 0 ? <p className="muted">No open incidents.</p> : (
        <ul className="rows" aria-label="Open budget incidents">{overview.data!.activeIncidents.map((incident) => (
          <li key={incident.id} className="row-item incident">
            <strong>{incident.thresholdType === 'hard' ? 'Hard stop' : 'Warning'}</strong> {incident.scopeType} {incident.scopeId.slice(0, 8)}: {money(incident.amountObserved)} of {money(incident.amountLimit)}
            <ActionButton action={async () => { await api.post(`${base}/budget-incidents/${incident.id}/resolve`, { action: 'keep_paused' }); await reload(); }}>Keep paused</ActionButton>
            <ActionButton kind="primary" action={async () => { await api.post(`${base}/budget-incidents/${incident.id}/resolve`, { action: 'raise_budget_and_resume', amount: incident.amountLimit * 2 }); await reload(); }}>Double budget and resume</ActionButton>
          </li>))}
        </ul>
      )}
      {overview.data ? <p className="muted">{overview.data.pausedAgentCount} agents and {overview.data.pausedProjectCount ?? 0} projects paused by budgets.</p> : null}
    </section>
  );
}
