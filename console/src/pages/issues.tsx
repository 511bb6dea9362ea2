import { useCallback, useEffect, useState } from 'react';
import { api, ISSUE_STATUSES, page, upload, type Agent, type Issue } from '../api.ts';
import { Link } from '../router.tsx';
import { ActionButton, Empty, ErrorNote, Field, Form, Loading, Status, TableFrame, useLoad, when } from '../ui.tsx';
import { WorkProducts } from './work-products.tsx';
import { FeedbackVote, useMyVotes } from './feedback.tsx';
import { IssueRuns } from './run-list.tsx';

// The first page is small so the board paints soon; later pages are larger.
const FIRST_PAGE = 100;
const PAGE = 200;
const CARDS_PER_COLUMN = 50;

/**
 * The company's issues, read from the server a page at a time (newest first), optionally
 * searched (`q`) or of one project; the issues board and a project's page read them alike.
 */
export function useIssuePages(companyId: string, filter: { q?: string; projectId?: string }, sizes = { first: FIRST_PAGE, rest: PAGE }) {
  const [items, setItems] = useState<Issue[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<unknown>(null);
  const { q, projectId } = filter;
  const load = useCallback(async (cursor: string | null) => {
    setLoading(true);
    try {
      const got = await page<Issue>(`/api/companies/${companyId}/issues`, {
        limit: cursor ? sizes.rest : sizes.first, q: q || undefined, projectId, cursor: cursor ?? undefined,
      });
      setItems((before) => (cursor ? [...before, ...got.items] : got.items));
      setNext(got.next);
      setError(null);
    } catch (caught) { setError(caught); } finally { setLoading(false); }
  }, [companyId, q, projectId, sizes.first, sizes.rest]);
  useEffect(() => { void load(null); }, [load]);
  return { items, next, loading, error, more: () => load(next), reload: () => load(null) };
}

export function IssuesPage({ companyId }: { companyId: string }) {
  const [view, setView] = useState<'board' | 'list'>('board');
  const [q, setQ] = useState('');
  const issues = useIssuePages(companyId, { q });
  const agents = useLoad(() => api.get<Agent[]>(`/api/companies/${companyId}/agents`), [companyId]);
  const agentName = (id: string | null) => agents.data?.find((a) => a.id === id)?.name ?? '—';
  return (
    <section>
      <h1>Issues</h1>
      <details className="card">
        <summary>New issue</summary>
        <Form label="New issue" submit="Create issue" onSubmit={async (fields) => {
          await api.post(`/api/companies/${companyId}/issues`, {
            title: fields.get('title'), description: fields.get('description') || undefined,
            priority: fields.get('priority') || undefined, assigneeAgentId: fields.get('assignee') || undefined,
          });
          await issues.reload();
        }}>
          <Field label="Title" name="title" required />
          <Field label="Description" name="description" type="textarea" />
          <Field label="Priority" name="priority"><select name="priority" defaultValue="medium">{['critical', 'high', 'medium', 'low'].map((p) => <option key={p}>{p}</option>)}</select></Field>
          <Field label="Assignee" name="assignee"><select name="assignee" defaultValue=""><option value="">unassigned</option>{(agents.data ?? []).map((a) => <option key={a.id} value={a.id}>{a.name}</option>)}</select></Field>
        </Form>
      </details>
      <div className="toolbar">
        <div role="group" aria-label="View">
          <button type="button" aria-pressed={view === 'board'} onClick={() => setView('board')}>Board</button>
          <button type="button" aria-pressed={view === 'list'} onClick={() => setView('list')}>List</button>
        </div>
        <label className="field inline"><span>Search</span><input type="search" defaultValue={q} onKeyDown={(event) => { if (event.key === 'Enter') setQ(event.currentTarget.value); }} onBlur={(event) => setQ(event.currentTarget.value)} /></label>
      </div>
      <ErrorNote error={issues.error} />
      {!issues.loading && !issues.error && issues.items.length === 0 && !q ? <Empty>No issues yet. Open “New issue” above to write the first one; an issue assigned to an agent wakes it to work on it.</Empty> : null}
      {view === 'board' ? (
        // The board scrolls sideways: as a named region that takes the focus, the keyboard can scroll it even with no card to tab to.
        <div className="board" data-testid="issue-board" role="region" aria-label="Issue board" tabIndex={0}>
          {ISSUE_STATUSES.map((status) => {
            const column = issues.items.filter((issue) => issue.status === status);
            return (
              <section key={status} className="column" aria-label={`${status.replace('_', ' ')} (${column.length})`}>
                <h2>{status.replace('_', ' ')} <span className="muted">{column.length}</span></h2>
                <ul>{column.slice(0, CARDS_PER_COLUMN).map((issue) => (
                  <li key={issue.id} className="issue-card">
                    <Link to={`/companies/${companyId}/issues/${issue.id}`}><span className="muted">{issue.identifier}</span> {issue.title}</Link>
                    <span className="muted">{agentName(issue.assigneeAgentId)} · {issue.priority}</span>
                  </li>))}
                </ul>
                {column.length > CARDS_PER_COLUMN ? <p className="muted">{column.length - CARDS_PER_COLUMN} more in the list view</p> : null}
              </section>
            );
          })}
        </div>
      ) : (
        <TableFrame label="Issues"><table className="table">
          <caption className="sr-only">Issues</caption>
          <thead><tr><th scope="col">Issue</th><th scope="col">Status</th><th scope="col">Priority</th><th scope="col">Assignee</th><th scope="col">Updated</th></tr></thead>
          <tbody>{issues.items.map((issue) => (
            <tr key={issue.id}>
              <td><Link to={`/companies/${companyId}/issues/${issue.id}`}>{issue.identifier} {issue.title}</Link></td>
              <td><Status value={issue.status} /></td><td>{issue.priority}</td><td>{agentName(issue.assigneeAgentId)}</td><td>{when(issue.updatedAt)}</td>
            </tr>))}
          </tbody>
        </table></TableFrame>
      )}
      {issues.loading ? <Loading what="issues" /> : null}
      {issues.next && !issues.loading ? <button type="button" onClick={() => void issues.more()}>Load {PAGE} more</button> : null}
    </section>
  );
}

interface Comment { id: string; body: string; authorAgentId: string | null; authorUserId: string | null; createdAt: string }
interface Doc { id: string; key: string; title: string | null; latestRevisionNumber: number; updatedAt: string }
interface Revision { id: string; revisionNumber: number; body: string; createdAt: string; createdByAgentId: string | null }
interface Attachment { id: string; originalFilename: string | null; contentType: string; byteSize: number }

export function IssuePage({ companyId, issueId }: { companyId: string; issueId: string }) {
  const issue = useLoad(() => api.get<Issue & { blockedByIssueIds?: string[]; blockedBy?: Array<{ id: string; identifier: string }> }>(`/api/issues/${issueId}`), [issueId]);
  const comments = useLoad(() => api.get<Comment[]>(`/api/issues/${issueId}/comments`), [issueId]);
  const documents = useLoad(() => api.get<Doc[]>(`/api/issues/${issueId}/documents`), [issueId]);
  const attachments = useLoad(() => api.get<Attachment[]>(`/api/issues/${issueId}/attachments`), [issueId]);
  const agents = useLoad(() => api.get<Agent[]>(`/api/companies/${companyId}/agents`), [companyId]);
  const [openDoc, setOpenDoc] = useState<{ key: string; body: string; revisions: Revision[] } | null>(null);
  const votes = useMyVotes(companyId, issueId);
  if (issue.loading && !issue.data) return <Loading what="the issue" />;
  if (issue.error) return <ErrorNote error={issue.error} />;
  const i = issue.data!;
  const patch = async (body: Record<string, unknown>) => { await api.patch(`/api/issues/${issueId}`, body); await issue.reload(); };
  return (
    <section>
      <p><Link to={`/companies/${companyId}/issues`}>Issues</Link> / {i.identifier}</p>
      <div className="title-row"><h1>{i.title}</h1><Status value={i.status} /></div>
      {i.description ? <p className="prewrap">{i.description}</p> : null}
      <div className="grid2">
        <label className="field"><span>Status</span>
          <select value={i.status} onChange={(event) => void patch({ status: event.target.value })}>{ISSUE_STATUSES.map((s) => <option key={s}>{s}</option>)}</select>
        </label>
        <label className="field"><span>Assignee</span>
          <select value={i.assigneeAgentId ?? ''} onChange={(event) => void patch({ assigneeAgentId: event.target.value || null })}>
            <option value="">unassigned</option>{(agents.data ?? []).map((a) => <option key={a.id} value={a.id}>{a.name}</option>)}
          </select>
        </label>
      </div>
      <div className="card">
        <h2>Blocked by</h2>
        <p>{(i.blockedBy ?? []).map((b) => b.identifier).join(', ') || (i.blockedByIssueIds ?? []).join(', ') || 'nothing'}</p>
        <Form label="Blockers" submit="Set blockers" onSubmit={async (fields) => {
          const wanted = String(fields.get('blockers') ?? '').split(/[\s,]+/).filter(Boolean);
          const ids = await Promise.all(wanted.map(async (identifier) => (await api.get<Issue>(`/api/issues/${encodeURIComponent(identifier)}`)).id));
          await patch({ blockedByIssueIds: ids });
        }}>
          <Field label="Blocking issues (identifiers, comma separated; empty clears)" name="blockers" />
        </Form>
      </div>
      <div className="card">
        <h2>Comments</h2>
        <ErrorNote error={comments.error} />
        <ErrorNote error={votes.error} />
        <ul className="comments">{(comments.data ?? []).map((comment) => (
          <li key={comment.id}><p className="muted">{comment.authorAgentId ? agents.data?.find((a) => a.id === comment.authorAgentId)?.name ?? 'agent' : 'board'} · {when(comment.createdAt)}</p><p className="prewrap">{comment.body}</p>
            {/* Votes judge agent output only: the API refuses a vote on a board comment. */}
            {comment.authorAgentId ? <FeedbackVote issueId={issueId} targetType="comment" targetId={comment.id} label={`comment of ${when(comment.createdAt)}`} mine={votes.mine('comment', comment.id)} onChange={votes.reload} /> : null}
          </li>))}
        </ul>
        <Form label="Add a comment" submit="Comment" onSubmit={async (fields) => { await api.post(`/api/issues/${issueId}/comments`, { body: fields.get('body') }); await comments.reload(); }}>
          <Field label="Comment" name="body" type="textarea" required />
        </Form>
      </div>
      <div className="grid2">
        <div className="card">
          <h2>Documents</h2>
          <ul className="rows">{(documents.data ?? []).map((doc) => (
            <li key={doc.id} className="row-item">
              <button type="button" className="link" onClick={async () => {
                const [full, revisions] = await Promise.all([api.get<{ body: string }>(`/api/issues/${issueId}/documents/${doc.key}`), api.get<Revision[]>(`/api/issues/${issueId}/documents/${doc.key}/revisions`)]);
                setOpenDoc({ key: doc.key, body: full.body, revisions });
              }}>{doc.title ?? doc.key}</button> <span className="muted">revision {doc.latestRevisionNumber}</span>
            </li>))}
          </ul>
          {openDoc ? (
            <div>
              <h3>{openDoc.key}</h3>
              <pre className="code" tabIndex={0}>{openDoc.body}</pre>
              <details><summary>{openDoc.revisions.length} revisions</summary>
                <ul>{openDoc.revisions.map((r) => (
                  <li key={r.id}>#{r.revisionNumber} {when(r.createdAt)}
                    {r.createdByAgentId ? <FeedbackVote issueId={issueId} targetType="document_revision" targetId={r.id} label={`${openDoc.key} revision ${r.revisionNumber}`} mine={votes.mine('document_revision', r.id)} onChange={votes.reload} /> : null}
                  </li>))}
                </ul>
              </details>
            </div>
          ) : null}
          <Form label="Write a document" submit="Save document" onSubmit={async (fields) => {
            await api.put(`/api/issues/${issueId}/documents/${encodeURIComponent(String(fields.get('key')))}`, { title: fields.get('title') || undefined, format: 'markdown', body: fields.get('body') });
            await documents.reload();
          }}>
            <Field label="Key" name="key" required placeholder="plan" />
            <Field label="Title" name="title" />
            <Field label="Body (Markdown)" name="body" type="textarea" required />
          </Form>
        </div>
        <div className="card">
          <h2>Attachments</h2>
          <ul className="rows">{(attachments.data ?? []).map((file) => (
            <li key={file.id} className="row-item"><a href={`/api/attachments/${file.id}/content?download=true`}>{file.originalFilename ?? file.id}</a> <span className="muted">{file.contentType}, {file.byteSize} bytes</span>
              <ActionButton label={`Delete ${file.originalFilename ?? file.id}`} action={async () => { await api.delete(`/api/attachments/${file.id}`); await attachments.reload(); }}>Delete</ActionButton>
            </li>))}
          </ul>
          <Form label="Attach a file" submit="Upload" onSubmit={async (fields) => {
            const file = fields.get('file');
            if (!(file instanceof File) || file.size === 0) throw new Error('Choose a file first');
            await upload(`/api/companies/${companyId}/issues/${issueId}/attachments`, file);
            await attachments.reload();
          }}>
            <Field label="File" name="file" type="file" required />
          </Form>
        </div>
      </div>
      <IssueRuns companyId={companyId} issueId={i.id} agentNames={new Map((agents.data ?? []).map((agent) => [agent.id, agent.name]))} />
      <WorkProducts issueId={issueId} />
    </section>
  );
}
