import { useState } from 'react';
import { api } from '../api.ts';
import { type Grant, PrincipalGrants } from './grants.tsx';
import { ErrorNote, Loading, Paged, Status, useLoad, when } from '../ui.tsx';

interface Member { userId: string; email: string | null; name: string | null; role: string; status: string; createdAt: string }

function memberName(member: Member): string {
  return member.name && member.email ? `${member.name} <${member.email}>` : member.email ?? member.name ?? member.userId;
}

/**
 * The company's member users with the permissions granted to each; a member's grants are
 * listed, granted and removed with the agent page's component.
 */
export function MembersPage({ companyId }: { companyId: string }) {
  const members = useLoad(() => api.get<Member[]>(`/api/companies/${companyId}/members`), [companyId]);
  const grants = useLoad(() => api.get<Grant[]>(`/api/companies/${companyId}/permission-grants`, { principalType: 'user' }), [companyId]);
  const [open, setOpen] = useState<Member | null>(null);
  const keysOf = (userId: string) => (grants.data ?? []).filter((grant) => grant.principalId === userId).map((grant) => grant.permissionKey);
  return (
    <section>
      <h1>Members</h1>
      <p className="muted">The company's board members. A member without grants has a member's default permissions.</p>
      {members.loading && !members.data ? <Loading what="members" /> : null}
      <ErrorNote error={members.error} />
      <ErrorNote error={grants.error} />
      {members.data ? <Paged label="Members" items={members.data} empty="No members yet. A user who signs in and joins the company appears here; until then the board acts alone." render={(member) => (
        <li key={member.userId} className="row-item">
          <span className="wrap-anywhere">{memberName(member)}</span> <span className="muted">{member.role}</span> <Status value={member.status} />
          <span className="muted">{keysOf(member.userId).join(', ') || 'no grants'} · since {when(member.createdAt)}</span>
          <button type="button" aria-pressed={open?.userId === member.userId} onClick={() => setOpen(member)}>Permissions<span className="sr-only"> of {memberName(member)}</span></button>
        </li>)} /> : null}
      {open ? <PrincipalGrants key={open.userId} companyId={companyId} principalType="user" principalId={open.userId} principalName={memberName(open)} onChange={grants.reload} /> : null}
    </section>
  );
}
