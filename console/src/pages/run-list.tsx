import { useEffect, useState } from 'react';
import { api, type Run } from '../api.ts';
import { Link } from '../router.tsx';
import { Empty, ErrorNote, Loading, money, Status, TableFrame, when } from '../ui.tsx';

/** One run's spend from its cost events (GET .../costs/by-run), every source summed. */
export interface RunSpend { runId: string; spendCents: number; inputTokens: number; cachedInputTokens: number; outputTokens: number; eventCount: number; bySource: Array<{ source: string; spendCents: number }> }

/**
 * The spend of the given runs, read again when `version` changes (a run that ends). Without the
 * costs plugin (404) there is no spend to show: the map stays empty and no error is raised.
 */
export function useRunSpend(companyId: string, runIds: string[], version = ''): Map<string, RunSpend> {
  const [spend, setSpend] = useState(new Map<string, RunSpend>());
  const key = runIds.join(',');
  useEffect(() => {
    let live = true;
    if (!key) { setSpend(new Map()); return undefined; }
    api.get<RunSpend[]>(`/api/companies/${companyId}/costs/by-run`, { runIds: key })
      .then((rows) => { if (live) setSpend(new Map(rows.map((row) => [row.runId, row]))); })
      .catch(() => undefined);
    return () => { live = false; };
  }, [companyId, key, version]);
  return spend;
}

/** How long a run took (or has been running, up to `now`), in words. */
export function duration(run: { startedAt: string | null; finishedAt: string | null }, now = Date.now()): string {
  if (!run.startedAt) return '—';
  const ms = Math.max(0, (run.finishedAt ? Date.parse(run.finishedAt) : now) - Date.parse(run.startedAt));
  const seconds = Math.round(ms / 100) / 10;
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${Math.round(seconds % 60)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** A run as the lists show it: the run page's facts in one row. */
export interface RunRow { id: string; status: string; startedAt: string | null; finishedAt: string | null; createdAt: string; agentId: string; invocationSource: string }

/**
 * A list of runs (an agent's, an issue's): status, started, duration, cost, each linked to its
 * run page. `load` answers the runs newest first.
 */
export function RunList({ companyId, label, load, deps, agentNames }: { companyId: string; label: string; load: () => Promise<RunRow[]>; deps: unknown[]; agentNames?: Map<string, string> }) {
  const [runs, setRuns] = useState<RunRow[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    let live = true;
    load().then((rows) => { if (live) { setRuns(rows); setError(null); } }).catch((caught) => { if (live) setError(caught); });
    return () => { live = false; };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
  const spend = useRunSpend(companyId, (runs ?? []).map((run) => run.id));
  return (
    <div className="card" data-testid="run-list">
      <h2>Runs</h2>
      <ErrorNote error={error} />
      {!runs && !error ? <Loading what="runs" /> : null}
      {runs && runs.length === 0 ? <Empty>No runs yet. A run starts when an agent is woken: an issue assigned to it, its schedule, or “Run now” on the agent’s page.</Empty> : null}
      {runs && runs.length ? (
          <TableFrame label={label}><table className="table">
            <caption className="sr-only">{label}</caption>
            <thead><tr><th scope="col">Run</th>{agentNames ? <th scope="col">Agent</th> : null}<th scope="col">Status</th><th scope="col">Started</th><th scope="col">Duration</th><th scope="col">Cost</th></tr></thead>
            <tbody>{runs.map((run) => (
              <tr key={run.id}>
                <td><Link to={`/companies/${companyId}/runs/${run.id}`}>Run {run.id.slice(0, 8)}</Link></td>
                {agentNames ? <td>{agentNames.get(run.agentId) ?? 'unknown agent'}</td> : null}
                <td><Status value={run.status} /></td>
                <td>{when(run.startedAt ?? run.createdAt)}</td>
                <td>{duration(run)}</td>
                <td>{spend.has(run.id) ? money(spend.get(run.id)!.spendCents) : '—'}</td>
              </tr>))}
            </tbody>
          </table></TableFrame>
      ) : null}
    </div>
  );
}

/** The runs of an agent, newest first (the runtime's list, filtered by agent). */
export function AgentRuns({ companyId, agentId }: { companyId: string; agentId: string }) {
  return <RunList companyId={companyId} label="Runs of this agent" deps={[companyId, agentId]}
    load={async () => (await api.get<{ runs: Run[] }>(`/api/companies/${companyId}/heartbeat-runs`, { agentId, limit: 20 })).runs} />;
}

/** The runs that worked on an issue (the work plugin's list), with their agents. */
export function IssueRuns({ companyId, issueId, agentNames }: { companyId: string; issueId: string; agentNames: Map<string, string> }) {
  return <RunList companyId={companyId} label="Runs on this issue" deps={[companyId, issueId]} agentNames={agentNames}
    load={async () => (await api.get<Array<Omit<RunRow, 'id'> & { runId: string }>>(`/api/issues/${issueId}/runs`)).map(({ runId, ...run }) => ({ id: runId, ...run }))} />;
}
