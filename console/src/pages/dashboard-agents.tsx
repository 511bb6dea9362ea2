import type { Agent } from '../api.ts';
import { Link } from '../router.tsx';
import { money, Status, when } from '../ui.tsx';
import { reasonText } from './dashboard-stops.tsx';

export interface ActiveRun { id: string; agentId: string; status: string; issueId: string | null; invocationSource: string; createdAt: string; startedAt: string | null }
export interface IssueSummary { id: string; identifier: string; title: string; status: string }

/**
 * One card per agent (terminated ones left out): its status, the run it is in (or waits for)
 * and the issue that run works on, and its month's spend against its budget.
 */
export function AgentCards({ companyId, agents, runs, issues }: { companyId: string; agents: Agent[]; runs: ActiveRun[]; issues: Map<string, IssueSummary> }) {
  const shown = agents.filter((agent) => agent.status !== 'terminated');
  if (shown.length === 0) {
    return (
      <div className="card empty" data-testid="no-agents">
        <p><strong>No agents yet.</strong> An agent is who does the company's work: hire the first one, then give it an issue.</p>
        <p><Link to={`/companies/${companyId}/agents`}>Hire an agent</Link> · <Link to={`/companies/${companyId}/issues`}>Write an issue</Link></p>
      </div>
    );
  }
  return (
    <ul className="agent-cards" aria-label="Agents">
      {shown.map((agent) => {
        // The running run first; else the oldest queued one.
        const mine = runs.filter((run) => run.agentId === agent.id).sort((a, b) => (a.status === b.status ? a.createdAt.localeCompare(b.createdAt) : a.status === 'running' ? -1 : 1));
        const run = mine[0];
        const issue = run?.issueId ? issues.get(run.issueId) : undefined;
        return (
          <li key={agent.id} className="agent-card" data-testid={`agent-card-${agent.id}`}>
            <div className="title-row">
              <h3><Link to={`/companies/${companyId}/agents/${agent.id}`}>{agent.name}</Link></h3>
              <Status value={run?.status === 'running' ? 'running' : agent.status} />
            </div>
            <p className="muted">{agent.title ?? agent.role}</p>
            {run ? (
              <p>
                {run.status === 'running' ? 'Working' : 'Waiting to start'}
                {run.issueId ? <> on {issue ? <Link to={`/companies/${companyId}/issues/${issue.id}`}>{issue.identifier} {issue.title}</Link> : 'an issue'}</> : ` (${run.invocationSource.replace(/_/g, ' ')})`}
                {' · '}<Link to={`/companies/${companyId}/runs/${run.id}`} aria-label={`Run ${run.id.slice(0, 8)} of ${agent.name}`}>run {run.id.slice(0, 8)}</Link>
                <span className="muted"> since {when(run.startedAt ?? run.createdAt)}</span>
              </p>
            ) : agent.status === 'paused' ? <p>Paused: {reasonText(agent.pauseReason)}.</p>
              : agent.status === 'pending_approval' ? <p>Waits for the board to approve the hire.</p>
                : <p className="muted">No run in progress.</p>}
            <p className="muted">{money(agent.spentMonthlyCents)} this month{agent.budgetMonthlyCents ? ` of ${money(agent.budgetMonthlyCents)}` : ''}</p>
          </li>
        );
      })}
    </ul>
  );
}
