import { useEffect, useState } from 'react';
import { api, type Agent, type Company, type Issue, type Run } from '../api.ts';
import { Link } from '../router.tsx';
import { ActionButton, ErrorNote, Field, Form, Loading, useLoad } from '../ui.tsx';
import { useAdapterCatalog } from './adapter-config.tsx';
import { TestResult, type TestAnswer } from './agent-tool.tsx';
import { AdapterStep, BudgetStep, IssueStep } from './hire-steps.tsx';
import { SettingsStep } from './hire-settings.tsx';
import { ENDED } from './runs.tsx';
import { useSecretsWithCreate } from './variables.tsx';

const STEPS = ['Adapter', 'Settings', 'Environment test', 'Budget', 'First issue'] as const;

/**
 * Hiring an agent, step by step (the console's one way to add an agent): the adapter (among those this instance can run), its
 * settings drawn from the adapter's fields in the catalog, the environment test, a monthly
 * budget, and optionally a first issue. The agent is hired (`POST .../agent-hires`, pending
 * approval where the company asks for it) when its settings are saved, since the environment
 * test runs against a hired agent; going back to the settings then changes that agent.
 */
export function HireWizard({ companyId, company }: { companyId: string; company: Company | undefined }) {
  const catalog = useAdapterCatalog();
  const { secrets, createSecret } = useSecretsWithCreate(companyId);
  const agents = useLoad(() => api.get<Agent[]>(`/api/companies/${companyId}/agents`), [companyId]);
  const [step, setStep] = useState(0);
  const [adapterType, setAdapterType] = useState<string | null>(null);
  const [agent, setAgent] = useState<Agent | null>(null);
  const [waiting, setWaiting] = useState(false);
  const [issue, setIssue] = useState<Issue | null | undefined>(undefined);
  const adapter = catalog.data?.adapterTypes.find((entry) => entry.type === adapterType);
  if (catalog.error) return <section><h1>Hire an agent</h1><ErrorNote error={catalog.error} /></section>;
  if (agents.error) return <section><h1>Hire an agent</h1><ErrorNote error={agents.error} /></section>;
  if (!catalog.data || !agents.data || (secrets.loading && !secrets.data)) return <Loading what="the hiring form" />;
  const done = issue !== undefined;
  return (
    <section className="wizard">
      <p><Link to={`/companies/${companyId}/agents`}>Agents</Link> / hire</p>
      <h1>Hire an agent{company ? ` for ${company.name}` : ''}</h1>
      <ol className="steps" aria-label="Steps">
        {STEPS.map((name, index) => (
          <li key={name} aria-current={!done && index === step ? 'step' : undefined} className={index < step || done ? 'step-done' : undefined}>{index + 1}. {name}</li>
        ))}
      </ol>
      {done ? <Hired companyId={companyId} agent={agent!} issue={issue} waiting={waiting} /> : (
        <div className="card" role="group" aria-label={`Step ${step + 1}: ${STEPS[step]}`}>
          <h2>{step + 1}. {STEPS[step]}</h2>
          {step === 0 ? <AdapterStep catalog={catalog.data.adapterTypes} chosen={adapterType} onChoose={(type) => {
            // Another adapter for a hired agent would need its settings anew: start from them.
            setAdapterType(type);
            setStep(1);
          }} /> : null}
          {step === 1 && adapter ? <SettingsStep companyId={companyId} company={company} adapter={adapter} agents={agents.data} secrets={secrets.data ?? []} createSecret={createSecret} agent={agent}
            onSaved={(saved, pending) => { setAgent(saved); setWaiting(pending); setStep(2); }} /> : null}
          {step === 2 && agent ? <TestStep agent={agent} onNext={() => setStep(3)} /> : null}
          {step === 3 && agent ? <BudgetStep agent={agent} onDone={(updated) => { setAgent(updated); setStep(4); }} /> : null}
          {step === 4 && agent ? <IssueStep companyId={companyId} agent={agent} onDone={setIssue} /> : null}
          {step > 0 && step < 3 ? <button type="button" onClick={() => setStep(step - 1)}>Back</button> : null}
        </div>
      )}
    </section>
  );
}

/** Step 3: the adapter's environment test; an adapter without one says so and the wizard goes on. */
function TestStep({ agent, onNext }: { agent: Agent; onNext: () => void }) {
  const [answer, setAnswer] = useState<TestAnswer | null>(null);
  return (
    <div>
      <p className="muted">Runs the adapter's checks on this machine (the tool's version, its credential) before anyone wakes {agent.name}.</p>
      <div className="row">
        <ActionButton kind="primary" action={async () => { setAnswer(null); setAnswer(await api.post<TestAnswer>(`/api/agents/${agent.id}/adapter-test`, {})); }}>Test environment</ActionButton>
        <button type="button" onClick={onNext}>{answer?.ok ? 'Next: budget' : 'Continue to the budget'}</button>
      </div>
      {answer ? <TestResult answer={answer} /> : null}
    </div>
  );
}

/** The end: what was done, and where to watch the agent's first run when an issue woke it. */
function Hired({ companyId, agent, issue, waiting }: { companyId: string; agent: Agent; issue: Issue | null; waiting: boolean }) {
  const [run, setRun] = useState<Run | null>(null);
  useEffect(() => {
    if (!issue || waiting) return;
    // The assignment wakes the agent; its run appears once the wake is taken, and its status
    // is followed to the end so the line never shows a stale "queued".
    let live = true;
    const look = async () => {
      const answer = await api.get<{ runs: Run[] }>(`/api/companies/${companyId}/heartbeat-runs`, { agentId: agent.id, limit: 1 }).catch(() => ({ runs: [] }));
      if (!live) return;
      const first = answer.runs[0];
      if (first) setRun(first);
      if (!first || !ENDED.includes(first.status)) setTimeout(look, 1000);
    };
    void look();
    return () => { live = false; };
  }, [companyId, agent.id, issue, waiting]);
  return (
    <div className="card" role="status">
      <h2>{waiting ? `${agent.name} is waiting for approval` : `${agent.name} is hired`}</h2>
      {issue ? <p>First issue: <Link to={`/companies/${companyId}/issues/${issue.id}`}>{issue.identifier} {issue.title}</Link>.</p> : <p>No issue yet: assign one from the issues page.</p>}
      {run ? <p><Link to={`/companies/${companyId}/runs/${run.id}`}>Watch its first run</Link> ({run.status.replace(/_/g, ' ')}).</p> : null}
      <p><Link to={`/companies/${companyId}/agents/${agent.id}`}>Open {agent.name}</Link> · <Link to={`/companies/${companyId}/agents/new`}>Hire another</Link></p>
    </div>
  );
}
