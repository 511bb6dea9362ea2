import { api } from '../api.ts';
import { useLoad } from '../ui.tsx';
import { NewSecret, type CreateSecret, type SecretRef } from './new-secret.tsx';

/** A variable as the API stores it: a plain value or a reference to one of the company's secrets. */
export type VariableValue = string | { type: 'secret_ref'; secretId: string; version?: 'latest' | number };

/** One row of the editor; `secretId` is used when `kind` is secret. */
export interface VariableRow { name: string; kind: 'plain' | 'secret'; value: string; secretId: string; version: 'latest' | number }

export function rowsOf(env: Record<string, VariableValue> | null | undefined): VariableRow[] {
  return Object.entries(env ?? {}).map(([name, value]) => typeof value === 'string'
    ? { name, kind: 'plain', value, secretId: '', version: 'latest' }
    : { name, kind: 'secret', value: '', secretId: value.secretId, version: value.version ?? 'latest' });
}

/** The rows as the API's object; rows without a name are left out, the API judges the rest. */
export function envOf(rows: VariableRow[]): Record<string, VariableValue> {
  const env: Record<string, VariableValue> = {};
  for (const row of rows) {
    const name = row.name.trim();
    if (!name) continue;
    env[name] = row.kind === 'plain' ? row.value : { type: 'secret_ref', secretId: row.secretId, version: row.version };
  }
  return env;
}

/** The company's secrets by name, to choose a reference from (values are never read). */
export function useSecrets(companyId: string) {
  return useLoad(() => api.get<SecretRef[]>(`/api/companies/${companyId}/secrets`), [companyId]);
}

/** The company's secrets and a way to store a new one from a form (NewSecret). */
export function useSecretsWithCreate(companyId: string) {
  const secrets = useSecrets(companyId);
  const createSecret: CreateSecret = async (name, value) => {
    const secret = await api.post<SecretRef>(`/api/companies/${companyId}/secrets`, { name, value });
    await secrets.reload();
    return secret;
  };
  return { secrets, createSecret };
}

/**
 * Variables edited row by row: a name and either a plain value (shown as written: not for
 * secrets) or one of the company's secrets, referenced and resolved only when a process starts.
 * With `createSecret`, a secret row can also store a new secret on the spot.
 */
export function VariablesEditor({ rows, onChange, secrets, label, createSecret }: { rows: VariableRow[]; onChange: (rows: VariableRow[]) => void; secrets: SecretRef[]; label: string; createSecret?: CreateSecret }) {
  const set = (index: number, change: Partial<VariableRow>) => onChange(rows.map((row, i) => (i === index ? { ...row, ...change } : row)));
  return (
    <fieldset>
      <legend>{label}</legend>
      {rows.length === 0 ? <p className="muted">No variables.</p> : null}
      {rows.map((row, index) => (
        <div key={index} className="row" role="group" aria-label={`${label}: variable ${index + 1}`}>
          <label className="field inline"><span>Name</span><input value={row.name} onChange={(event) => set(index, { name: event.target.value })} /></label>
          <label className="field inline"><span>Kind</span>
            <select value={row.kind} onChange={(event) => set(index, { kind: event.target.value as VariableRow['kind'], secretId: row.secretId || secrets[0]?.id || '' })}>
              <option value="plain">plain value</option><option value="secret">secret</option>
            </select>
          </label>
          {row.kind === 'plain'
            ? <label className="field inline"><span>Value</span><input value={row.value} onChange={(event) => set(index, { value: event.target.value })} /></label>
            : <label className="field inline"><span>Secret</span>
              <select value={row.secretId} onChange={(event) => set(index, { secretId: event.target.value })}>
                {secrets.length === 0 ? <option value="">no secrets: create one on the Secrets page</option> : null}
                {secrets.map((secret) => <option key={secret.id} value={secret.id}>{secret.name}</option>)}
                {row.secretId && !secrets.some((secret) => secret.id === row.secretId) ? <option value={row.secretId}>{row.secretId}</option> : null}
              </select>
            </label>}
          {row.kind === 'secret' && createSecret
            ? <NewSecret suggestedName={row.name.trim()} label={`${label}: variable ${index + 1}`} createSecret={createSecret} onCreated={(secret) => set(index, { secretId: secret.id })} />
            : null}
          <button type="button" onClick={() => onChange(rows.filter((_, i) => i !== index))}>Remove<span className="sr-only"> variable {index + 1}</span></button>
        </div>
      ))}
      <div><button type="button" onClick={() => onChange([...rows, { name: '', kind: 'plain', value: '', secretId: '', version: 'latest' }])}>Add variable<span className="sr-only"> to {label}</span></button></div>
    </fieldset>
  );
}
