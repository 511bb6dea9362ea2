import { useState } from 'react';
import { api } from '../api.ts';
import { ActionButton, ErrorNote, Loading, Paged, Status, useLoad, when } from '../ui.tsx';
import { envOf, rowsOf, useSecrets, VariablesEditor, type VariableValue } from './variables.tsx';

export interface Environment {
  id: string; name: string; description: string | null; driver: string; status: string; config: { root?: string };
  envVars: Record<string, VariableValue>; maxConcurrentLeases: number; updatedAt: string;
}
interface Probe { ok: boolean; summary: string; checks: Array<{ key: string; ok: boolean; message: string }>; probedAt: string }
interface Lease { id: string; policy: string; reuseKey: string | null; path: string; status: string; runId: string | null; acquiredAt: string; releasedAt: string | null; releaseReason: string | null }

/**
 * The fields of a local environment: name, description, root, lease limit and variables. On an
 * edit only what changed is sent (the API wants at least one field); an emptied description is cleared.
 */
function EnvironmentForm({ companyId, environment, label, submit, onSaved }: { companyId: string; environment?: Environment; label: string; submit: string; onSaved: () => Promise<void> }) {
  const secrets = useSecrets(companyId);
  const [name, setName] = useState(environment?.name ?? '');
  const [description, setDescription] = useState(environment?.description ?? '');
  const [root, setRoot] = useState(environment?.config.root ?? '');
  const [limit, setLimit] = useState(String(environment?.maxConcurrentLeases ?? 10));
  const [variables, setVariables] = useState(rowsOf(environment?.envVars));
  const save = async () => {
    const body: Record<string, unknown> = {
      name: name.trim(), description: description.trim() || (environment ? null : undefined), config: { root: root.trim() },
      maxConcurrentLeases: Number(limit), envVars: envOf(variables),
    };
    if (environment) await api.patch(`/api/environments/${environment.id}`, body);
    else {
      await api.post(`/api/companies/${companyId}/environments`, { ...body, driver: 'local' });
      setName(''); setDescription(''); setRoot(''); setLimit('10'); setVariables([]);
    }
    await onSaved();
  };
  return (
    <form className="form" aria-label={label} onSubmit={(event) => event.preventDefault()}>
      <label className="field"><span>Name</span><input required value={name} onChange={(event) => setName(event.target.value)} /></label>
      <label className="field"><span>Description (optional)</span><input value={description} onChange={(event) => setDescription(event.target.value)} /></label>
      <label className="field"><span>Root directory (absolute, inside the company's mounted folder)</span><input required value={root} placeholder="/srv/keel/acme/runs" onChange={(event) => setRoot(event.target.value)} /></label>
      <label className="field"><span>At most this many active leases</span><input type="number" min="1" max="1000" value={limit} onChange={(event) => setLimit(event.target.value)} /></label>
      <VariablesEditor label="Variables" rows={variables} secrets={secrets.data ?? []} onChange={setVariables} />
      <ErrorNote error={secrets.error} />
      <div className="form-actions"><ActionButton kind="primary" action={save}>{submit}</ActionButton></div>
    </form>
  );
}

function ProbeResult({ probe, label }: { probe: Probe; label: string }) {
  return (
    <div>
      <p role="status">{probe.ok ? 'Probe passed' : 'Probe failed'}: {probe.summary} <span className="muted">{when(probe.probedAt)}</span></p>
      <ul className="rows" aria-label={label}>{probe.checks.map((check) => (
        <li key={check.key} className="row-item"><Status value={check.ok ? 'passed' : 'failed'} /> <code>{check.key}</code> <span className="wrap-anywhere">{check.message}</span></li>))}
      </ul>
    </div>
  );
}

function Leases({ environment }: { environment: Environment }) {
  const leases = useLoad(() => api.get<Lease[]>(`/api/environments/${environment.id}/leases`), [environment.id]);
  return (
    <div>
      {leases.loading && !leases.data ? <Loading what="leases" /> : null}
      <ErrorNote error={leases.error} />
      {leases.data ? <Paged label={`Leases of ${environment.name}`} items={leases.data} empty="No leases yet: a run that uses this environment takes one." render={(lease) => (
        <li key={lease.id} className="row-item">
          <Status value={lease.status} /> <span className="muted">{lease.policy}{lease.reuseKey ? ` (${lease.reuseKey})` : ''}</span>
          <code className="wrap-anywhere">{lease.path}</code>
          <span className="muted">acquired {when(lease.acquiredAt)}{lease.releasedAt ? ` · released ${when(lease.releasedAt)}${lease.releaseReason ? ` (${lease.releaseReason})` : ''}` : ''}{lease.runId ? ` · run ${lease.runId}` : ''}</span>
        </li>)} /> : null}
      <ActionButton label={`Refresh leases of ${environment.name}`} action={leases.reload}>Refresh leases</ActionButton>
    </div>
  );
}

function EnvironmentRow({ companyId, environment, onChange }: { companyId: string; environment: Environment; onChange: () => Promise<void> }) {
  const [probe, setProbe] = useState<Probe | null>(null);
  const archived = environment.status === 'archived';
  const names = Object.keys(environment.envVars ?? {});
  return (
    <li className="row-item stack">
      <div className="row">
        <strong>{environment.name}</strong> <Status value={environment.status} />
        <span className="muted wrap-anywhere">{environment.driver}{environment.config?.root ? ` · ${environment.config.root}` : ''} · at most {environment.maxConcurrentLeases} leases · updated {when(environment.updatedAt)}</span>
      </div>
      {environment.description ? <p className="wrap-anywhere">{environment.description}</p> : null}
      <p className="muted wrap-anywhere">Variables: {names.length ? names.join(', ') : 'none'}</p>
      <div className="row">
        <ActionButton label={`Probe ${environment.name}`} action={async () => { setProbe(await api.post<Probe>(`/api/environments/${environment.id}/probe`, {})); }}>Probe</ActionButton>
        <ActionButton label={`${archived ? 'Unarchive' : 'Archive'} ${environment.name}`} action={async () => { await api.patch(`/api/environments/${environment.id}`, { status: archived ? 'active' : 'archived' }); await onChange(); }}>{archived ? 'Unarchive' : 'Archive'}</ActionButton>
        <ActionButton label={`Delete ${environment.name}`} kind="danger" action={async () => { await api.delete(`/api/environments/${environment.id}`); await onChange(); }}>Delete</ActionButton>
      </div>
      {probe ? <ProbeResult probe={probe} label={`Probe of ${environment.name}`} /> : null}
      <details>
        <summary>Edit {environment.name}</summary>
        <EnvironmentForm key={environment.updatedAt} companyId={companyId} environment={environment} label={`Edit environment ${environment.name}`} submit="Save environment" onSaved={onChange} />
      </details>
      <details>
        <summary>Leases of {environment.name}</summary>
        <Leases environment={environment} />
      </details>
    </li>
  );
}

/** The company's environments: created (local driver), edited, probed, archived, deleted, with their leases. */
export function Environments({ companyId }: { companyId: string }) {
  const environments = useLoad(() => api.get<Environment[]>(`/api/companies/${companyId}/environments`), [companyId]);
  return (
    <>
      {environments.loading && !environments.data ? <Loading what="environments" /> : null}
      <ErrorNote error={environments.error} />
      {environments.data ? <Paged label="Environments" items={environments.data} empty="No environments. Open “New environment” below to describe where agents run and with which variables." render={(environment) => (
        <EnvironmentRow key={environment.id} companyId={companyId} environment={environment} onChange={environments.reload} />
      )} /> : null}
      <details className="card">
        <summary>New environment</summary>
        <p className="muted">A local environment is a directory root on this machine inside the folder an operator mounted for the company; runs get leases (directories) under it.</p>
        <EnvironmentForm companyId={companyId} label="New environment" submit="Create environment" onSaved={environments.reload} />
      </details>
    </>
  );
}
