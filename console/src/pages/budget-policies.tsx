import { api, type Agent } from '../api.ts';
import { ActionButton, Field, Form, money, Paged, useLoad } from '../ui.tsx';

export interface PolicyView {
  id: string; scopeType: string; scopeId: string; metric: string; windowKind: string; amount: number; warnPercent: number; hardStopEnabled: boolean; notifyEnabled: boolean;
  isActive: boolean; observedAmount: number; utilizationPercent: number;
}
interface ProjectRef { id: string; name: string }

const WINDOWS = [['lifetime', 'lifetime of the project'], ['calendar_month_utc', 'each calendar month (UTC)']] as const;

/** Every budget policy of the company, named by its scope, and a form for a project's policy. */
export function BudgetPolicies({ companyId, companyName, policies, onChange }: { companyId: string; companyName: string; policies: PolicyView[]; onChange: () => Promise<void> }) {
  const projects = useLoad(() => api.get<ProjectRef[]>(`/api/companies/${companyId}/projects`), [companyId]);
  const agents = useLoad(() => api.get<Agent[]>(`/api/companies/${companyId}/agents`), [companyId]);
  const scopeName = (policy: PolicyView) => {
    if (policy.scopeType === 'company') return `Company ${companyName}`;
    if (policy.scopeType === 'agent') return `Agent ${agents.data?.find((a) => a.id === policy.scopeId)?.name ?? policy.scopeId.slice(0, 8)}`;
    return `Project ${projects.data?.find((p) => p.id === policy.scopeId)?.name ?? policy.scopeId.slice(0, 8)}`;
  };
  // A policy is keyed by scope, metric and window: posting it again with `isActive` changes only that (omitted fields keep their values).
  const setActive = async (policy: PolicyView, isActive: boolean) => {
    await api.post(`/api/companies/${companyId}/budgets/policies`, {
      scopeType: policy.scopeType, scopeId: policy.scopeId, metric: policy.metric, windowKind: policy.windowKind, amount: policy.amount, isActive,
    });
    await onChange();
  };
  return (
    <>
      <div className="card">
        <h3>Policies</h3>
        <Paged label="Budget policies" items={policies} size={100} empty="No budget policies yet. Set a project’s budget below; the company’s monthly budget is set above, an agent’s on its page." render={(policy) => (
          <li key={policy.id} className="row-item">
            <strong>{scopeName(policy)}</strong> {money(policy.observedAmount)} of {money(policy.amount)} ({policy.utilizationPercent}%)
            <span className="muted">{policy.windowKind === 'lifetime' ? 'lifetime' : 'monthly'} · warn at {policy.warnPercent}%{policy.hardStopEnabled ? ' · hard stop' : ''}{policy.isActive ? '' : ' · inactive'}</span>
            <ActionButton label={`${policy.isActive ? 'Deactivate' : 'Activate'} the policy of ${scopeName(policy)}`} action={() => setActive(policy, !policy.isActive)}>
              {policy.isActive ? 'Deactivate' : 'Activate'}
            </ActionButton>
          </li>
        )} />
      </div>
      <div className="card">
        <h3>Project budget</h3>
        <p className="muted">Setting a budget for a project that has one replaces it.</p>
        <Form label="Project budget" submit="Set project budget" onSubmit={async (fields) => {
          const dollars = String(fields.get('dollars') ?? '').trim();
          await api.post(`/api/companies/${companyId}/budgets/policies`, {
            scopeType: 'project', scopeId: fields.get('projectId') || null, amount: dollars === '' ? null : Math.round(Number(dollars) * 100),
            windowKind: fields.get('windowKind'), warnPercent: Number(fields.get('warnPercent')), hardStopEnabled: fields.get('hardStop') === 'on',
          });
          await onChange();
        }}>
          <Field label="Project" name="projectId">
            <select name="projectId" required defaultValue=""><option value="" disabled>choose a project</option>{(projects.data ?? []).map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}</select>
          </Field>
          <Field label="Budget in dollars" name="dollars" type="number" step="0.01" required />
          <Field label="Window" name="windowKind">
            <select name="windowKind" defaultValue="lifetime">{WINDOWS.map(([value, label]) => <option key={value} value={value}>{label}</option>)}</select>
          </Field>
          <Field label="Warn at percent" name="warnPercent" type="number" required defaultValue="80" />
          <label className="check"><input type="checkbox" name="hardStop" defaultChecked /> Hard stop: pause the project's work at 100%</label>
        </Form>
      </div>
    </>
  );
}
