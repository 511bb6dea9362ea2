import { useState } from 'react';
import { api, type Agent, type Issue } from '../api.ts';
import { Link } from '../router.tsx';
import { ErrorNote, Field, Form, useLoad } from '../ui.tsx';
import type { AdapterType } from './adapter-config.tsx';

/**
 * Step 1 of hiring: every adapter type of the catalog as a choice. The ones this instance cannot
 * run are shown, disabled, with the reason and what to do; a local tool whose executable is not
 * installed can be chosen (its command may name it elsewhere) and says how to install it.
 */
export function AdapterStep({ catalog, chosen, onChoose }: { catalog: AdapterType[]; chosen: string | null; onChoose: (type: string) => void }) {
  const [picked, setPicked] = useState(chosen ?? '');
  const usable = catalog.filter((adapter) => adapter.availability?.status !== 'unavailable');
  const unusable = catalog.filter((adapter) => adapter.availability?.status === 'unavailable');
  return (
    <form aria-label="Choose an adapter" className="form" onSubmit={(event) => { event.preventDefault(); if (picked) onChoose(picked); }}>
      <fieldset className="adapter-choices">
        <legend>Adapters this instance can run</legend>
        {usable.map((adapter) => (
          <label key={adapter.type} className="choice">
            <input type="radio" name="adapterType" value={adapter.type} checked={picked === adapter.type} onChange={() => setPicked(adapter.type)} />
            <span>
              <strong>{adapter.tool?.name ?? adapter.type}</strong> <code className="muted">{adapter.type}</code>
              <small className="muted choice-summary">{adapter.summary}</small>
              {adapter.availability?.status === 'tool_missing' ? (
                <small className="notice warn" data-testid={`tool-missing-${adapter.type}`}>{adapter.availability.reason} Install it with <code>{adapter.availability.installHint}</code>.</small>
              ) : null}
            </span>
          </label>
        ))}
      </fieldset>
      {unusable.length ? (
        <div className="unavailable">
          <h3>Unavailable here</h3>
          <ul className="rows" aria-label="Unavailable adapters">
            {unusable.map((adapter) => (
              <li key={adapter.type} className="row-item" data-type={adapter.type}>
                <span><strong>{adapter.tool?.name ?? adapter.type}</strong> <code className="muted">{adapter.type}</code></span>
                <span>{adapter.availability?.reason}</span>
                {adapter.availability?.installHint ? <span className="muted">What to do: {adapter.availability.installHint}</span> : null}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
      <div className="form-actions"><button type="submit" className="primary" disabled={!picked}>Next: the agent's settings</button></div>
    </form>
  );
}

/** Step 4: the agent's monthly budget (0: none), set with PATCH /api/agents/{id}/budgets. */
export function BudgetStep({ agent, onDone }: { agent: Agent; onDone: (agent: Agent) => void }) {
  return (
    <Form label="Monthly budget" submit="Next: a first issue" onSubmit={async (fields) => {
      const cents = Math.round(Number(fields.get('dollars') ?? 0) * 100);
      await api.patch(`/api/agents/${agent.id}/budgets`, { budgetMonthlyCents: cents });
      onDone(await api.get<Agent>(`/api/agents/${agent.id}`));
    }}>
      <p className="muted">Runs stop when the agent has spent this much in a calendar month (measured cost). 0 sets no budget of its own; the company's still applies.</p>
      <Field label="Monthly budget in dollars (0: none)" name="dollars" type="number" step="0.01" required defaultValue={String((agent.budgetMonthlyCents ?? 0) / 100)} />
    </Form>
  );
}

/**
 * Step 5, optional: a first issue for the agent, new or one of the company's open unassigned
 * issues. Assigning it wakes the agent (its first run).
 */
export function IssueStep({ companyId, agent, onDone }: { companyId: string; agent: Agent; onDone: (issue: Issue | null) => void }) {
  const issues = useLoad(() => api.get<Issue[]>(`/api/companies/${companyId}/issues`), [companyId]);
  const open = (issues.data ?? []).filter((issue) => !issue.assigneeAgentId && !['done', 'cancelled'].includes(issue.status));
  const waiting = agent.status === 'pending_approval';
  return (
    <div className="grid2">
      <div className="card">
        <h3>A new issue</h3>
        <Form label="First issue" submit="Create and assign" onSubmit={async (fields) => {
          onDone(await api.post<Issue>(`/api/companies/${companyId}/issues`, {
            title: String(fields.get('title') ?? '').trim(), description: String(fields.get('description') ?? '').trim() || undefined,
            status: 'todo', assigneeAgentId: agent.id,
          }));
        }}>
          <Field label="Title" name="title" required />
          <Field label="Description" name="description" type="textarea" />
        </Form>
      </div>
      <div className="card">
        <h3>An open issue</h3>
        <ErrorNote error={issues.error} />
        {open.length ? (
          <Form label="Assign an open issue" submit="Assign" onSubmit={async (fields) => {
            onDone(await api.patch<Issue>(`/api/issues/${String(fields.get('issueId'))}`, { assigneeAgentId: agent.id }));
          }}>
            <Field label="Issue" name="issueId">
              <select name="issueId" required>{open.map((issue) => <option key={issue.id} value={issue.id}>{issue.identifier} {issue.title}</option>)}</select>
            </Field>
          </Form>
        ) : <p className="muted">No open unassigned issue.</p>}
        <button type="button" onClick={() => onDone(null)}>Skip: no issue now</button>
      </div>
      {waiting ? <p className="muted">The hire waits for approval: the agent starts on its issue once it is approved (<Link to={`/companies/${companyId}/approvals`}>Approvals</Link>).</p> : null}
    </div>
  );
}
