import { api } from '../api.ts';
import { ActionButton, ErrorNote, Field, Form, Loading, useLoad, when } from '../ui.tsx';

interface Grant { id: string; principalType: string; principalId: string; permissionKey: string; scope: Record<string, unknown> | null; createdAt: string }

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

/** The permission grants of one agent: listed, added (PUT replaces the grant of the same key) and removed. */
export function AgentGrants({ companyId, agentId, agentName }: { companyId: string; agentId: string; agentName: string }) {
  const base = `/api/companies/${companyId}/permission-grants`;
  const grants = useLoad(() => api.get<Grant[]>(base, { principalType: 'agent', principalId: agentId }), [companyId, agentId]);
  return (
    <div className="card">
      <h2>Permission grants</h2>
      {grants.loading && !grants.data ? <Loading what="grants" /> : null}
      <ErrorNote error={grants.error} />
      {grants.data && grants.data.length === 0 ? <p className="muted">No grants: {agentName} has an agent's default permissions only.</p> : null}
      <ul className="rows" aria-label="Permission grants">{(grants.data ?? []).map((grant) => (
        <li key={grant.id} className="row-item">
          <code>{grant.permissionKey}</code>
          <span className="muted">{grant.scope ? `scope ${JSON.stringify(grant.scope)}` : 'company-wide'} · since {when(grant.createdAt)}</span>
          <ActionButton kind="danger" label={`Remove ${grant.permissionKey}`} action={async () => { await api.delete(`${base}/${grant.id}`); await grants.reload(); }}>Remove</ActionButton>
        </li>))}
      </ul>
      <Form label="Add a permission grant" submit="Grant" onSubmit={async (fields) => {
        await api.put(base, { principalType: 'agent', principalId: agentId, permissionKey: fields.get('permissionKey'), scope: scopeOf(fields) });
        await grants.reload();
      }}>
        <Field label="Permission" name="permissionKey">
          <select name="permissionKey" defaultValue="tasks:assign">{PERMISSION_KEYS.map((key) => <option key={key}>{key}</option>)}</select>
        </Field>
        <Field label="Scope (JSON, optional)" name="scope" type="textarea" placeholder='{"projectIds": ["…"]}' />
      </Form>
    </div>
  );
}
