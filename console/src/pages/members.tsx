import { useState } from 'react';
import { api } from '../api.ts';
import { type Grant, PrincipalGrants } from './grants.tsx';
import { ErrorNote, Field, Form, Loading, Paged, useLoad } from '../ui.tsx';

interface MemberGrants { userId: string; keys: string[] }

/** The company's user grants gathered per member, in the order the API lists them. */
function byMember(grants: Grant[]): MemberGrants[] {
  const members = new Map<string, string[]>();
  for (const grant of grants) members.set(grant.principalId, [...(members.get(grant.principalId) ?? []), grant.permissionKey]);
  return [...members].map(([userId, keys]) => ({ userId, keys }));
}

/**
 * Board members' permission grants. The kernel lists grants, not members, so a member shows
 * here once they hold a grant; any other member is opened by their user id (the API refuses a
 * user who is not a member of the company). Their grants use the agent page's component.
 */
export function MembersPage({ companyId }: { companyId: string }) {
  const grants = useLoad(() => api.get<Grant[]>(`/api/companies/${companyId}/permission-grants`, { principalType: 'user' }), [companyId]);
  const [open, setOpen] = useState<string | null>(null);
  return (
    <section>
      <h1>Members</h1>
      <p className="muted">Board members holding permission grants in this company. A member without grants has a member's default permissions; open them by user id to grant some.</p>
      {grants.loading && !grants.data ? <Loading what="member grants" /> : null}
      <ErrorNote error={grants.error} />
      {grants.data ? <Paged label="Members with grants" items={byMember(grants.data)} empty="No member holds a grant yet." render={(member) => (
        <li key={member.userId} className="row-item">
          <button type="button" className="link wrap-anywhere" aria-pressed={open === member.userId} onClick={() => setOpen(member.userId)}>{member.userId}</button>
          <span className="muted">{member.keys.join(', ')}</span>
        </li>)} /> : null}
      <Form label="Open a member" submit="Open member" onSubmit={async (fields) => {
        const userId = String(fields.get('userId') ?? '').trim();
        if (!userId) throw new Error('Type a member\'s user id');
        setOpen(userId);
      }}>
        <Field label="Member user id" name="userId" required />
      </Form>
      {open ? <PrincipalGrants key={open} companyId={companyId} principalType="user" principalId={open} principalName={open} onChange={grants.reload} /> : null}
    </section>
  );
}
