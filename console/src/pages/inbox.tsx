import { useEffect } from 'react';
import { Link } from '../router.tsx';
import { ActionButton, ErrorNote, Loading, Paged, useLoad, when } from '../ui.tsx';
import { loadInbox, markAllRead, markRead, onInboxChanged, type InboxItem, type InboxKind } from '../inbox/inbox-api.ts';

const KIND_LABELS: Record<InboxKind, string> = {
  approval: 'Approval', budget_incident: 'Budget', blocked_issue: 'Blocked', failed_run: 'Failed run', mention: 'Mention',
};

/** What needs the signed-in board user: each item links to where it is handled, and is marked read per user on the server. */
export function InboxPage({ companyId }: { companyId: string }) {
  const inbox = useLoad(() => loadInbox(companyId), [companyId]);
  const { reload } = inbox;
  useEffect(() => onInboxChanged(() => { void reload(); }), [reload]);
  const items = inbox.data?.items ?? [];
  const unread = inbox.data?.counts.unread ?? 0;
  return (
    <section>
      <h1>Inbox</h1>
      <p className="muted">
        What needs a human: approvals, budget incidents, blocked issues, failed runs of the last 7 days and comments mentioning you
        {inbox.data?.mentionHandle ? <> (as <code>@{inbox.data.mentionHandle}</code>)</> : null}.
      </p>
      {inbox.loading && !inbox.data ? <Loading what="inbox" /> : null}
      <ErrorNote error={inbox.error} />
      {inbox.data ? <p role="status">{unread === 0 ? 'Everything is read.' : `${unread} unread of ${inbox.data.counts.total}.`}</p> : null}
      {unread > 0 ? <ActionButton action={() => markAllRead(companyId)}>Mark all read</ActionButton> : null}
      <Paged label="Inbox" items={items} empty="Nothing needs you now. Approvals, budget stops, blocked issues, failed runs and mentions of you land here." render={(item: InboxItem) => (
        <li key={item.id} className={item.read ? 'row-item read' : 'row-item unread'}>
          <span className="badge">{KIND_LABELS[item.kind]}</span>
          {item.read ? null : <span className="sr-only">Unread:</span>}
          {item.read ? <Link to={item.href}>{item.title}</Link> : <strong><Link to={item.href}>{item.title}</Link></strong>}
          {item.detail ? <span className="muted">{item.detail}</span> : null}
          <span className="muted">{when(item.at)}</span>
          {item.read ? <span className="muted">Read</span> : <ActionButton label={`Mark read: ${item.title}`} action={() => markRead(companyId, [item.id])}>Mark read</ActionButton>}
        </li>
      )} />
    </section>
  );
}
