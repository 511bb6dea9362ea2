import { api, type Agent, type Issue } from '../api.ts';
import { LIVE_MS, useEvery } from '../live.ts';
import { Link } from '../router.tsx';
import { PluginLaunchers, PluginSlots } from '../slots.tsx';
import { ErrorNote, Loading, money, Status, useLoad, when } from '../ui.tsx';
import { AgentCards, type ActiveRun, type IssueSummary } from './dashboard-agents.tsx';
import { DashboardCharts, DAYS, type IssuesDaily } from './dashboard-charts.tsx';
import { StopBanners, stopsOf, type CompanyView, type Incident, type Project } from './dashboard-stops.tsx';

interface Approval { id: string; type: string; status: string; payload: Record<string, unknown> | null; createdAt: string }
interface SourceRow { source: string; spendCents: number }

/** The issues the active runs work on, each asked once per refresh (a handful at most). */
async function issuesOf(runs: ActiveRun[]): Promise<Map<string, IssueSummary>> {
  const ids = [...new Set(runs.map((run) => run.issueId).filter((id): id is string => Boolean(id)))];
  const found = await Promise.all(ids.map((id) => api.get<IssueSummary>(`/api/issues/${id}`).catch(() => null)));
  return new Map(found.filter((issue): issue is IssueSummary => issue !== null).map((issue) => [issue.id, issue]));
}

function monthStart(): string {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString();
}

/**
 * The company's first page: who is working on what (live), what stopped and how to resume it,
 * the month's spend against the budget, what waits for the board, the open work, and 14 days of
 * runs, spend and issues. Everything comes from the API the command line uses.
 */
export function DashboardPage({ companyId }: { companyId: string }) {
  const base = `/api/companies/${companyId}`;
  const company = useLoad(() => api.get<CompanyView>(base), [companyId]);
  const agents = useLoad(() => api.get<Agent[]>(`${base}/agents`), [companyId]);
  const active = useLoad(async () => {
    const [running, queued] = await Promise.all(['running', 'queued'].map((status) => api.get<{ runs: ActiveRun[] }>(`${base}/heartbeat-runs`, { status, limit: 200 })));
    const runs = [...running!.runs, ...queued!.runs];
    return { runs, issues: await issuesOf(runs) };
  }, [companyId]);
  const overview = useLoad(() => api.get<{ activeIncidents: Incident[] }>(`${base}/budgets/overview`), [companyId]);
  const projects = useLoad(() => api.get<Project[]>(`${base}/projects`), [companyId]);
  const approvals = useLoad(() => api.get<Approval[]>(`${base}/approvals`, { status: 'pending' }), [companyId]);
  const spend = useLoad(() => api.get<SourceRow[]>(`${base}/costs/by-source`, { from: monthStart() }), [companyId]);
  const issues = useLoad(() => api.get<IssuesDaily>(`${base}/issues/daily`, { days: DAYS }), [companyId]);
  const blocked = useLoad(() => api.get<Issue[]>(`${base}/issues`, { status: 'blocked', limit: 5 }), [companyId]);
  const live = [company, agents, active, overview, projects, approvals];
  const refresh = async () => { await Promise.all([...live, spend, issues, blocked].map((part) => part.reload())); };
  useEvery(LIVE_MS, () => { for (const part of live) void part.reload(); });

  if (company.loading && !company.data) return <Loading what="the dashboard" />;
  if (!company.data) return <ErrorNote error={company.error} />;
  const c = company.data;
  const stops = stopsOf(companyId, c, agents.data ?? [], projects.data ?? [], overview.data?.activeIncidents ?? []);
  const measured = (spend.data ?? []).filter((row) => row.source === 'gateway').reduce((sum, row) => sum + row.spendCents, 0);
  const reported = (spend.data ?? []).filter((row) => row.source !== 'gateway').reduce((sum, row) => sum + row.spendCents, 0);
  const pending = approvals.data ?? [];
  const nothingYet = agents.data?.length === 0 && issues.data && Object.values(issues.data.byStatus).every((n) => n === 0);
  return (
    <section className="dashboard">
      <div className="title-row">
        <h1>{c.name}</h1>
        <Status value={c.status} />
        <Link to={`/companies/${companyId}/settings`}>Settings</Link>
      </div>
      <PluginLaunchers placement="company-toolbar" companyId={companyId} />
      <ErrorNote error={agents.error ?? active.error ?? projects.error ?? approvals.error} />
      <StopBanners companyId={companyId} stops={stops} onChange={refresh} />
      {nothingYet ? (
        <div className="card empty" data-testid="empty-company">
          <h2>Nothing is happening here yet</h2>
          <p>A company works through its agents: hire an agent, write an issue and assign it to the agent; the agent wakes and its run shows up here.</p>
          <ol>
            <li><Link to={`/companies/${companyId}/agents`}>Hire the first agent</Link></li>
            <li><Link to={`/companies/${companyId}/issues`}>Write the first issue</Link> and assign it</li>
            <li><Link to={`/companies/${companyId}/costs`}>Set a monthly budget</Link> (optional)</li>
          </ol>
        </div>
      ) : null}
      <div className="grid2">
        <div className="card">
          <h2>Spend this month</h2>
          <SpendMeter spent={c.spentMonthlyCents} budget={c.budgetMonthlyCents} />
          <dl className="facts">
            <div><dt>Measured by the gateway</dt><dd data-testid="dash-measured">{money(measured)}</dd></div>
            <div><dt>Reported (self-reported, adapters, runners)</dt><dd data-testid="dash-reported">{money(reported)}</dd></div>
          </dl>
          <Link to={`/companies/${companyId}/costs`}>Costs and budgets</Link>
        </div>
        <div className="card">
          <h2>Approvals</h2>
          {approvals.data ? <p data-testid="pending-approvals"><strong>{pending.length}</strong> {pending.length === 1 ? 'approval waits' : 'approvals wait'} for the board.</p> : null}
          {pending.length ? (
            <ul className="rows" aria-label="Newest pending approvals">{pending.slice(0, 3).map((approval) => (
              <li key={approval.id} className="row-item">
                <Link to={`/companies/${companyId}/approvals`}>{approval.type.replace(/_/g, ' ')}{approval.payload?.name ? `: ${String(approval.payload.name)}` : ''}</Link>
                <span className="muted">{when(approval.createdAt)}</span>
              </li>))}
            </ul>
          ) : null}
          <Link to={`/companies/${companyId}/approvals`}>All approvals</Link>
        </div>
        <div className="card">
          <h2>Work</h2>
          {issues.data ? <OpenWork companyId={companyId} daily={issues.data} blocked={blocked.data ?? []} /> : <ErrorNote error={issues.error} />}
        </div>
      </div>
      <h2>Agents</h2>
      {agents.data && active.data ? <AgentCards companyId={companyId} agents={agents.data} runs={active.data.runs} issues={active.data.issues} /> : <Loading what="agents" />}
      <p className="muted live-note" role="status" data-testid="live-note">{active.data ? `${active.data.runs.length} ${active.data.runs.length === 1 ? 'run' : 'runs'} in progress or queued; refreshed every few seconds.` : ''}</p>
      <h2>Last {DAYS} days</h2>
      <DashboardCharts companyId={companyId} issues={issues.data} />
      <PluginSlots slot="company-dashboard" companyId={companyId} />
    </section>
  );
}

/** The month's spend against the budget, as a bar and in words (no budget: the spend alone). */
function SpendMeter({ spent, budget }: { spent: number; budget: number }) {
  const share = budget > 0 ? Math.min(1, spent / budget) : 0;
  const text = budget > 0 ? `${money(spent)} of ${money(budget)} (${Math.round((spent / budget) * 100)}%)` : `${money(spent)}, no monthly budget`;
  return (
    <>
      <p className="spend" data-testid="month-spend">{text}</p>
      {budget > 0 ? (
        <svg className="meter" role="img" aria-label={`Budget used: ${text}`} viewBox="0 0 200 10" width="100%" preserveAspectRatio="none">
          <rect x="0" y="0" width="200" height="10" className="meter-track" />
          <rect x="0" y="0" width={share * 200} height="10" className={share >= 1 ? 'meter-over' : share >= 0.8 ? 'meter-warn' : 'meter-fill'} />
        </svg>
      ) : null}
    </>
  );
}

const OPEN = ['backlog', 'todo', 'in_progress', 'in_review', 'blocked'] as const;

function OpenWork({ companyId, daily, blocked }: { companyId: string; daily: IssuesDaily; blocked: Issue[] }) {
  return (
    <>
      <p data-testid="open-issues"><strong>{daily.open}</strong> open {daily.open === 1 ? 'issue' : 'issues'}, <strong>{daily.byStatus.blocked ?? 0}</strong> blocked.</p>
      <ul className="status-counts" aria-label="Issues by status">
        {OPEN.map((status) => <li key={status}><Status value={status} /> {daily.byStatus[status] ?? 0}</li>)}
        <li><Status value="done" /> {daily.byStatus.done ?? 0}</li>
      </ul>
      {blocked.length ? (
        <ul className="rows" aria-label="Blocked issues">{blocked.map((issue) => (
          <li key={issue.id} className="row-item"><Link to={`/companies/${companyId}/issues/${issue.id}`}>{issue.identifier} {issue.title}</Link></li>))}
        </ul>
      ) : null}
      <Link to={`/companies/${companyId}/issues`}>All issues</Link>
    </>
  );
}
