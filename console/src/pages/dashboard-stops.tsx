import { useState } from 'react';
import { api, type Agent } from '../api.ts';
import { Link } from '../router.tsx';
import { ActionButton, ErrorNote, money } from '../ui.tsx';

export interface Incident { id: string; scopeType: 'company' | 'agent' | 'project'; scopeId: string; thresholdType: 'soft' | 'hard'; windowKind: string; amountObserved: number; amountLimit: number; createdAt: string }
export interface CompanyView { id: string; name: string; status: string; pauseReason: string | null; pausedAt: string | null; budgetMonthlyCents: number; spentMonthlyCents: number }
export interface Project { id: string; name: string; status: string; pausedAt: string | null; pauseReason: string | null }

/** Why a scope is paused, in words: the reasons Keel itself gives, and any other as it was given. */
const REASONS: Record<string, string> = {
  manual: 'paused by the board',
  budget_hard_stop: 'its budget hard stop was reached',
  company_archived: 'the company is archived',
  imported: 'imported with a company package: its configuration waits for the board',
  managed: 'made for a plugin: its configuration waits for the board',
};
export const reasonText = (reason: string | null) => (reason ? REASONS[reason] ?? reason : 'no reason was given');

interface Stop { key: string; scope: Incident['scopeType']; scopeId: string; name: string; to: string; paused: boolean; reason: string | null; incident: Incident | undefined }

/**
 * Every paused scope (the company, an agent, a project) and every scope with an open budget
 * incident, each once: a paused scope names its reason and, when a budget stopped it, its
 * incident (the hard one before the warning); incidents on a scope that still works (a warning)
 * stand on their own, one banner for the scope.
 */
export function stopsOf(companyId: string, company: CompanyView | undefined, agents: Agent[], projects: Project[], incidents: Incident[]): Stop[] {
  const base = `/companies/${companyId}`;
  const stops: Stop[] = [];
  const incidentOf = (scope: string, id: string) => incidents.find((i) => i.scopeType === scope && i.scopeId === id && i.thresholdType === 'hard')
    ?? incidents.find((i) => i.scopeType === scope && i.scopeId === id);
  if (company?.status === 'paused') stops.push({ key: `company:${company.id}`, scope: 'company', scopeId: company.id, name: company.name, to: `${base}/costs`, paused: true, reason: company.pauseReason, incident: incidentOf('company', company.id) });
  for (const agent of agents.filter((a) => a.status === 'paused')) {
    stops.push({ key: `agent:${agent.id}`, scope: 'agent', scopeId: agent.id, name: agent.name, to: `${base}/agents/${agent.id}`, paused: true, reason: agent.pauseReason, incident: incidentOf('agent', agent.id) });
  }
  for (const project of projects.filter((p) => p.pausedAt)) {
    stops.push({ key: `project:${project.id}`, scope: 'project', scopeId: project.id, name: project.name, to: `${base}/projects/${project.id}`, paused: true, reason: project.pauseReason, incident: incidentOf('project', project.id) });
  }
  // One banner per scope: a paused scope's banner holds its incidents (a hard stop passed the warning too).
  const covered = new Set(stops.map((stop) => `${stop.scope}:${stop.scopeId}`));
  for (const candidate of incidents) {
    if (covered.has(`${candidate.scopeType}:${candidate.scopeId}`)) continue;
    covered.add(`${candidate.scopeType}:${candidate.scopeId}`);
    const incident = incidentOf(candidate.scopeType, candidate.scopeId)!;
    const name = incident.scopeType === 'company' ? company?.name : incident.scopeType === 'agent'
      ? agents.find((a) => a.id === incident.scopeId)?.name : projects.find((p) => p.id === incident.scopeId)?.name;
    stops.push({ key: `incident:${incident.id}`, scope: incident.scopeType, scopeId: incident.scopeId, name: name ?? incident.scopeId.slice(0, 8), to: `${base}/costs`, paused: false, reason: null, incident });
  }
  return stops;
}

/** A new budget above what the window has already spent: double the limit, or the spend plus half again when that is more, in whole dollars. */
function suggestedBudget(incident: Incident): number {
  return Math.ceil(Math.max(incident.amountLimit * 2, incident.amountObserved * 1.5 + 1, 100) / 100) * 100;
}

function RaiseBudget({ companyId, incident, label, onDone }: { companyId: string; incident: Incident; label: string; onDone: () => Promise<void> }) {
  const [dollars, setDollars] = useState((suggestedBudget(incident) / 100).toFixed(2));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  return (
    <form className="stop-action" aria-label={`Raise the budget of ${label}`} onSubmit={async (event) => {
      event.preventDefault();
      setBusy(true);
      setError(null);
      try {
        await api.post(`/api/companies/${companyId}/budget-incidents/${incident.id}/resolve`, { action: 'raise_budget_and_resume', amount: Math.round(Number(dollars) * 100) });
        await onDone();
      } catch (caught) { setError(caught); } finally { setBusy(false); }
    }}>
      <label className="field inline"><span>New budget in dollars</span>
        <input type="number" min="0" step="0.01" required value={dollars} onChange={(event) => setDollars(event.target.value)} />
      </label>
      <button type="submit" className="primary" disabled={busy} aria-busy={busy}>{busy ? <span className="spinner" aria-hidden="true" /> : null}Raise budget and resume</button>
      <ErrorNote error={error} />
    </form>
  );
}

/** What resolves a pause that no budget caused: the board's resume, or the approval of a configuration the board has not seen. */
function Resume({ stop, onDone }: { stop: Stop; onDone: () => Promise<void> }) {
  if (stop.scope === 'company') {
    return <ActionButton kind="primary" label={`Resume company ${stop.name}`} action={async () => { await api.patch(`/api/companies/${stop.scopeId}`, { status: 'active' }); await onDone(); }}>Resume company</ActionButton>;
  }
  if (stop.scope === 'agent' && (stop.reason === 'imported' || stop.reason === 'managed')) return <Link to={stop.to}>Review and approve {stop.name}</Link>;
  if (stop.scope === 'agent') {
    return <ActionButton kind="primary" label={`Resume agent ${stop.name}`} action={async () => { await api.post(`/api/agents/${stop.scopeId}/resume`, {}); await onDone(); }}>Resume agent</ActionButton>;
  }
  return <Link to={stop.to}>Open {stop.name}</Link>;
}

/** The banners at the top of the dashboard: each names the scope, why it stopped, and the action that resolves it. */
export function StopBanners({ companyId, stops, onChange }: { companyId: string; stops: Stop[]; onChange: () => Promise<void> }) {
  if (stops.length === 0) return null;
  return (
    <ul className="stops" aria-label="Hard stops and paused work">
      {stops.map((stop) => {
        const { incident } = stop;
        const hard = incident?.thresholdType === 'hard';
        const title = stop.paused ? `The ${stop.scope} ${stop.name} is paused` : `${stop.name} (${stop.scope}) ${hard ? 'reached its budget hard stop' : 'passed its budget warning'}`;
        return (
          <li key={stop.key} className={stop.paused || hard ? 'stop hard' : 'stop warn'} data-testid={`stop-${stop.scope}-${stop.scopeId}`}>
            <p><strong>{title}</strong>{stop.paused ? `: ${reasonText(stop.reason)}.` : '.'}</p>
            {incident ? (
              <p>{hard ? 'Hard stop' : 'Warning'}: {money(incident.amountObserved)} spent of a {money(incident.amountLimit)} {incident.windowKind === 'lifetime' ? 'lifetime' : 'monthly'} budget.</p>
            ) : null}
            <div className="row">
              {incident && hard ? <RaiseBudget companyId={companyId} incident={incident} label={stop.name} onDone={onChange} /> : null}
              {incident && !hard ? <Link to={`/companies/${companyId}/costs`}>Review budgets</Link> : null}
              {stop.paused && !(incident && hard) ? <Resume stop={stop} onDone={onChange} /> : null}
              <Link to={stop.to} className="muted-link">Details</Link>
            </div>
          </li>
        );
      })}
    </ul>
  );
}
