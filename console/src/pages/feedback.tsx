import { useCallback, useEffect, useState } from 'react';
import { api, type Me } from '../api.ts';
import { Link } from '../router.tsx';
import { ActionButton, ErrorNote, Field, Form, Loading, Status, useLoad, when } from '../ui.tsx';

export type FeedbackTarget = 'comment' | 'document_revision';
interface Trace {
  id: string; issueId: string; issueIdentifier: string; projectId: string | null; targetType: FeedbackTarget; targetId: string; authorAgentId: string | null;
  voterUserId: string; vote: 'up' | 'down'; reason: string | null; shareable: boolean; status: string; createdAt: string; updatedAt: string;
  payload?: { body: string; bodyTruncated: boolean; issueTitle: string; documentKey: string | null; revisionNumber: number | null };
}
interface TracePage { traces: Trace[]; nextCursor: string | null }

const TRACE_PAGE = 100;
const ISSUE_TRACE_PAGES = 20;

/** The signed-in board user's votes on one issue, by target; a vote changes or withdraws them. */
export function useMyVotes(companyId: string, issueId: string) {
  const load = useCallback(async () => {
    const me = await api.get<Me>('/api/cli-auth/me');
    const mine = new Map<string, Trace>();
    let cursor: string | undefined;
    // An issue's votes are few; the pages are walked to the end (bounded) so no vote of the caller is missed.
    for (let pageIndex = 0; pageIndex < ISSUE_TRACE_PAGES; pageIndex++) {
      const got = await api.get<TracePage>(`/api/companies/${companyId}/feedback-traces`, { issueId, limit: 200, cursor });
      for (const trace of got.traces) if (trace.voterUserId === me.userId) mine.set(`${trace.targetType}:${trace.targetId}`, trace);
      if (!got.nextCursor) break;
      cursor = got.nextCursor;
    }
    return mine;
  }, [companyId, issueId]);
  const votes = useLoad(load, [load]);
  return { mine: (type: FeedbackTarget, id: string) => votes.data?.get(`${type}:${id}`), error: votes.error, reload: votes.reload };
}

/**
 * Thumbs up or down on one piece of agent output (a comment or a document revision), with an
 * optional reason and whether the voter allows the trace to be shared. Voting again replaces
 * the vote; withdrawing deletes it.
 */
export function FeedbackVote({ issueId, targetType, targetId, label, mine, onChange }: {
  issueId: string; targetType: FeedbackTarget; targetId: string; label: string; mine: Trace | undefined; onChange: () => Promise<void>;
}) {
  const [reason, setReason] = useState(mine?.reason ?? '');
  const [shareable, setShareable] = useState(mine?.shareable ?? false);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => { setReason(mine?.reason ?? ''); setShareable(mine?.shareable ?? false); }, [mine]);
  const run = (what: string, action: () => Promise<unknown>) => async () => {
    setBusy(what);
    setError(null);
    try { await action(); await onChange(); } catch (caught) { setError(caught); } finally { setBusy(null); }
  };
  const vote = (value: 'up' | 'down') => run(value, () => api.post(`/api/issues/${issueId}/feedback`, { targetType, targetId, vote: value, reason: reason.trim() || null, shareable }));
  const withdraw = run('withdraw', () => api.delete(`/api/issues/${issueId}/feedback?targetType=${targetType}&targetId=${targetId}`));
  const spinner = (what: string) => (busy === what ? <span className="spinner" aria-hidden="true" /> : null);
  return (
    <div className="feedback" role="group" aria-label={`Feedback on ${label}`}>
      <div className="row">
        <button type="button" aria-pressed={mine?.vote === 'up'} disabled={!!busy} aria-busy={busy === 'up'} onClick={vote('up')}>{spinner('up')}Thumbs up</button>
        <button type="button" aria-pressed={mine?.vote === 'down'} disabled={!!busy} aria-busy={busy === 'down'} onClick={vote('down')}>{spinner('down')}Thumbs down</button>
        {mine ? <button type="button" disabled={!!busy} aria-busy={busy === 'withdraw'} onClick={withdraw}>{spinner('withdraw')}Withdraw vote</button> : null}
        {mine ? <span className="muted">your vote: {mine.vote} · {mine.status}</span> : null}
      </div>
      <details>
        <summary>Reason and sharing</summary>
        <label className="field"><span>Reason (optional)</span><textarea rows={2} maxLength={2000} value={reason} onChange={(event) => setReason(event.target.value)} /></label>
        <label className="check"><input type="checkbox" checked={shareable} onChange={(event) => setShareable(event.target.checked)} /> Allow this feedback to be shared</label>
      </details>
      <ErrorNote error={error} />
    </div>
  );
}

/** Turns a date field (`2026-01-31`) into the API's date-time at the start of that day, UTC. */
function dayStart(value: FormDataEntryValue | null): string | undefined {
  const text = String(value ?? '').trim();
  return text ? `${text}T00:00:00Z` : undefined;
}

/** The company's feedback traces, newest first, filtered, a page of 100 at a time from the server. */
export function FeedbackPage({ companyId }: { companyId: string }) {
  const [filters, setFilters] = useState<Record<string, string | undefined>>({});
  const [traces, setTraces] = useState<Trace[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<unknown>(null);
  const load = useCallback(async (cursor: string | null) => {
    setLoading(true);
    try {
      const got = await api.get<TracePage>(`/api/companies/${companyId}/feedback-traces`, { ...filters, includePayload: 'true', limit: TRACE_PAGE, cursor: cursor ?? undefined });
      setTraces((before) => (cursor ? [...before, ...got.traces] : got.traces));
      setNext(got.nextCursor);
      setError(null);
    } catch (caught) { setError(caught); } finally { setLoading(false); }
  }, [companyId, filters]);
  useEffect(() => { void load(null); }, [load]);
  const projects = useLoad(() => api.get<Array<{ id: string; name: string }>>(`/api/companies/${companyId}/projects`, { includeArchived: 'true' }), [companyId]);
  const choice = (name: string, label: string, options: readonly string[]) => (
    <Field label={label} name={name}><select name={name} defaultValue={filters[name] ?? ''}><option value="">any</option>{options.map((o) => <option key={o} value={o}>{o.replace('_', ' ')}</option>)}</select></Field>
  );
  return (
    <section>
      <h1>Feedback</h1>
      <p className="muted">Board votes on agent output (comments and document revisions), newest first. Vote on an issue's page.</p>
      <details className="card">
        <summary>Filters</summary>
        <Form label="Feedback filters" submit="Apply filters" onSubmit={async (fields) => {
          const text = (name: string) => String(fields.get(name) ?? '').trim() || undefined;
          setFilters({
            targetType: text('targetType'), vote: text('vote'), status: text('status'), issueId: text('issueId'), projectId: text('projectId'),
            from: dayStart(fields.get('fromDay')), to: dayStart(fields.get('toDay')), sharedOnly: fields.get('sharedOnly') ? 'true' : undefined,
          });
        }}>
          {choice('targetType', 'Target', ['comment', 'document_revision'])}
          {choice('vote', 'Vote', ['up', 'down'])}
          {choice('status', 'Status', ['local', 'pending'])}
          <Field label="Issue (identifier or id)" name="issueId" placeholder="ACME-12" />
          <Field label="Project" name="projectId"><select name="projectId" defaultValue=""><option value="">any</option>{(projects.data ?? []).map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}</select></Field>
          <Field label="From (day, UTC)" name="fromDay" type="date" />
          <Field label="Before (day, UTC)" name="toDay" type="date" />
          <label className="check"><input type="checkbox" name="sharedOnly" /> Shareable only</label>
        </Form>
      </details>
      <ErrorNote error={error} />
      {!loading && !error && traces.length === 0 ? <p className="muted">No feedback matches.</p> : null}
      <ul className="rows" aria-label="Feedback traces">{traces.map((trace) => (
        <li key={trace.id} className="row-item stack">
          <div className="row">
            <Status value={trace.vote === 'up' ? 'thumbs_up' : 'thumbs_down'} />
            <Link to={`/companies/${companyId}/issues/${trace.issueId}`}>{trace.issueIdentifier}</Link>
            <span className="muted">{trace.targetType === 'comment' ? 'comment' : `document ${trace.payload?.documentKey ?? ''} revision ${trace.payload?.revisionNumber ?? ''}`} · {trace.status}{trace.shareable ? ' · shareable' : ''} · {when(trace.createdAt)}</span>
          </div>
          {trace.reason ? <p className="prewrap">Reason: {trace.reason}</p> : null}
          {trace.payload ? <p className="muted prewrap wrap-anywhere">{trace.payload.body.slice(0, 280)}{trace.payload.body.length > 280 || trace.payload.bodyTruncated ? '…' : ''}</p> : null}
        </li>))}
      </ul>
      {loading ? <Loading what="feedback" /> : null}
      {next && !loading ? <ActionButton action={() => load(next)}>Load {TRACE_PAGE} more</ActionButton> : null}
    </section>
  );
}
