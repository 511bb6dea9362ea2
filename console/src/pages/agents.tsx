import { useState } from 'react';
import { api, type Agent, type Company } from '../api.ts';
import { Link, navigate } from '../router.tsx';
import { AgentGrants } from './grants.tsx';
import { AgentSkills } from './agent-skills.tsx';
import { AgentTool } from './agent-tool.tsx';
import { AgentRuns } from './run-list.tsx';
import { ActionButton, ErrorNote, Field, Form, Loading, money, Status, useLoad, when } from '../ui.tsx';

/** The org chart: agents under the ones they report to. */
function OrgChart({ agents, companyId }: { agents: Agent[]; companyId: string }) {
  const byManager = new Map<string | null, Agent[]>();
  const ids = new Set(agents.map((a) => a.id));
  for (const agent of agents) {
    const manager = agent.reportsTo && ids.has(agent.reportsTo) ? agent.reportsTo : null;
    byManager.set(manager, [...(byManager.get(manager) ?? []), agent]);
  }
  const branch = (manager: string | null, depth: number): React.ReactNode => {
    const reports = byManager.get(manager) ?? [];
    if (reports.length === 0 || depth > 20) return null;
    return (
      <ul className={depth === 0 ? 'org' : undefined}>
        {reports.map((agent) => (
          <li key={agent.id}>
            <div className="org-node">
              <Link to={`/companies/${companyId}/agents/${agent.id}`}>{agent.name}</Link>
              <span className="muted">{agent.title ?? agent.role}</span>
              <Status value={agent.status} />
            </div>
            {branch(agent.id, depth + 1)}
          </li>
        ))}
      </ul>
    );
  };
  return agents.length ? <>{branch(null, 0)}</> : <p className="muted">No agents yet.</p>;
}

/**
 * The company's agents as an org chart. Agents are added through the hiring wizard only
 * (`/agents/new`): it offers what the old create and hire forms did (any adapter this instance
 * runs, its free configuration keys as JSON, and, where hires need approval, creating the agent
 * idle at once); an agent's own page edits it.
 */
export function AgentsPage({ companyId, company }: { companyId: string; company: Company | undefined }) {
  const agents = useLoad(() => api.get<Agent[]>(`/api/companies/${companyId}/agents`), [companyId]);
  return (
    <section>
      <div className="title-row"><h1>Agents</h1><Link className="button primary" to={`/companies/${companyId}/agents/new`}>Hire an agent</Link></div>
      {company?.requireBoardApprovalForNewAgents ? <p className="muted">New hires of {company.name} wait for the board's approval (<Link to={`/companies/${companyId}/approvals`}>Approvals</Link>).</p> : null}
      <h2>Org chart</h2>
      {agents.loading && !agents.data ? <Loading what="agents" /> : null}
      <ErrorNote error={agents.error} />
      {agents.data ? <OrgChart agents={agents.data} companyId={companyId} /> : null}
    </section>
  );
}

interface Revision { id: string; createdAt: string; source?: string; changedKeys?: string[] }
interface Key { id: string; name: string; keyPrefix: string; createdAt: string; lastUsedAt: string | null; revokedAt: string | null }

export function AgentPage({ companyId, agentId }: { companyId: string; agentId: string }) {
  const agent = useLoad(() => api.get<Agent>(`/api/agents/${agentId}`), [agentId]);
  const config = useLoad(() => api.get<Record<string, unknown>>(`/api/agents/${agentId}/configuration`), [agentId]);
  const revisions = useLoad(() => api.get<Revision[]>(`/api/agents/${agentId}/config-revisions`), [agentId]);
  const keys = useLoad(() => api.get<Key[]>(`/api/agents/${agentId}/keys`), [agentId]);
  const [token, setToken] = useState<string | null>(null);
  const [woke, setWoke] = useState<string | null>(null);
  if (agent.loading && !agent.data) return <Loading what="the agent" />;
  if (agent.error) return <ErrorNote error={agent.error} />;
  const a = agent.data!;
  const reloadAll = async () => { await Promise.all([agent.reload(), config.reload(), revisions.reload()]); };
  const act = (verb: string) => async () => { await api.post(`/api/agents/${agentId}/${verb}`, {}); await agent.reload(); };
  return (
    <section>
      <div className="title-row"><h1>{a.name}</h1><Status value={a.status} /></div>
      <p className="muted">{a.title ?? a.role} · {a.adapterType}{a.pauseReason ? ` · paused: ${a.pauseReason}` : ''}</p>
      <div className="row">
        {a.status === 'pending_approval' ? <ActionButton kind="primary" action={act('approve')}>Approve hire</ActionButton> : null}
        {a.status !== 'paused' && a.status !== 'terminated' && a.status !== 'pending_approval' ? <ActionButton action={act('pause')}>Pause</ActionButton> : null}
        {a.status === 'paused' && (a.pauseReason === 'imported' || a.pauseReason === 'managed') ? <ActionButton kind="primary" action={act('approve')}>Approve configuration</ActionButton> : null}
        {a.status === 'paused' ? <ActionButton action={act('resume')}>Resume</ActionButton> : null}
        {a.status !== 'terminated' ? <ActionButton kind="danger" action={act('terminate')}>Terminate</ActionButton> : null}
        {a.status !== 'terminated' && a.status !== 'pending_approval' ? (
          <ActionButton kind="primary" action={async () => {
            const answer = await api.post<{ run: { id: string } | null; status: string }>(`/api/agents/${agentId}/wakeup`, { source: 'on_demand', reason: 'console' });
            if (answer.run) navigate(`/companies/${companyId}/runs/${answer.run.id}`);
            else setWoke(`Wakeup ${answer.status}`);
          }}>Run now</ActionButton>
        ) : null}
      </div>
      {woke ? <p role="status">{woke}</p> : null}
      <dl className="facts">
        <div><dt>Monthly budget</dt><dd>{a.budgetMonthlyCents ? money(a.budgetMonthlyCents) : 'none'}</dd></div>
        <div><dt>Spent this month</dt><dd>{money(a.spentMonthlyCents)}</dd></div>
      </dl>
      <div className="grid2">
        <div className="card">
          <h2>Budget</h2>
          <Form label="Agent budget" submit="Set budget" onSubmit={async (fields) => {
            await api.patch(`/api/agents/${agentId}/budgets`, { budgetMonthlyCents: Math.round(Number(fields.get('dollars')) * 100) });
            await agent.reload();
          }}>
            <Field label="Monthly budget in dollars (0: none)" name="dollars" type="number" step="0.01" required defaultValue={String((a.budgetMonthlyCents ?? 0) / 100)} />
          </Form>
        </div>
        <div className="card">
          <h2>API keys</h2>
          {token ? <p role="status" className="once">New key (shown once, copy it now): <code data-testid="agent-token">{token}</code></p> : null}
          <ActionButton action={async () => { const key = await api.post<{ token: string }>(`/api/agents/${agentId}/keys`, { name: 'console' }); setToken(key.token); await keys.reload(); }}>Create key</ActionButton>
          <ul className="rows">{(keys.data ?? []).map((key) => (
            <li key={key.id} className="row-item"><code>{key.keyPrefix}…</code> {key.name} <span className="muted">{key.revokedAt ? 'revoked' : `last used ${when(key.lastUsedAt)}`}</span>
              {!key.revokedAt ? <ActionButton label={`Revoke key ${key.keyPrefix}`} action={async () => { await api.delete(`/api/agents/${agentId}/keys/${key.id}`); await keys.reload(); }}>Revoke</ActionButton> : null}
            </li>))}
          </ul>
        </div>
      </div>
      <AgentRuns companyId={companyId} agentId={agentId} />
      <AgentTool companyId={companyId} agent={a} onSaved={reloadAll} />
      <AgentGrants companyId={companyId} agentId={agentId} agentName={a.name} />
      <AgentSkills agentId={agentId} />
      <div className="card">
        <h2>Configuration</h2>
        <p className="muted">Secret values are masked by the server.</p>
        <ErrorNote error={config.error} />
        <pre className="code" tabIndex={0} aria-label="Configuration">{JSON.stringify(config.data ?? {}, null, 2)}</pre>
        <Form label="Change adapter configuration" submit="Save configuration" onSubmit={async (fields) => {
          let adapterConfig: unknown;
          try { adapterConfig = JSON.parse(String(fields.get('adapterConfig'))); } catch { throw new Error('Adapter configuration must be JSON'); }
          await api.patch(`/api/agents/${agentId}`, { adapterConfig });
          await reloadAll();
        }}>
          <Field label="Adapter configuration (JSON)" name="adapterConfig" type="textarea" required defaultValue={JSON.stringify(a.adapterConfig ?? {}, null, 2)} />
        </Form>
        <h3>Revisions</h3>
        <ul className="rows">{(revisions.data ?? []).slice(0, 50).map((revision) => (
          <li key={revision.id} className="row-item">{when(revision.createdAt)} <span className="muted">{(revision.changedKeys ?? []).join(', ')}</span>
            <ActionButton label={`Roll back to revision of ${when(revision.createdAt)}`} action={async () => { await api.post(`/api/agents/${agentId}/config-revisions/${revision.id}/rollback`, {}); await reloadAll(); }}>Roll back</ActionButton>
          </li>))}
        </ul>
      </div>
    </section>
  );
}
