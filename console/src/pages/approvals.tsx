import { api } from '../api.ts';
import { ActionButton, ErrorNote, Loading, Paged, Status, useLoad, when } from '../ui.tsx';

interface Approval { id: string; type: string; status: string; payload: Record<string, unknown>; createdAt: string }

export function ApprovalsPage({ companyId }: { companyId: string }) {
  const approvals = useLoad(() => api.get<Approval[]>(`/api/companies/${companyId}/approvals`), [companyId]);
  const decide = (id: string, verb: 'approve' | 'reject') => async () => { await api.post(`/api/approvals/${id}/${verb}`, {}); await approvals.reload(); };
  return (
    <section>
      <h1>Approvals</h1>
      {approvals.loading && !approvals.data ? <Loading what="approvals" /> : null}
      <ErrorNote error={approvals.error} />
      <Paged label="Approvals" items={approvals.data ?? []} empty="Nothing waits for approval. Hires and other requests that need the board appear here." render={(approval) => (
        <li key={approval.id} className="row-item">
          <strong>{approval.type.replace(/_/g, ' ')}</strong>
          <span>{String(approval.payload?.name ?? approval.payload?.agentName ?? '')}</span>
          <Status value={approval.status} />
          <span className="muted">{when(approval.createdAt)}</span>
          {approval.status === 'pending' ? <>
            <ActionButton kind="primary" label={`Approve ${approval.type.replace(/_/g, ' ')} ${String(approval.payload?.name ?? '')}`} action={decide(approval.id, 'approve')}>Approve</ActionButton>
            <ActionButton kind="danger" label={`Reject ${approval.type.replace(/_/g, ' ')} ${String(approval.payload?.name ?? '')}`} action={decide(approval.id, 'reject')}>Reject</ActionButton>
          </> : null}
        </li>
      )} />
    </section>
  );
}
