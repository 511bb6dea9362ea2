import { KeelApiError } from '../../client/index.ts';
import { CliError, clientFor, companyIdFor, emit, type GlobalOptions } from '../output.ts';
import { path } from './agent-ref.ts';

/**
 * `keel dashboard`: what the console's dashboard shows, from the same routes (docs/api/
 * companies.md, runtime.md, costs.md, work.md, approvals.md): agents and their runs in progress,
 * hard stops and paused scopes, the month's spend against the budget, pending approvals, open
 * and blocked work, and per-day runs, spend and issues.
 */
type Options = GlobalOptions & Record<string, any>;
type Json = Record<string, any>;

const dollars = (cents: unknown) => `$${(Number(cents ?? 0) / 100).toFixed(2)}`;
const percent = (rate: unknown) => (typeof rate === 'number' ? `${Math.round(rate * 100)}%` : '-');

function daysOf(value: unknown): number {
  const days = value === undefined ? 14 : Number(value);
  if (!Number.isInteger(days) || days < 1 || days > 90) throw new CliError('usage', `--days takes a whole number from 1 to 90, got ${JSON.stringify(value)}`);
  return days;
}

export async function dashboardCommand(options: Options): Promise<void> {
  const client = clientFor(options);
  const companyId = companyIdFor(options);
  const days = daysOf(options.days);
  const base = path`/api/companies/${companyId}`;
  const monthStart = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1)).toISOString();
  const [company, agents, running, queued, overview, approvals, bySource, issues, runs, spend] = await Promise.all([
    client.get<Json>(base), client.get<Json[]>(`${base}/agents`),
    client.get<Json>(`${base}/heartbeat-runs`, { status: 'running', limit: 200 }), client.get<Json>(`${base}/heartbeat-runs`, { status: 'queued', limit: 200 }),
    // The budget overview is the board's: an agent's key sees no incidents rather than nothing at all.
    client.get<Json>(`${base}/budgets/overview`).catch((error) => { if (error instanceof KeelApiError && error.status === 403) return { activeIncidents: [] }; throw error; }),
    client.get<Json[]>(`${base}/approvals`, { status: 'pending' }),
    client.get<Json[]>(`${base}/costs/by-source`, { from: monthStart }),
    client.get<Json>(`${base}/issues/daily`, { days }), client.get<Json>(`${base}/heartbeat-runs/daily`, { days }), client.get<Json>(`${base}/costs/daily`, { days }),
  ]);
  const activeRuns = [...running.runs, ...queued.runs] as Json[];
  const measuredCents = bySource.filter((row) => row.source === 'gateway').reduce((sum, row) => sum + Number(row.spendCents), 0);
  const reportedCents = bySource.filter((row) => row.source !== 'gateway').reduce((sum, row) => sum + Number(row.spendCents), 0);
  const data = {
    company, agents, activeRuns, incidents: overview.activeIncidents, pendingApprovals: approvals,
    monthSpend: { spentCents: company.spentMonthlyCents, budgetCents: company.budgetMonthlyCents, measuredCents, reportedCents },
    issues, runs, spend,
  };
  const lines = [`${company.name} (${company.status}${company.status === 'paused' ? `: ${company.pauseReason ?? 'no reason given'}` : ''})`, ''];
  lines.push('Agents:');
  for (const agent of agents.filter((a) => a.status !== 'terminated')) {
    const run = activeRuns.find((r) => r.agentId === agent.id);
    const doing = run ? `${run.status} run ${run.id}${run.issueId ? ` on issue ${run.issueId}` : ''}` : agent.status === 'paused' ? `paused: ${agent.pauseReason ?? ''}` : agent.status;
    lines.push(`  ${agent.name}: ${doing}`);
  }
  if (!agents.length) lines.push('  none yet: keel agent hire --help');
  const stops = [...agents.filter((a) => a.status === 'paused').map((a) => `agent ${a.name} paused (${a.pauseReason ?? 'no reason given'}): keel agent resume ${a.id}`),
    ...(overview.activeIncidents as Json[]).map((i) => `${i.thresholdType === 'hard' ? 'hard stop' : 'warning'} on ${i.scopeType} ${i.scopeId}: ${dollars(i.amountObserved)} of ${dollars(i.amountLimit)}: keel budget resolve ${i.id} --action raise_budget_and_resume --amount <cents>`)];
  if (company.status === 'paused') stops.unshift(`company paused (${company.pauseReason ?? 'no reason given'})`);
  lines.push('', `Stops: ${stops.length ? '' : 'none'}`, ...stops.map((stop) => `  ${stop}`));
  lines.push('', `Spend this month: ${dollars(company.spentMonthlyCents)}${company.budgetMonthlyCents ? ` of ${dollars(company.budgetMonthlyCents)}` : ' (no budget)'}; measured ${dollars(measuredCents)}, reported ${dollars(reportedCents)}`);
  lines.push(`Pending approvals: ${approvals.length}${approvals[0] ? ` (newest ${approvals[0].type} ${approvals[0].id})` : ''}`);
  lines.push(`Issues: ${issues.open} open, ${issues.byStatus.blocked} blocked; ${Object.entries(issues.byStatus).map(([status, n]) => `${status} ${n}`).join(', ')}`);
  lines.push('', `Last ${days} days (UTC):`, '  DATE        RUNS  OK  FAILED  SUCCESS  SPEND     ISSUES+');
  runs.series.forEach((day: Json, index: number) => {
    lines.push(`  ${day.date}  ${String(day.total).padStart(4)}  ${String(day.succeeded).padStart(2)}  ${String(day.failed + day.timedOut + day.lost).padStart(6)}  ${percent(day.successRate).padStart(7)}  ${dollars(spend.series[index]?.spendCents).padStart(8)}  ${String(issues.series[index]?.created ?? 0).padStart(7)}`);
  });
  lines.push(`  success rate over the days: ${percent(runs.totals.successRate)}`);
  emit(options, lines, data);
}
