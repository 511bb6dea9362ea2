import { useState } from 'react';
import { api, type Agent } from '../api.ts';
import { ErrorNote, Loading, Paged, useLoad, when } from '../ui.tsx';

interface Entry { id: string; actorType: string; actorId: string; action: string; entityType: string; entityId: string; agentId: string | null; createdAt: string; details: unknown }

export function ActivityPage({ companyId }: { companyId: string }) {
  const [filters, setFilters] = useState<{ agentId?: string; entityType?: string }>({});
  const activity = useLoad(() => api.get<Entry[]>(`/api/companies/${companyId}/activity`, filters), [companyId, filters.agentId, filters.entityType]);
  const agents = useLoad(() => api.get<Agent[]>(`/api/companies/${companyId}/agents`), [companyId]);
  return (
    <section>
      <h1>Activity</h1>
      <div className="toolbar">
        <label className="field inline"><span>Agent</span>
          <select value={filters.agentId ?? ''} onChange={(event) => setFilters({ ...filters, agentId: event.target.value || undefined })}>
            <option value="">any</option>{(agents.data ?? []).map((a) => <option key={a.id} value={a.id}>{a.name}</option>)}
          </select>
        </label>
        <label className="field inline"><span>Entity type</span>
          <input defaultValue={filters.entityType ?? ''} placeholder="issue, agent…" onBlur={(event) => setFilters({ ...filters, entityType: event.target.value || undefined })} onKeyDown={(event) => { if (event.key === 'Enter') setFilters({ ...filters, entityType: event.currentTarget.value || undefined }); }} />
        </label>
      </div>
      {activity.loading ? <Loading what="activity" /> : null}
      <ErrorNote error={activity.error} />
      <Paged label="Activity entries" size={100} items={activity.data ?? []} empty="No activity matches." render={(entry) => (
        <li key={entry.id} className="row-item">
          <span className="muted">{when(entry.createdAt)}</span> <strong>{entry.action}</strong> {entry.entityType} <span className="muted">{entry.entityId.slice(0, 12)} · {entry.actorType}</span>
        </li>
      )} />
    </section>
  );
}
