import { api } from '../api.ts';
import { ActionButton, ErrorNote, Field, Form, Loading, Paged, useLoad, when } from '../ui.tsx';

export interface Grant { id: string; principalType: 'agent' | 'user'; principalId: string; permissionKey: string; scope: Record<string, unknown> | null; createdAt: string }

// The kernel's permission keys (kernel/tenancy/permission-grants.ts); the API refuses any other.
const PERMISSION_KEYS = [
  'agents:create', 'tasks:assign', 'tasks:assign_scope', 'tasks:manage_active_checkouts',
  'environments:manage', 'users:invite', 'users:manage_permissions', 'joins:approve',
] as const;

/** Reads the optional scope: JSON the operator types, or nothing for a company-wide grant. */
function scopeOf(fields: FormData): unknown {
  const text = String(fields.get('scope') ?? '').trim();
  if (!text) return undefined;
  try { return JSON.parse(text); } catch { throw new Error('Scope must be JSON, e.g. {"projectIds": ["…"]}'); }
}

/**
 * The permission grants of one principal (an agent or a member user): listed, added (PUT
 * replaces the grant of the same key) and removed. `onChange` runs after every change.
 */
export function PrincipalGrants({ companyId, principalType, principalId, principalName, onChange }: {
  companyId: string; principalType: 'agent' | 'user'; principalId: string; principalName: string; onChange?: () => Promise<void>;
}) {
  const base = `/api/companies/${companyId}/permission-grants`;
  const grants = useLoad(() => api.get<Grant[]>(base, { principalType, principalId }), [companyId, principalType, principalId]);
  const changed = async () => { await grants.reload(); await onChange?.(); };
  const defaults = principalType === 'agent' ? "an agent's default permissions" : "a member's default permissions";
  return (
    <div className="card">
      <h2>Permission grants{principalType === 'user' ? ` of ${principalName}` : ''}</h2>
      {grants.loading && !grants.data ? <Loading what="grants" /> : null}
      <ErrorNote error={grants.error} />
      {grants.data ? <Paged label="Permission grants" items={grants.data} empty={`No grants: ${principalName} has ${defaults} only.`} render={(grant) => (
        <li key={grant.id} className="row-item">
          <code>{grant.permissionKey}</code>
          <span className="muted wrap-anywhere">{grant.scope ? `scope ${JSON.stringify(grant.scope)}` : 'company-wide'} · since {when(grant.createdAt)}</span>
          <ActionButton kind="danger" label={`Remove ${grant.permissionKey}`} action={async () => { await api.delete(`${base}/${grant.id}`); await changed(); }}>Remove</ActionButton>
        </li>)} /> : null}
      <Form label="Add a permission grant" submit="Grant" onSubmit={async (fields) => {
        await api.put(base, { principalType, principalId, permissionKey: fields.get('permissionKey'), scope: scopeOf(fields) });
        await changed();
      }}>
        <Field label="Permission" name="permissionKey">
          <select name="permissionKey" defaultValue="tasks:assign">{PERMISSION_KEYS.map((key) => <option key={key}>{key}</option>)}</select>
        </Field>
        <Field label="Scope (JSON, optional)" name="scope" type="textarea" placeholder='{"projectIds": ["…"]}' />
      </Form>
    </div>
  );
}

/** An agent's grants, shown on its page. */
export function AgentGrants({ companyId, agentId, agentName }: { companyId: string; agentId: string; agentName: string }) {
  return <PrincipalGrants companyId={companyId} principalType="agent" principalId={agentId} principalName={agentName} />;
}
