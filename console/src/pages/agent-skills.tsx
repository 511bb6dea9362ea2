import { useEffect, useState } from 'react';
import { api } from '../api.ts';
import { ErrorNote, Loading, Paged, Status, useLoad } from '../ui.tsx';

interface SkillEntry { key: string; runtimeName: string; desired: boolean; managed: boolean; required: boolean; state: string; origin: string }
interface SkillSnapshot { adapterType: string; mode: string; supported: boolean; desiredSkills: string[]; entries: SkillEntry[]; warnings: string[] }

/**
 * An agent's skills (the skills plugin's snapshot): every skill of the company with whether the
 * agent wants it, ticked to choose, and a sync that replaces the agent's list by the ticked ones
 * (the company's required skills always stay). The result names what was added and removed.
 */
export function AgentSkills({ agentId }: { agentId: string }) {
  const snapshot = useLoad(() => api.get<SkillSnapshot>(`/api/agents/${agentId}/skills`), [agentId]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [result, setResult] = useState<string | null>(null);
  // The ticked keys live here, not in the form: the list pages, and a sync sends every page's choice.
  const [chosen, setChosen] = useState<Set<string>>(new Set());
  useEffect(() => { setChosen(new Set(snapshot.data?.desiredSkills ?? [])); }, [snapshot.data]);
  if (snapshot.loading && !snapshot.data) return <div className="card"><h2>Skills</h2><Loading what="skills" /></div>;
  if (!snapshot.data) return <div className="card"><h2>Skills</h2><ErrorNote error={snapshot.error} /></div>;
  const s = snapshot.data;
  const toggle = (key: string, on: boolean) => setChosen((before) => {
    const after = new Set(before);
    if (on) after.add(key); else after.delete(key);
    return after;
  });
  const sync = async () => {
    setBusy(true);
    setError(null);
    setResult(null);
    try {
      const after = await api.post<SkillSnapshot>(`/api/agents/${agentId}/skills/sync`, { desiredSkills: [...chosen] });
      const added = after.desiredSkills.filter((key) => !s.desiredSkills.includes(key));
      const removed = s.desiredSkills.filter((key) => !after.desiredSkills.includes(key));
      setResult(`Synced: ${after.desiredSkills.length} desired skill(s); added ${added.join(', ') || 'none'}; removed ${removed.join(', ') || 'none'}.`);
      await snapshot.reload();
    } catch (caught) { setError(caught); } finally { setBusy(false); }
  };
  return (
    <div className="card">
      <h2>Skills</h2>
      <p className="muted">Adapter {s.adapterType}: {s.mode === 'persistent' ? 'skills are installed in its working directory' : s.mode === 'ephemeral' ? 'skills are materialised per run' : 'skills are recorded only'}.</p>
      {s.warnings.map((warning) => <p key={warning} className="error">{warning}</p>)}
      <form aria-label="Agent skills" className="form" onSubmit={(event) => { event.preventDefault(); void sync(); }}>
        <Paged label="Skills of the agent" size={100} items={s.entries} empty="The company has no skills yet. Add them on the Skills page, then tick them here." render={(entry) => (
          <li key={entry.key} className="row-item">
            <label className="check">
              <input type="checkbox" checked={entry.required || chosen.has(entry.key)} disabled={entry.required || busy} onChange={(event) => toggle(entry.key, event.target.checked)} />
              {entry.runtimeName}
            </label>
            <Status value={entry.state} />
            <span className="muted wrap-anywhere">{entry.key}{entry.required ? ' · required' : ''}</span>
          </li>)} />
        <div className="form-actions">
          <button type="submit" className="primary" disabled={busy} aria-busy={busy}>{busy ? <span className="spinner" aria-hidden="true" /> : null}{busy ? 'Syncing skills…' : 'Sync skills'}</button>
        </div>
        {result ? <p role="status">{result}</p> : null}
        <ErrorNote error={error} />
      </form>
    </div>
  );
}
