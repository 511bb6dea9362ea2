import { useEffect, useState } from 'react';
import { api, type Agent, type Issue, type Run } from '../api.ts';
import { Link } from '../router.tsx';
import { money, Status, useLoad, when } from '../ui.tsx';
import { runTrouble } from './run-advice.ts';
import { duration, useRunSpend } from './run-list.tsx';

interface TouchedIssue { id: string; identifier: string; title: string; status: string }

const tokens = (count: number) => count.toLocaleString('en-US');

/** The run's result as a line: its text or summary when it has one, else its JSON (folded). */
function Result({ result }: { result: Record<string, unknown> | null | undefined }) {
  if (!result || Object.keys(result).length === 0) return <>none</>;
  const line = [result.text, result.summary, result.result].find((value) => typeof value === 'string') as string | undefined;
  return (
    <>
      {line ? <span className="prewrap" data-testid="run-result">{line}</span> : null}
      <details><summary>{line ? 'Full result' : 'Result (JSON)'}</summary><pre className="code" tabIndex={0}>{JSON.stringify(result, null, 2)}</pre></details>
    </>
  );
}

/** How the process ended: its exit code or signal when it gave one. */
function exitOf(run: Run): string {
  const parts: string[] = [];
  if (run.exitCode !== null && run.exitCode !== undefined) parts.push(`exit code ${run.exitCode}`);
  if (run.signal) parts.push(`signal ${run.signal}`);
  return parts.join(' · ') || (run.status === 'running' || run.status === 'queued' ? 'not yet' : 'no exit code');
}

/**
 * The facts of a run before its transcript: who ran, on what, why, when, how long, how it ended
 * (with what to do about an error), what it cost and what it answered. Its spend is read from
 * its cost events (every source), again once it ends.
 */
export function RunFacts({ companyId, run, active }: { companyId: string; run: Run; active: boolean }) {
  // While the run is active its duration counts up once a second.
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (!active) return undefined;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [active]);
  const agent = useLoad(() => api.get<Agent>(`/api/agents/${run.agentId}`), [run.agentId]);
  const issue = useLoad(() => (run.issueId ? api.get<Issue>(`/api/issues/${run.issueId}`) : Promise.resolve(null)), [run.issueId]);
  const touched = useLoad(() => api.get<TouchedIssue[]>(`/api/heartbeat-runs/${run.id}/issues`).catch(() => []), [run.id, active]);
  const usage = (run.usageJson ?? {}) as Record<string, number | undefined>;
  // Read again when the run ends and when it reports usage, so the last report is counted.
  const spend = useRunSpend(companyId, [run.id], `${run.status}:${usage.reports ?? 0}`).get(run.id);
  const { code, advice } = runTrouble(run);
  const others = (touched.data ?? []).filter((entry) => entry.id !== run.issueId);
  return (
    <dl className="run-facts" aria-label="Run facts" data-testid="run-facts">
      <div><dt>Agent</dt><dd><Link to={`/companies/${companyId}/agents/${run.agentId}`}>{agent.data?.name ?? 'the agent'}</Link></dd></div>
      <div><dt>Issue</dt><dd>{issue.data
        ? <Link to={`/companies/${companyId}/issues/${issue.data.id}`}>{issue.data.identifier} {issue.data.title}</Link>
        : run.issueId ? 'an issue you cannot see' : 'none'}
        {others.length ? <span className="muted"> · also touched {others.map((entry, index) => (
          <span key={entry.id}>{index ? ', ' : ''}<Link to={`/companies/${companyId}/issues/${entry.id}`}>{entry.identifier}</Link></span>))}</span> : null}
      </dd></div>
      <div><dt>Woken by</dt><dd>{run.wakeReason ?? 'no reason given'} <span className="muted">({run.invocationSource.replace(/_/g, ' ')}{run.triggerDetail ? `, ${run.triggerDetail}` : ''})</span></dd></div>
      <div><dt>Started</dt><dd>{when(run.startedAt ?? run.createdAt)}</dd></div>
      <div><dt>Duration</dt><dd data-testid="run-duration">{active ? `running for ${duration(run, now)}` : duration(run)}</dd></div>
      <div><dt>Exit</dt><dd><Status value={run.status} /> <span data-testid="run-exit">{exitOf(run)}</span></dd></div>
      {code || run.error || advice ? (
        <div className="run-error"><dt>Error</dt><dd>
          {code ? <code>{code}</code> : null}{run.error && run.error !== code ? <span className="prewrap"> {run.error}</span> : null}
          {advice ? <p className="advice" data-testid="run-advice">{advice}</p> : null}
        </dd></div>
      ) : null}
      <div><dt>Cost</dt><dd data-testid="run-cost">{spend
        ? <>{money(spend.spendCents)} <span className="muted">· {tokens(spend.inputTokens)} in ({tokens(spend.cachedInputTokens)} cached) · {tokens(spend.outputTokens)} out{spend.bySource.length ? ` · ${spend.bySource.map((row) => `${row.source.replace(/_/g, ' ')} ${money(row.spendCents)}`).join(', ')}` : ''}</span></>
        : <>{money(usage.costCents ?? 0)} <span className="muted">· {tokens(usage.inputTokens ?? 0)} in · {tokens(usage.outputTokens ?? 0)} out (as reported by the run)</span></>}
      </dd></div>
      <div className="run-result"><dt>Result</dt><dd><Result result={run.resultJson} /></dd></div>
    </dl>
  );
}
