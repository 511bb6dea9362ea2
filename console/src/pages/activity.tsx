import { useState, type ReactNode } from 'react';
import { api } from '../api.ts';
import { Link } from '../router.tsx';
import { ErrorNote, Loading, money, Paged, useLoad, when } from '../ui.tsx';
import { ENTITY_KINDS, sentenceFor } from './activity-sentences.ts';
import { actorName, EntityName, useNames, type Entry, type Names } from './activity-names.tsx';

/** The sentence of an entry: the actor's name, then the table's words with the entity (linked) and the amount put in. */
function Sentence({ entry, names, companyId }: { entry: Entry; names: Names; companyId: string }) {
  const details = (entry.details ?? {}) as Record<string, unknown>;
  const parts: ReactNode[] = [];
  sentenceFor(entry.action).split(/(\{entity\}|\{amount\})/).forEach((piece, index) => {
    if (piece === '{entity}') parts.push(<EntityName key={index} entry={entry} names={names} companyId={companyId} />);
    else if (piece === '{amount}') parts.push(money(Number(details.costCents ?? details.amountCents ?? 0)));
    else if (piece) parts.push(piece);
  });
  return <p className="sentence"><strong>{actorName(entry, names)}</strong> {parts}</p>;
}

/** The actor filter's value: `type:id` (an empty id: every actor of the type). */
function actorQuery(value: string): { actorType?: string; actorId?: string } {
  if (!value) return {};
  const [actorType, ...rest] = value.split(':');
  const actorId = rest.join(':');
  return actorId ? { actorType, actorId } : { actorType };
}

/**
 * The company's activity as sentences: who did what to which named entity (linked to its page),
 * when, with the stored details folded under each; filtered by actor and kind of entity on the
 * server (the activity route's `actorType`, `actorId` and `entityType`).
 */
export function ActivityPage({ companyId }: { companyId: string }) {
  const [actor, setActor] = useState('');
  const [kind, setKind] = useState('');
  const activity = useLoad(() => api.get<Entry[]>(`/api/companies/${companyId}/activity`, { ...actorQuery(actor), entityType: kind || undefined }), [companyId, actor, kind]);
  const names = useNames(companyId, activity.data);
  return (
    <section>
      <h1>Activity</h1>
      <div className="toolbar" role="group" aria-label="Filters">
        <label className="field inline"><span>Who</span>
          <select value={actor} onChange={(event) => setActor(event.target.value)}>
            <option value="">anyone</option>
            <optgroup label="Agents">{[...names.agents].map(([id, name]) => <option key={id} value={`agent:${id}`}>{name}</option>)}</optgroup>
            <optgroup label="People">
              <option value="user:">any board user</option>
              <option value="user:local-board">the local board</option>
              {[...names.users].map(([id, name]) => <option key={id} value={`user:${id}`}>{name}</option>)}
            </optgroup>
            <option value="system:">Keel and plugins</option>
          </select>
        </label>
        <label className="field inline"><span>About</span>
          <select value={kind} onChange={(event) => setKind(event.target.value)}>
            <option value="">everything</option>
            {ENTITY_KINDS.map(([type, label]) => <option key={type} value={type}>{label}</option>)}
          </select>
        </label>
      </div>
      {activity.loading ? <Loading what="activity" /> : null}
      <ErrorNote error={activity.error} />
      {activity.data ? <Paged label="Activity entries" size={100} items={activity.data} empty="No activity matches. Clear the filters to see every entry; a new company’s log fills as agents and the board work." render={(entry) => (
        <li key={entry.id} className="row-item activity-entry" data-action={entry.action}>
          <Sentence entry={entry} names={names} companyId={companyId} />
          <span className="muted"><time dateTime={entry.createdAt}>{when(entry.createdAt)}</time></span>
          <details><summary>Details</summary>
            <dl className="facts">
              <div><dt>Action</dt><dd><code>{entry.action}</code></dd></div>
              <div><dt>Entity</dt><dd><code>{entry.entityType} {entry.entityId}</code></dd></div>
              <div><dt>Actor</dt><dd><code>{entry.actorType} {entry.actorId}</code></dd></div>
              {entry.runId ? <div><dt>Run</dt><dd><Link to={`/companies/${companyId}/runs/${entry.runId}`}>run {entry.runId.slice(0, 8)}</Link></dd></div> : null}
            </dl>
            {entry.details ? <pre className="code" tabIndex={0} aria-label="Details">{JSON.stringify(entry.details, null, 2)}</pre> : null}
          </details>
        </li>
      )} /> : null}
    </section>
  );
}
