import { api } from '../api.ts';
import { ActionButton, ErrorNote, Field, Form, Loading, Paged, useLoad, when } from '../ui.tsx';

export interface ProjectWorkspace {
  id: string; projectId: string; name: string; cwd: string | null; repoUrl: string | null; repoRef: string | null;
  isPrimary: boolean; metadata: Record<string, unknown> | null; createdAt: string; updatedAt: string;
}

/**
 * Reads the workspace form. An empty optional field is null on an edit (it clears the value)
 * and left out on a create; metadata is JSON the operator types. The API judges every value.
 */
function workspaceBody(fields: FormData, editing: boolean): Record<string, unknown> {
  const optional = (name: string) => {
    const value = String(fields.get(name) ?? '').trim();
    return value ? value : editing ? null : undefined;
  };
  const metadataText = optional('metadata');
  let metadata: unknown = metadataText;
  if (typeof metadataText === 'string') {
    try { metadata = JSON.parse(metadataText); } catch { throw new Error('Metadata must be a JSON object, e.g. {"team": "web"}'); }
  }
  return {
    name: String(fields.get('name') ?? '').trim(), cwd: optional('cwd'), repoUrl: optional('repoUrl'), repoRef: optional('repoRef'),
    // Only ever set: the API keeps one primary per project and promotes another when one is removed.
    isPrimary: fields.get('isPrimary') ? true : undefined, metadata,
  };
}

function WorkspaceFields({ workspace }: { workspace?: ProjectWorkspace }) {
  return (
    <>
      <Field label="Name" name="name" required defaultValue={workspace?.name} />
      <Field label="Working directory (absolute path)" name="cwd" placeholder="/srv/keel/acme/app" defaultValue={workspace?.cwd ?? undefined} />
      <Field label="Repository URL" name="repoUrl" placeholder="https://git.example.com/acme/app" defaultValue={workspace?.repoUrl ?? undefined} />
      <Field label="Repository ref" name="repoRef" placeholder="main" defaultValue={workspace?.repoRef ?? undefined} />
      {workspace?.isPrimary ? null : <label className="check"><input type="checkbox" name="isPrimary" /> {workspace ? 'Make it the primary workspace' : 'Primary workspace'}</label>}
      <Field label="Metadata (JSON, optional)" name="metadata" type="textarea" defaultValue={workspace?.metadata ? JSON.stringify(workspace.metadata) : undefined} />
    </>
  );
}

/** A project's workspaces (where its code lives): listed, created, edited, made primary, removed. */
export function ProjectWorkspaces({ projectId }: { projectId: string }) {
  const base = `/api/projects/${projectId}/workspaces`;
  const workspaces = useLoad(() => api.get<ProjectWorkspace[]>(base), [projectId]);
  return (
    <div className="card">
      <h2>Workspaces</h2>
      {workspaces.loading && !workspaces.data ? <Loading what="workspaces" /> : null}
      <ErrorNote error={workspaces.error} />
      {workspaces.data ? <Paged label="Project workspaces" items={workspaces.data} empty="No workspaces: say where the project's code lives." render={(ws) => (
        <li key={ws.id} className="row-item stack">
          <div className="row">
            <strong>{ws.name}</strong>{ws.isPrimary ? <span className="badge s-active">primary</span> : null}
            <span className="muted wrap-anywhere">{ws.cwd ?? 'no directory'} · {ws.repoUrl ? `${ws.repoUrl}${ws.repoRef ? ` @ ${ws.repoRef}` : ''}` : 'no repository'} · updated {when(ws.updatedAt)}</span>
          </div>
          <div className="row">
            {ws.isPrimary ? null : <ActionButton label={`Make primary: ${ws.name}`} action={async () => { await api.patch(`${base}/${ws.id}`, { isPrimary: true }); await workspaces.reload(); }}>Make primary</ActionButton>}
            <ActionButton kind="danger" label={`Remove workspace ${ws.name}`} action={async () => { await api.delete(`${base}/${ws.id}`); await workspaces.reload(); }}>Remove</ActionButton>
          </div>
          <details>
            <summary>Edit {ws.name}</summary>
            <Form key={ws.updatedAt} label={`Edit workspace ${ws.name}`} submit="Save workspace" onSubmit={async (fields) => {
              await api.patch(`${base}/${ws.id}`, workspaceBody(fields, true));
              await workspaces.reload();
            }}><WorkspaceFields workspace={ws} /></Form>
          </details>
        </li>)} /> : null}
      <details>
        <summary>New workspace</summary>
        <Form label="New workspace" submit="Add workspace" onSubmit={async (fields) => {
          await api.post(base, workspaceBody(fields, false));
          await workspaces.reload();
        }}><WorkspaceFields /></Form>
      </details>
    </div>
  );
}
