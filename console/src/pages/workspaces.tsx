import { useState } from 'react';
import { KeelApiError } from '@keel/sdk/client';
import { api } from '../api.ts';
import { Link } from '../router.tsx';
import { ActionButton, ErrorNote, Loading, Paged, Status, useLoad, when } from '../ui.tsx';
import { Environments } from './environments.tsx';
import { NewExecutionWorkspace } from './new-execution-workspace.tsx';

interface ExecutionWorkspace {
  id: string; projectId: string; projectWorkspaceId: string; environmentId: string | null; name: string; mode: string; status: string;
  cwd: string | null; repoUrl: string | null; baseRef: string | null; branch: string | null; closedAt: string | null; createdAt: string;
}
interface Check { key: string; status: 'passed' | 'failed' | 'skipped'; message: string }
interface Readiness { ready: boolean; checks: Check[]; checkedAt: string }
interface ProjectRef { id: string; name: string }

const WORKSPACE_STATUSES = ['active', 'idle', 'closed', 'archived'] as const;

/** The readiness a 409 `workspace_not_ready_to_close` carries in `details.readiness`, if it does. */
function refusedReadiness(error: unknown): Readiness | null {
  if (!(error instanceof KeelApiError) || error.code !== 'workspace_not_ready_to_close') return null;
  const readiness = (error.details as { readiness?: Readiness } | undefined)?.readiness;
  return readiness && Array.isArray(readiness.checks) ? readiness : null;
}

function ReadinessChecks({ readiness, label }: { readiness: Readiness; label: string }) {
  return (
    <div>
      <p>{readiness.ready ? 'Ready to close.' : 'Not ready to close.'} <span className="muted">Checked {when(readiness.checkedAt)}</span></p>
      <ul className="rows" aria-label={label}>{readiness.checks.map((check) => (
        <li key={check.key} className="row-item"><Status value={check.status} /> <code>{check.key}</code> <span className="wrap-anywhere">{check.message}</span></li>))}
      </ul>
    </div>
  );
}

/** One execution workspace: its facts, its close readiness on request, and the close action with the API's refusal. */
function WorkspaceRow({ companyId, ws, project, onChange }: { companyId: string; ws: ExecutionWorkspace; project: string; onChange: () => Promise<void> }) {
  const [readiness, setReadiness] = useState<Readiness | null>(null);
  const [refusal, setRefusal] = useState<{ message: string; readiness: Readiness } | null>(null);
  const open = ws.status === 'active' || ws.status === 'idle';
  return (
    <li className="row-item stack">
      <div className="row">
        <strong><Link to={`/companies/${companyId}/workspaces/${ws.id}`}>{ws.name}</Link></strong> <Status value={ws.status} /> <span className="muted">{ws.mode.replace('_', ' ')} · project {project}{ws.branch ? ` · branch ${ws.branch}` : ''}</span>
      </div>
      <p className="muted wrap-anywhere">{ws.cwd ?? 'no directory'}{ws.closedAt ? ` · closed ${when(ws.closedAt)}` : ` · since ${when(ws.createdAt)}`}</p>
      <div className="row">
        <ActionButton label={`Check readiness of ${ws.name}`} action={async () => { setReadiness(await api.get<Readiness>(`/api/execution-workspaces/${ws.id}/close-readiness`)); }}>Check readiness</ActionButton>
        {open ? <ActionButton kind="danger" label={`Close ${ws.name}`} action={async () => {
          setRefusal(null);
          try {
            await api.patch(`/api/execution-workspaces/${ws.id}`, { status: 'closed' });
          } catch (error) {
            const refused = refusedReadiness(error);
            // The refusal is shown with its checks below; any other failure shows on the button.
            if (!refused) throw error;
            setRefusal({ message: (error as Error).message, readiness: refused });
            return;
          }
          setReadiness(null);
          await onChange();
        }}>Close</ActionButton> : null}
      </div>
      {refusal ? <div><p className="error" role="alert">{refusal.message}</p><ReadinessChecks readiness={refusal.readiness} label={`Why ${ws.name} cannot close`} /></div> : null}
      {readiness && !refusal ? <ReadinessChecks readiness={readiness} label={`Close readiness of ${ws.name}`} /> : null}
    </li>
  );
}

/** The company's execution workspaces (filtered by status) and environments. */
export function WorkspacesPage({ companyId }: { companyId: string }) {
  const [status, setStatus] = useState('');
  const workspaces = useLoad(() => api.get<ExecutionWorkspace[]>(`/api/companies/${companyId}/execution-workspaces`, status ? { status } : undefined), [companyId, status]);
  const projects = useLoad(() => api.get<ProjectRef[]>(`/api/companies/${companyId}/projects`, { includeArchived: 'true' }), [companyId]);
  const projectName = (id: string) => projects.data?.find((p) => p.id === id)?.name ?? '—';
  return (
    <section>
      <h1>Workspaces</h1>
      <p className="muted">Execution workspaces are the working copies runs work in; project workspaces are set on each project's page.</p>
      <h2>Execution workspaces</h2>
      <div className="toolbar">
        <label className="field inline"><span>Status</span>
          <select value={status} onChange={(event) => setStatus(event.target.value)}>
            <option value="">any</option>{WORKSPACE_STATUSES.map((s) => <option key={s}>{s}</option>)}
          </select>
        </label>
      </div>
      {workspaces.loading && !workspaces.data ? <Loading what="execution workspaces" /> : null}
      <ErrorNote error={workspaces.error} />
      {workspaces.data ? <Paged label="Execution workspaces" items={workspaces.data} empty="No execution workspaces. Open “New execution workspace” below to give runs a directory of a project’s code." render={(ws) => (
        <WorkspaceRow key={ws.id} companyId={companyId} ws={ws} project={projectName(ws.projectId)} onChange={workspaces.reload} />
      )} /> : null}
      <details className="card">
        <summary>New execution workspace</summary>
        <NewExecutionWorkspace companyId={companyId} projects={projects.data ?? []} />
      </details>
      <h2>Environments</h2>
      <Environments companyId={companyId} />
    </section>
  );
}
