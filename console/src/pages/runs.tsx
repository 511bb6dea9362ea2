import { useEffect, useRef, useState } from 'react';
import { api, type Agent, type Run } from '../api.ts';
import { Link } from '../router.tsx';
import { ActionButton, Empty, ErrorNote, Loading, money, Status, TableFrame, useLoad, when } from '../ui.tsx';
import { Conversation, transcriptReader, type TranscriptEntry } from './transcript.tsx';
import { RunFacts } from './run-facts.tsx';
import { duration, useRunSpend } from './run-list.tsx';

export function RunsPage({ companyId }: { companyId: string }) {
  const [cursors, setCursors] = useState<Array<string | null>>([null]);
  const cursor = cursors[cursors.length - 1]!;
  const runs = useLoad(() => api.get<{ runs: Run[]; nextCursor: string | null }>(`/api/companies/${companyId}/heartbeat-runs`, { limit: 50, cursor: cursor ?? undefined }), [companyId, cursor]);
  const agents = useLoad(() => api.get<Agent[]>(`/api/companies/${companyId}/agents`), [companyId]);
  const spend = useRunSpend(companyId, (runs.data?.runs ?? []).map((run) => run.id));
  return (
    <section>
      <h1>Runs</h1>
      {runs.loading && !runs.data ? <Loading what="runs" /> : null}
      <ErrorNote error={runs.error} />
      {runs.data?.runs.length === 0 && cursor === null ? <Empty>No runs yet. A run starts when an agent is woken: assign an issue to an agent, or press “Run now” on its page.</Empty> : null}
      <TableFrame label="Runs"><table className="table">
        <caption className="sr-only">Runs</caption>
        <thead><tr><th scope="col">Run</th><th scope="col">Agent</th><th scope="col">Status</th><th scope="col">Source</th><th scope="col">Started</th><th scope="col">Duration</th><th scope="col">Cost</th></tr></thead>
        <tbody>{(runs.data?.runs ?? []).map((run) => (
          <tr key={run.id}>
            <td><Link to={`/companies/${companyId}/runs/${run.id}`}>{run.id.slice(0, 8)}</Link></td>
            <td>{agents.data?.find((a) => a.id === run.agentId)?.name ?? run.agentId.slice(0, 8)}</td>
            <td><Status value={run.status} /></td><td>{run.invocationSource}</td><td>{when(run.startedAt ?? run.createdAt)}</td>
            <td>{duration(run)}</td><td>{spend.has(run.id) ? money(spend.get(run.id)!.spendCents) : '—'}</td>
          </tr>))}
        </tbody>
      </table></TableFrame>
      <nav className="pager" aria-label="Run pages">
        <button type="button" disabled={cursors.length === 1} onClick={() => setCursors(cursors.slice(0, -1))}>Newer</button>
        <button type="button" disabled={!runs.data?.nextCursor} onClick={() => setCursors([...cursors, runs.data!.nextCursor])}>Older</button>
      </nav>
    </section>
  );
}

interface LogLine { seq: number; at: string; stream: string; line: string }
const MAX_LINES = 5000;
const ACTIVE = ['queued', 'running'];
/** The statuses a run ends in; any other status event is progress. */
export const ENDED = ['succeeded', 'failed', 'cancelled', 'timed_out', 'lost'];

function parseLog(content: string): LogLine[] {
  const lines: LogLine[] = [];
  for (const text of content.split('\n')) {
    if (!text.trim()) continue;
    try { lines.push(JSON.parse(text) as LogLine); } catch { lines.push({ seq: -1, at: '', stream: 'stdout', line: text }); }
  }
  return lines;
}

/**
 * A run as it is written (server-sent events): its transcript as a conversation when its adapter
 * reports one, else its raw log; cancel while it is active.
 */
export function RunPage({ companyId, runId }: { companyId: string; runId: string }) {
  const [run, setRun] = useState<Run | null>(null);
  const [lines, setLines] = useState<LogLine[]>([]);
  const [entries, setEntries] = useState<TranscriptEntry[]>([]);
  const [live, setLive] = useState<'connecting' | 'live' | 'ended' | 'lost'>('connecting');
  const [error, setError] = useState<unknown>(null);
  const offset = useRef(0);
  const logEnd = useRef<HTMLDivElement>(null);
  useEffect(() => {
    offset.current = 0;
    setLines([]);
    setEntries([]);
    let closed = false;
    const transcript = transcriptReader(runId, setEntries, setError);
    void transcript.read();
    const source = new EventSource(`/api/heartbeat-runs/${encodeURIComponent(runId)}/stream`);
    // Batches are applied one after another, so offsets never race.
    let queue: Promise<void> = Promise.resolve();
    const readFrom = async () => {
      for (let pages = 0; pages < 100; pages++) {
        const read = await api.get<{ content: string; nextOffset: number; eof: boolean }>(`/api/heartbeat-runs/${runId}/log`, { offset: offset.current });
        if (read.content) setLines((before) => [...before, ...parseLog(read.content)].slice(-MAX_LINES));
        offset.current = read.nextOffset;
        if (read.eof || !read.content) return;
      }
    };
    const append = (batch: { offset: number; nextOffset: number; content?: string; truncated?: boolean }) => {
      queue = queue.then(async () => {
        if (batch.nextOffset <= offset.current) return;
        if (batch.truncated || batch.content === undefined || batch.offset !== offset.current) { await readFrom(); return; }
        offset.current = batch.nextOffset;
        const parsed = parseLog(batch.content);
        setLines((before) => [...before, ...parsed].slice(-MAX_LINES));
      }).catch(setError);
    };
    // A status event can arrive before the run's row is committed: ask again until the row agrees.
    const finalRun = async () => {
      for (let attempt = 0; ; attempt++) {
        const current = await api.get<Run>(`/api/heartbeat-runs/${runId}`);
        if (!ACTIVE.includes(current.status) || attempt >= 40) return current;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    };
    // The run ended: read what the log still holds, close the stream and show the final record.
    const finish = () => {
      if (closed) return;
      closed = true;
      source.close();
      void transcript.read();
      queue = queue.then(readFrom).then(finalRun).then((final) => { setRun(final); setLive('ended'); }).catch(setError);
    };
    source.addEventListener('run', (event) => {
      const current = JSON.parse((event as MessageEvent).data) as Run;
      setRun(current);
      setLive('live');
    });
    source.addEventListener('log', (event) => append(JSON.parse((event as MessageEvent).data)));
    source.addEventListener('end', finish);
    source.onmessage = (event) => {
      const data = JSON.parse(event.data) as { event: string; status?: string; offset: number; nextOffset: number; content?: string; truncated?: boolean; seq: number; entry?: Omit<TranscriptEntry, 'seq'> };
      if (data.event === 'status' && data.status) {
        setRun((before) => (before ? { ...before, status: data.status! } : before));
        if (ENDED.includes(data.status)) finish();
      }
      if (data.event === 'log') append(data);
      if (data.event === 'transcript') void transcript.event(data);
    };
    source.onerror = () => { if (source.readyState === EventSource.CLOSED && !closed) setLive('lost'); };
    return () => { closed = true; source.close(); };
  }, [runId]);
  useEffect(() => { logEnd.current?.scrollIntoView({ block: 'nearest' }); }, [lines.length]);
  const active = run && ACTIVE.includes(run.status);
  const log = (
    <div className="log" role="log" aria-label="Run log" tabIndex={0} data-testid="run-log">
      {lines.map((line, index) => <div key={index} className={`log-${line.stream}`}><span className="muted">{line.stream}</span> {line.line}</div>)}
      <div ref={logEnd} />
    </div>
  );
  return (
    <section>
      <p><Link to={`/companies/${companyId}/runs`}>Runs</Link> / {runId.slice(0, 8)}</p>
      <div className="title-row"><h1>Run {runId.slice(0, 8)}</h1>{run ? <Status value={run.status} /> : null}</div>
      <p className="muted" role="status" data-testid="stream-state">{live === 'live' ? 'Live' : live === 'ended' ? 'Run ended' : live === 'lost' ? 'Connection lost' : 'Connecting…'}</p>
      <ErrorNote error={error} />
      {active ? <ActionButton kind="danger" action={async () => { setRun(await api.post<Run>(`/api/heartbeat-runs/${runId}/cancel`, {})); }}>Cancel run</ActionButton> : null}
      {run ? <RunFacts companyId={companyId} run={run} active={Boolean(active)} /> : null}
      <h2>{entries.length ? 'Transcript' : 'Log'}</h2>
      {entries.length ? (
        <>
          <Conversation entries={entries} />
          <details className="card raw-log"><summary>Raw log</summary>{log}</details>
        </>
      ) : log}
      {!run && live === 'connecting' ? <Loading what="the run" /> : null}
    </section>
  );
}
