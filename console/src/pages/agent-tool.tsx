import { useState, type ReactNode } from 'react';
import { api, type Agent } from '../api.ts';
import { ActionButton, Form, Status } from '../ui.tsx';
import { LOCAL_TOOL_TYPES, LocalToolFields, localToolConfig, useAdapterCatalog } from './adapter-config.tsx';
import { useSecretsWithCreate } from './variables.tsx';

/** The adapters the runtime runs itself: none has an environment test or a login. */
const RUNTIME_OWN = ['process', 'http', 'eta_gateway'];

interface Check { name: string; ok: boolean; message: string; fix: string | null }
export interface TestAnswer { ok: boolean; adapterType: string; version: string | null; checks: Check[] }

/** POST /api/agents/{id}/adapter-test: each check, passed or failed, a failed one with its fix. */
export function TestResult({ answer }: { answer: TestAnswer }) {
  return (
    <div className="env-test" data-testid="environment-test">
      <p role="status">{answer.ok ? 'Environment test passed' : 'Environment test failed'}{answer.version ? ` · version ${answer.version}` : ''}</p>
      <ul className="rows" aria-label="Environment checks">
        {answer.checks.map((check, index) => (
          <li key={`${check.name}-${index}`} className={`row-item env-check ${check.ok ? 'check-ok' : 'check-failed'}`}>
            <Status value={check.ok ? 'ok' : 'failed'} /> <strong>{check.name}</strong> <span>{check.message}</span>
            {check.fix ? <div className="fix"><span className="muted">Fix: </span><code>{check.fix}</code></div> : null}
          </li>
        ))}
      </ul>
    </div>
  );
}

/** A value of the login answer, whatever its shape: text, a list of its items, or its fields. */
function AnswerValue({ value }: { value: unknown }): ReactNode {
  if (value === null || value === undefined) return <span className="muted">none</span>;
  if (typeof value !== 'object') return <span className="prewrap">{String(value)}</span>;
  if (Array.isArray(value)) {
    if (value.length === 0) return <span className="muted">none</span>;
    return <ol className="answer-list">{value.map((item, index) => <li key={index}><AnswerValue value={item} /></li>)}</ol>;
  }
  return (
    <dl className="answer-fields">
      {Object.entries(value as Record<string, unknown>).map(([name, item]) => <div key={name}><dt>{name}</dt><dd><AnswerValue value={item} /></dd></div>)}
    </dl>
  );
}

/** What POST /api/agents/{id}/alpha-login answers: the login state and the operator's next step, in the plugin's words. */
function LoginAnswer({ answer }: { answer: Record<string, unknown> }) {
  return <section className="login-answer" aria-label="Login answer"><h3>Log in</h3><AnswerValue value={answer} /></section>;
}

/**
 * The agent's tool: its settings as a form for the local coding tools, the environment test
 * (before anyone wakes the agent) and, for Claude Code, the login flow.
 */
export function AgentTool({ companyId, agent, onSaved }: { companyId: string; agent: Agent; onSaved: () => Promise<void> }) {
  const catalog = useAdapterCatalog();
  const { secrets, createSecret } = useSecretsWithCreate(companyId);
  const [test, setTest] = useState<TestAnswer | null>(null);
  const [login, setLogin] = useState<Record<string, unknown> | null>(null);
  const [saved, setSaved] = useState(false);
  if (RUNTIME_OWN.includes(agent.adapterType)) return null;
  const local = LOCAL_TOOL_TYPES.includes(agent.adapterType) ? catalog.data?.adapterTypes.find((entry) => entry.type === agent.adapterType) : undefined;
  return (
    <div className="card">
      <h2>Tool</h2>
      <div className="row">
        <ActionButton kind="primary" action={async () => { setTest(null); setTest(await api.post<TestAnswer>(`/api/agents/${agent.id}/adapter-test`, {})); }}>Test environment</ActionButton>
        {agent.adapterType === 'alpha_local'
          ? <ActionButton action={async () => { setLogin(null); setLogin(await api.post<Record<string, unknown>>(`/api/agents/${agent.id}/alpha-login`, {})); }}>Log in</ActionButton>
          : null}
      </div>
      {test ? <TestResult answer={test} /> : null}
      {login ? <LoginAnswer answer={login} /> : null}
      {local && secrets.data ? (
        <Form label="Tool settings" submit="Save tool settings" onSubmit={async (fields) => {
          setSaved(false);
          await api.patch(`/api/agents/${agent.id}`, { adapterConfig: localToolConfig(local, fields, true) });
          await onSaved();
          setSaved(true);
        }}>
          <LocalToolFields key={JSON.stringify(agent.adapterConfig)} adapter={local} secrets={secrets.data} createSecret={createSecret} initial={agent.adapterConfig} />
        </Form>
      ) : null}
      {saved ? <p role="status">Tool settings saved.</p> : null}
    </div>
  );
}
