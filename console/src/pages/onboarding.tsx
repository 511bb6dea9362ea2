import { api, type Company } from '../api.ts';
import { navigate } from '../router.tsx';
import { Field, Form } from '../ui.tsx';

/**
 * The console of an empty instance: the four steps from nothing to a first run, in the console
 * alone. The company is made here; the hiring wizard then takes the agent, its environment test,
 * its budget and its first issue, whose assignment wakes the agent, and links its first run.
 */
export function Onboarding({ onCreated }: { onCreated: () => Promise<void> }) {
  return (
    <div className="card onboarding" role="region" aria-label="Getting started">
      <h2>Getting started</h2>
      <p>This instance has no company yet. Four steps take it to an agent at work:</p>
      <ol className="steps" aria-label="Onboarding steps">
        <li aria-current="step">Create the company the agents work for.</li>
        <li>Hire its first agent: choose an adapter this machine can run and test it.</li>
        <li>Give the agent a first issue.</li>
        <li>Watch its first run.</li>
      </ol>
      <Form label="First company" submit="Create company and hire its first agent" onSubmit={async (fields) => {
        const company = await api.post<Company>('/api/companies', {
          name: String(fields.get('name') ?? '').trim(), description: String(fields.get('description') ?? '').trim() || undefined,
        });
        await onCreated();
        navigate(`/companies/${company.id}/agents/new`);
      }}>
        <Field label="Company name" name="name" required />
        <Field label="What it does (optional)" name="description" type="textarea" />
      </Form>
    </div>
  );
}
