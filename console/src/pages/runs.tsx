import { useEffect, useRef, useState } from 'react';
import { api, type Agent, type Run } from '../api.ts';
import { Link } from '../router.tsx';
import { ActionButton, ErrorNote, Loading, Status, useLoad, when } from '../ui.tsx';

export function RunsPage({ companyId }: { companyId: string }) {
  const [cursors, setCursors] = useState<Array<string | null>>([null]);
  const cursor = cursors[cursors.length - 1]!;
  const runs = useLoad(() => api.get<{ runs: Run[]; nextCursor: string | null }>(`/api/companies/${companyId}/heartbeat-runs`, { limit: 50, cursor: cursor ?? undefined }), [companyId, cursor]);
  const agents = useLoad(() => api.get<Agent[]>(`/api/companies/${companyId}/agents`), [companyId]);
  return (
    <section>
      <h1>Runs</h1>
      {runs.loading && !runs.data ? <Loading what="runs" /> : null}
      <ErrorNote error={runs.error} />
      <table className="table">
        <caption className="sr-only">Runs</caption>
        <thead><tr><th scope="col">Run</th><th scope="col">Agent</th><th scope="col">Status</th><th scope="col">Source</th><th scope="col">Started</th></tr></thead>
        <tbody>{(runs.data?.runs ?? []).map((run) => (
          <tr key={run.id}>
            <td><Link to={`/companies/${companyId}/runs/${run.id}`}>{run.id.slice(0, 8)}</Link></td>
            <td>{agents.data?.find((a) => a.id === run.agentId)?.name ?? run.agentId.slice(0, 8)}</td>
            <td><Status value={run.status} /></td><td>{run.invocationSource}</td><td>{when(run.startedAt ?? run.createdAt)}</td>
          </tr>))}
        </tbody>
      </table>
      <nav className="pager" aria-label="Run pages">
        <button type="button" disabled={cursors.length === 1} onClick={() => setCursors(cursors.slice(0, -1))}>Newer</button>
        <button type="button" disabled={!runs.data?.nextCursor} onClick={() => setCursors([...cursors, runs.data!.nextCursor])}>Older</button>
      </nav>
    </section>
  );
}

interface LogLine { seq: number; at: string; stream: string; line: string }
const MAX_LINES = 5000;

function parseLog(content: string): LogLine[] {
  const lines: LogLine[] = [];
  for (const text of content.split('\n')) {
    if (!text.trim()) continue;
    try { lines.push(JSON.parse(text) as LogLine); } catch { lines.push({ seq: -1, at: '', stream: 'stdout', line: text }); }
  }
  return lines;
}

/** A run with its log as it is written (server-sent events), and cancel while it is active. */
export function RunPage({ companyId, runId }: { companyId: string; runId: string }) {
  const [run, setRun] = useState<Run | null>(null);
  const [lines, setLines] = useState<LogLine[]>([]);
  const [live, setLive] = useState<'connecting' | 'live' | 'ended' | 'lost'>('connecting');
  const [error, setError] = useState<unknown>(null);
  const offset = useRef(0);
  const logEnd = useRef<HTMLDivElement>(null);
  useEffect(() => {
    offset.current = 0;
    setLines([]);
    const source = new EventSource(`/api/heartbeat-runs/${encodeURIComponent(runId)}/stream`);
    const append = async (batch: { offset: number; nextOffset: number; content?: string; truncated?: boolean }) => {
      if (batch.nextOffset <= offset.current) return;
      let content = batch.content;
      if (batch.truncated || content === undefined || batch.offset > offset.current) {
        const read = await api.get<{ content: string; nextOffset: number }>(`/api/heartbeat-runs/${runId}/log`, { offset: offset.current });
        content = read.content;
        batch = { ...batch, nextOffset: read.nextOffset };
      } else if (batch.offset < offset.current) {
        content = new TextDecoder().decode(new TextEncoder().encode(content).slice(offset.current - batch.offset));
      }
      offset.current = batch.nextOffset;
      const parsed = parseLog(content);
      setLines((before) => [...before, ...parsed].slice(-MAX_LINES));
    };
    source.addEventListener('run', (event) => { setRun(JSON.parse((event as MessageEvent).data)); setLive('live'); });
    source.addEventListener('log', (event) => { void append(JSON.parse((event as MessageEvent).data)).catch(setError); });
    source.addEventListener('end', (event) => {
      source.close();
      setLive('ended');
      try { const data = JSON.parse((event as MessageEvent).data); if (data && data.id) setRun(data); } catch { /* the end event may carry no run */ }
      void api.get<Run>(`/api/heartbeat-runs/${runId}`).then(setRun).catch(setError);
    });
    source.onmessage = (event) => {
      const data = JSON.parse(event.data) as { event: string; status?: string; offset?: number; nextOffset?: number; content?: string; truncated?: boolean };
      if (data.event === 'status' && data.status) setRun((before) => (before ? { ...before, status: data.status! } : before));
      if (data.event === 'log') void append(data as never).catch(setError);
    };
    source.onerror = () => { if (source.readyState === EventSource.CLOSED) setLive((state) => (state === 'ended' ? state : 'lost')); };
    return () => source.close();
  }, [runId]);
  useEffect(() => { logEnd.current?.scrollIntoView({ block: 'nearest' }); }, [lines.length]);
  const active = run && ['queued', 'running'].includes(run.status);
  return (
    <section>
      <p><Link to={`/companies/${companyId}/runs`}>Runs</Link> / {runId.slice(0, 8)}</p>
      <div className="title-row"><h1>Run {runId.slice(0, 8)}</h1>{run ? <Status value={run.status} /> : null}</div>
      <p className="muted" role="status" data-testid="stream-state">{live === 'live' ? 'Live' : live === 'ended' ? 'Run ended' : live === 'lost' ? 'Connection lost' : 'Connecting…'}</p>
      <ErrorNote error={error} />
      {active ? <ActionButton kind="danger" action={async () => { setRun(await api.post<Run>(`/api/heartbeat-runs/${runId}/cancel`, {})); }}>Cancel run</ActionButton> : null}
      {run?.error ? <p className="error">{run.error}</p> : null}
      <div className="log" role="log" aria-label="Run log" tabIndex={0} data-testid="run-log">
        {lines.map((line, index) => <div key={index} className={`log-${line.stream}`}><span className="muted">{line.stream}</span> {line.line}</div>)}
        <div ref={logEnd} />
      </div>
      {!run && live === 'connecting' ? <Loading what="the run" /> : null}
    </section>
  );
}
