import { useState } from 'react';
import { api, type Agent } from '../api.ts';
import { ErrorNote, Field, Form, Loading, Paged, Status, useLoad } from '../ui.tsx';

interface Goal { id: string; title: string; description: string | null; level: string; status: string; parentId: string | null; ownerAgentId: string | null; createdAt: string; updatedAt: string }

const GOAL_LEVELS = ['company', 'team', 'agent', 'task'] as const;
const GOAL_STATUSES = ['planned', 'active', 'achieved', 'cancelled'] as const;

/** One goal: its status changes at once; title and parent through a small form. */
function GoalRow({ goal, goals, agentName, onChange }: { goal: Goal; goals: Goal[]; agentName: (id: string | null) => string; onChange: () => Promise<void> }) {
  const [error, setError] = useState<unknown>(null);
  const parent = goals.find((g) => g.id === goal.parentId);
  const patch = async (body: Record<string, unknown>) => { await api.patch(`/api/goals/${goal.id}`, body); await onChange(); };
  return (
    <li className="row-item stack">
      <div className="row">
        <strong>{goal.title}</strong> <Status value={goal.status} />
        <span className="muted">{goal.level}{parent ? ` · under ${parent.title}` : ''} · owner {agentName(goal.ownerAgentId)}</span>
        <label className="field inline"><span>Status</span>
          <select aria-label={`Status of ${goal.title}`} value={goal.status} onChange={(event) => { setError(null); patch({ status: event.target.value }).catch(setError); }}>
            {GOAL_STATUSES.map((s) => <option key={s}>{s}</option>)}
          </select>
        </label>
      </div>
      {goal.description ? <p className="prewrap">{goal.description}</p> : null}
      <ErrorNote error={error} />
      <details>
        <summary>Edit {goal.title}</summary>
        <Form key={goal.updatedAt} label={`Edit goal ${goal.title}`} submit="Save goal" onSubmit={(fields) => patch({ title: String(fields.get('title') ?? '').trim(), parentId: fields.get('parentId') || null })}>
          <Field label="Title" name="title" required defaultValue={goal.title} />
          <Field label="Parent goal" name="parentId">
            <select name="parentId" defaultValue={goal.parentId ?? ''}><option value="">none</option>{goals.map((g) => <option key={g.id} value={g.id}>{g.title}</option>)}</select>
          </Field>
        </Form>
      </details>
    </li>
  );
}

export function GoalsPage({ companyId }: { companyId: string }) {
  const [status, setStatus] = useState('');
  const goals = useLoad(() => api.get<Goal[]>(`/api/companies/${companyId}/goals`), [companyId]);
  const agents = useLoad(() => api.get<Agent[]>(`/api/companies/${companyId}/agents`), [companyId]);
  const all = goals.data ?? [];
  const agentName = (id: string | null) => agents.data?.find((a) => a.id === id)?.name ?? '—';
  const shown = status ? all.filter((goal) => goal.status === status) : all;
  return (
    <section>
      <h1>Goals</h1>
      <details className="card">
        <summary>New goal</summary>
        <Form label="New goal" submit="Create goal" onSubmit={async (fields) => {
          await api.post(`/api/companies/${companyId}/goals`, {
            title: String(fields.get('title') ?? '').trim(), description: fields.get('description') || undefined, level: fields.get('level') || undefined,
            status: fields.get('status') || undefined, parentId: fields.get('parentId') || undefined, ownerAgentId: fields.get('ownerAgentId') || undefined,
          });
          await goals.reload();
        }}>
          <Field label="Title" name="title" required />
          <Field label="Description" name="description" type="textarea" />
          <Field label="Level" name="level"><select name="level" defaultValue="task">{GOAL_LEVELS.map((l) => <option key={l}>{l}</option>)}</select></Field>
          <Field label="Status" name="status"><select name="status" defaultValue="planned">{GOAL_STATUSES.map((s) => <option key={s}>{s}</option>)}</select></Field>
          <Field label="Parent goal" name="parentId"><select name="parentId" defaultValue=""><option value="">none</option>{all.map((g) => <option key={g.id} value={g.id}>{g.title}</option>)}</select></Field>
          <Field label="Owner agent" name="ownerAgentId"><select name="ownerAgentId" defaultValue=""><option value="">nobody</option>{(agents.data ?? []).map((a) => <option key={a.id} value={a.id}>{a.name}</option>)}</select></Field>
        </Form>
      </details>
      <div className="toolbar">
        <label className="field inline"><span>Show</span>
          <select value={status} onChange={(event) => setStatus(event.target.value)}><option value="">every status</option>{GOAL_STATUSES.map((s) => <option key={s}>{s}</option>)}</select>
        </label>
      </div>
      {goals.loading && !goals.data ? <Loading what="goals" /> : null}
      <ErrorNote error={goals.error ?? agents.error} />
      {goals.data ? <Paged label="Goals" items={shown} empty="No goals here. Open “New goal” above to give the company’s work a direction; issues and projects can then point to it." render={(goal) => <GoalRow key={goal.id} goal={goal} goals={all} agentName={agentName} onChange={goals.reload} />} /> : null}
    </section>
  );
}
