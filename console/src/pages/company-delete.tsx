import { useState } from 'react';
import { api, type Company } from '../api.ts';
import { navigate } from '../router.tsx';
import { ErrorNote } from '../ui.tsx';

/**
 * The company's danger zone: deleting removes the company and everything it holds for good
 * (`DELETE /api/companies/{id}`), so the operator types its name first. Afterwards the console
 * goes to the company list, asked again, without it.
 */
export function CompanyDangerZone({ company, onDeleted }: { company: Company; onDeleted: () => Promise<void> }) {
  const [typed, setTyped] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const confirmed = typed === company.name;
  return (
    <section className="card danger-zone" aria-labelledby="danger-zone-title">
      <h2 id="danger-zone-title">Danger zone</h2>
      <p>Deleting the company removes its agents, issues, runs, costs, secrets and activity for good. It cannot be undone.</p>
      <form aria-label="Delete company" className="form" onSubmit={async (event) => {
        event.preventDefault();
        if (!confirmed) return;
        setBusy(true);
        setError(null);
        try {
          await api.delete(`/api/companies/${company.id}`);
          await onDeleted();
          navigate('/companies');
        } catch (caught) {
          setError(caught);
          setBusy(false);
        }
      }}>
        <label className="field">
          <span>Type the company's name, {company.name}, to delete it</span>
          <input name="confirmName" value={typed} onChange={(event) => setTyped(event.target.value)} autoComplete="off" disabled={busy} />
        </label>
        <div className="form-actions">
          <button type="submit" className="danger" disabled={!confirmed || busy} aria-busy={busy}>
            {busy ? <span className="spinner" aria-hidden="true" /> : null}{busy ? 'Deleting company…' : 'Delete company'}
          </button>
        </div>
        {busy ? <p role="status" className="muted">Deleting {company.name} and everything it holds…</p> : null}
        <ErrorNote error={error} />
      </form>
    </section>
  );
}
