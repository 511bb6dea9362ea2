import { api, type Agent, type Company } from '../api.ts';
import { Field, Form } from '../ui.tsx';
import { LocalToolFields, localToolConfig, type AdapterType } from './adapter-config.tsx';
import type { CreateSecret } from './new-secret.tsx';

const ROLES = ['ceo', 'cto', 'cmo', 'cfo', 'engineer', 'designer', 'pm', 'qa', 'devops', 'researcher', 'general'];
const OTHER_KEYS = 'adapterConfigOther';

/** The stored configuration's keys that the adapter's catalog fields do not cover (an adapter's free keys). */
function otherKeysOf(adapter: AdapterType, config: Record<string, unknown> | undefined): Record<string, unknown> {
  const shown = new Set(adapter.fields.map((field) => field.name));
  return Object.fromEntries(Object.entries(config ?? {}).filter(([key]) => !shown.has(key)));
}

/**
 * The form's "other keys" JSON merged into the configuration its fields make. A key the form
 * has a field for is refused here (two places for one value would disagree); on a change, a key
 * the operator took out is sent as null, which removes it.
 */
function withOtherKeys(adapter: AdapterType, config: Record<string, unknown>, text: string, before: Record<string, unknown> | null): Record<string, unknown> {
  let other: unknown = {};
  if (text.trim()) {
    try { other = JSON.parse(text); } catch { throw new Error('Other configuration keys must be a JSON object, e.g. {"headers": {"x-team": "ops"}}'); }
  }
  if (!other || typeof other !== 'object' || Array.isArray(other)) throw new Error('Other configuration keys must be a JSON object, e.g. {"headers": {"x-team": "ops"}}');
  const taken = Object.keys(other).filter((key) => adapter.fields.some((field) => field.name === key));
  if (taken.length) throw new Error(`Set ${taken.join(', ')} with ${taken.length === 1 ? 'its field' : 'their fields'} above, not in the other keys`);
  const removed = Object.keys(before ?? {}).filter((key) => !(key in (other as object)));
  return { ...config, ...other, ...Object.fromEntries(removed.map((key) => [key, null])) };
}

/**
 * Step 2 of hiring: who the agent is, its adapter's fields from the catalog and any other key
 * of its configuration as JSON. Saving hires the agent (`POST .../agent-hires`, pending approval
 * where the company asks for it), or, when the board chooses so on such a company, creates it
 * idle at once (`POST .../agents`, a board route); once hired, saving again changes it.
 */
export function SettingsStep({ companyId, company, adapter, agents, secrets, createSecret, agent, onSaved }: {
  companyId: string; company: Company | undefined; adapter: AdapterType; agents: Agent[]; secrets: Array<{ id: string; name: string }>; createSecret: CreateSecret; agent: Agent | null;
  onSaved: (agent: Agent, pending: boolean) => void;
}) {
  const editing = agent && agent.adapterType === adapter.type ? agent : null;
  const storedOther = editing ? otherKeysOf(adapter, editing.adapterConfig) : null;
  const askApproval = !agent && company?.requireBoardApprovalForNewAgents === true;
  return (
    <Form label="Agent settings" submit={agent ? 'Save and test' : 'Hire and test'} onSubmit={async (fields) => {
      const adapterConfig = withOtherKeys(adapter, localToolConfig(adapter, fields, !!agent), String(fields.get(OTHER_KEYS) ?? ''), storedOther);
      const body = {
        name: String(fields.get('name') ?? '').trim(), title: String(fields.get('title') ?? '').trim() || undefined,
        role: fields.get('role') || undefined, reportsTo: fields.get('reportsTo') || undefined,
        adapterType: adapter.type, adapterConfig,
      };
      if (agent) {
        onSaved(await api.patch<Agent>(`/api/agents/${agent.id}`, { ...body, reportsTo: body.reportsTo ?? null, title: body.title ?? null }), agent.status === 'pending_approval');
        return;
      }
      if (fields.get('skipApproval') === 'on') {
        onSaved(await api.post<Agent>(`/api/companies/${companyId}/agents`, body), false);
        return;
      }
      const hired = await api.post<{ agent: Agent; approval: { id: string } | null }>(`/api/companies/${companyId}/agent-hires`, body);
      onSaved(hired.agent, !!hired.approval);
    }}>
      <Field label="Name" name="name" required defaultValue={agent?.name} />
      <Field label="Title" name="title" defaultValue={agent?.title ?? ''} />
      <Field label="Role" name="role"><select name="role" defaultValue={agent?.role ?? 'general'}>{ROLES.map((role) => <option key={role}>{role}</option>)}</select></Field>
      <Field label="Reports to" name="reportsTo">
        <select name="reportsTo" defaultValue={agent?.reportsTo ?? ''}><option value="">nobody</option>{agents.filter((a) => a.id !== agent?.id).map((a) => <option key={a.id} value={a.id}>{a.name}</option>)}</select>
      </Field>
      <LocalToolFields key={adapter.type} adapter={adapter} secrets={secrets} createSecret={createSecret} initial={editing?.adapterConfig} legend={`${adapter.tool?.name ?? adapter.type} settings`} />
      <details className="other-keys" open={adapter.fields.length === 0 || Object.keys(storedOther ?? {}).length > 0}>
        <summary>Other configuration keys</summary>
        <Field label="Other configuration keys (JSON)" name={OTHER_KEYS} type="textarea" placeholder='{"key": "value"}'
          defaultValue={storedOther && Object.keys(storedOther).length ? JSON.stringify(storedOther, null, 2) : ''} />
        <small className="muted">Keys of {adapter.type}'s configuration that have no field above, as a JSON object; the adapter judges them when the agent is saved.</small>
      </details>
      {askApproval ? (
        <div>
          <label className="field inline"><input type="checkbox" name="skipApproval" /><span>Start at once, without the hiring approval</span></label>
          <small className="muted">{company?.name ?? 'This company'} asks the board to approve each new agent. As a board member you may create it idle at once instead; otherwise it waits under Approvals.</small>
        </div>
      ) : null}
    </Form>
  );
}
