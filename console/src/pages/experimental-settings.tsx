import { useState } from 'react';
import { api } from '../api.ts';
import { ErrorNote, useLoad } from '../ui.tsx';

export type ExperimentalValues = Record<string, boolean | number>;

/**
 * What each experimental instance setting turns on, in words: its label and one line of
 * explanation. A setting the server knows and this table does not is still listed, under its key.
 */
export const EXPERIMENTAL_SETTINGS: Record<string, { label: string; explanation: string }> = {
  enableSummaries: {
    label: 'Summaries',
    explanation: "Short generated summaries of projects and workspaces, written by the company's summarizer agent; the summaries plugin's routes answer 404 while this is off.",
  },
  enableEnvironments: {
    label: 'Execution environments',
    explanation: 'Environments that runs lease (a local folder, a remote runner) and their leases; the environments pages and routes need it.',
  },
  enableIsolatedWorkspaces: {
    label: 'Isolated workspaces',
    explanation: 'Each issue can get its own execution workspace (a checkout of its own) instead of the project\'s shared one.',
  },
  enableIssueGraphLivenessAutoRecovery: {
    label: 'Recover stalled work',
    explanation: 'Finds issue graphs that stopped moving (blocked by work nobody will finish) and wakes the agents that can unblock them.',
  },
  issueGraphLivenessAutoRecoveryLookbackHours: {
    label: 'Stalled-work look-back (hours)',
    explanation: 'How far back the recovery of stalled work looks.',
  },
};

export const settingLabel = (key: string) => EXPERIMENTAL_SETTINGS[key]?.label ?? key;

export function useExperimentalSettings() {
  return useLoad(() => api.get<ExperimentalValues>('/api/instance/settings/experimental'), []);
}

/**
 * One experimental setting as a switch: its label, its explanation, and a button with
 * `role="switch"` that turns it on or off (instance admins; others see the API's refusal).
 */
export function ExperimentalSwitch({ name, value, onChanged }: { name: string; value: boolean; onChanged: () => Promise<void> }) {
  const explanation = EXPERIMENTAL_SETTINGS[name]?.explanation;
  const id = `experimental-${name}`;
  return (
    <div className="row-item experimental-setting">
      <div>
        <strong id={`${id}-label`}>{settingLabel(name)}</strong> <code className="muted">{name}</code>
        {explanation ? <p id={`${id}-help`} className="muted">{explanation}</p> : null}
      </div>
      <SwitchButton labelledBy={`${id}-label`} describedBy={explanation ? `${id}-help` : undefined} on={value}
        action={async () => { await api.patch('/api/instance/settings/experimental', { [name]: !value }); await onChanged(); }} />
    </div>
  );
}

/** A button with `role="switch"`: progress while the change runs, the API's message when it fails. */
function SwitchButton({ on, action, labelledBy, describedBy }: { on: boolean; action: () => Promise<void>; labelledBy: string; describedBy?: string }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const toggle = async () => {
    setBusy(true);
    setError(null);
    try { await action(); } catch (caught) { setError(caught); } finally { setBusy(false); }
  };
  return (
    <span className="action">
      <button type="button" role="switch" aria-checked={on} aria-labelledby={labelledBy} aria-describedby={describedBy} className={on ? 'switch on' : 'switch'}
        onClick={toggle} disabled={busy} aria-busy={busy}>{on ? 'On' : 'Off'}</button>
      <ErrorNote error={error} />
    </span>
  );
}

/** Every experimental setting the server answers, each with its label, explanation and switch (numbers shown as they are). */
export function ExperimentalSettingsList() {
  const settings = useExperimentalSettings();
  if (settings.error) return <ErrorNote error={settings.error} />;
  if (!settings.data) return null;
  return (
    <ul className="rows" aria-label="Experimental settings">
      {Object.entries(settings.data).map(([name, value]) => (
        <li key={name}>
          {typeof value === 'boolean'
            ? <ExperimentalSwitch name={name} value={value} onChanged={settings.reload} />
            : <div className="row-item"><div><strong>{settingLabel(name)}</strong> <code className="muted">{name}</code><p className="muted">{EXPERIMENTAL_SETTINGS[name]?.explanation}</p></div><span>{value}</span></div>}
        </li>
      ))}
    </ul>
  );
}
