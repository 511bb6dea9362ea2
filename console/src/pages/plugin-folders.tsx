import { useState } from 'react';
import { api, type Company } from '../api.ts';
import { ErrorNote, Field, Form, Loading, useLoad, when } from '../ui.tsx';

interface Folder { folderKey: string; access: 'read' | 'readWrite' | null; description: string | null; declared: boolean; configured: boolean; path: string | null; updatedAt: string | null }
interface Problem { code: string; message: string }
interface Checked { valid?: boolean; healthy: boolean; realPath: string | null; problems: Problem[]; listing: { entries: number; truncated: boolean } | null }

/**
 * The local folders a plugin declares (`folders` in its manifest), per company: a form for each,
 * drawn from the declaration (its key, access and description), that checks a path on the
 * server (`POST .../validate`, saves nothing) and saves it (`PUT`, only a path that passes
 * every check). Instance admins only: others see the API's refusal.
 */
export function PluginFolders({ pluginKey }: { pluginKey: string }) {
  const companies = useLoad(() => api.get<Company[]>('/api/companies'), []);
  const [chosen, setChosen] = useState('');
  const companyId = chosen || companies.data?.[0]?.id || '';
  if (companies.error) return <ErrorNote error={companies.error} />;
  if (!companies.data) return <Loading what="companies" />;
  if (companies.data.length === 0) return <p className="muted">Local folders are chosen per company: create a company first.</p>;
  return (
    <>
      <label className="field">
        <span>Company whose folders to set</span>
        <select value={companyId} onChange={(event) => setChosen(event.target.value)}>
          {companies.data.map((company) => <option key={company.id} value={company.id}>{company.name}</option>)}
        </select>
      </label>
      <CompanyFolders key={companyId} pluginKey={pluginKey} companyId={companyId} />
    </>
  );
}

function CompanyFolders({ pluginKey, companyId }: { pluginKey: string; companyId: string }) {
  const base = `/api/plugins/${encodeURIComponent(pluginKey)}/companies/${encodeURIComponent(companyId)}/local-folders`;
  const folders = useLoad(() => api.get<{ folders: Folder[] }>(base), [base]);
  if (folders.error) return <ErrorNote error={folders.error} />;
  if (!folders.data) return <Loading what="local folders" />;
  return (
    <>
      {folders.data.folders.filter((folder) => folder.declared).map((folder) => (
        <FolderForm key={folder.folderKey} base={base} folder={folder} onSaved={folders.reload} />
      ))}
    </>
  );
}

function FolderForm({ base, folder, onSaved }: { base: string; folder: Folder; onSaved: () => Promise<void> }) {
  const [checked, setChecked] = useState<{ saved: boolean; answer: Checked } | null>(null);
  const [checkError, setCheckError] = useState<unknown>(null);
  const url = `${base}/${encodeURIComponent(folder.folderKey)}`;
  const label = `Folder ${folder.folderKey}`;
  return (
    <fieldset className="folder-form">
      <legend><code>{folder.folderKey}</code> · {folder.access === 'readWrite' ? 'read and write' : 'read only'}</legend>
      {folder.description ? <p className="muted">{folder.description}</p> : null}
      <p>{folder.configured ? <>Now: <code data-testid={`folder-path-${folder.folderKey}`}>{folder.path}</code> <span className="muted">(set {when(folder.updatedAt)})</span></> : 'Not set for this company.'}</p>
      <Form label={label} submit="Save folder" onSubmit={async (fields) => {
        const answer = await api.put<Checked>(url, { path: String(fields.get('path') ?? '').trim() });
        setChecked({ saved: true, answer });
        await onSaved();
      }}>
        <Field label="Absolute path on the server" name="path" required defaultValue={folder.path ?? ''} placeholder="/srv/wiki" />
        <button type="button" onClick={async (event) => {
          const path = new FormData(event.currentTarget.form!).get('path');
          setCheckError(null);
          try { setChecked({ saved: false, answer: await api.post<Checked>(`${url}/validate`, { path: String(path ?? '').trim() }) }); } catch (caught) { setCheckError(caught); }
        }}>Check path</button>
      </Form>
      <ErrorNote error={checkError} />
      {checked ? (
        <div role="status">
          {checked.saved ? <p>Saved: <code>{checked.answer.realPath}</code>.</p>
            : checked.answer.healthy ? <p>The path can be used ({checked.answer.listing?.entries ?? 0} entries).</p> : <p>The path cannot be used:</p>}
          {checked.answer.problems.length ? <ul>{checked.answer.problems.map((problem) => <li key={problem.code}>{problem.message}</li>)}</ul> : null}
        </div>
      ) : null}
    </fieldset>
  );
}
