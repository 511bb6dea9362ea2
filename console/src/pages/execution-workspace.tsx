import { useEffect } from 'react';
import { api } from '../api.ts';
import { Link } from '../router.tsx';
import { ActionButton, ErrorNote, Loading, Status, useLoad, when } from '../ui.tsx';
import { useSecrets } from './variables.tsx';
import { DefinitionsEditor, type Definition } from './workspace-definitions.tsx';
import { OperationsList, type Operation } from './workspace-operations.tsx';

interface Workspace {
  id: string; name: string; mode: string; status: string; cwd: string | null; branch: string | null; baseRef: string | null; repoUrl: string | null;
  environmentId: string | null; runtimeServices: Definition[]; workspaceCommands: Definition[]; createdAt: string; updatedAt: string;
}
interface ServiceState {
  id: string; name: string; command: string; port?: number; url?: string; status: string;
  exitCode: number | null; signal: string | null; errorCode: string | null; startedAt: string | null; stoppedAt: string | null;
}

/** Reads again every second while something is under way (an operation running, a service starting). */
function usePollWhile(busy: boolean, reload: () => Promise<void>) {
  useEffect(() => {
    if (!busy) return;
    const timer = setInterval(() => { void reload(); }, 1000);
    return () => clearInterval(timer);
  }, [busy, reload]);
}

/**
 * One execution workspace: its runtime services with their state (start, stop, restart), its
 * commands (run), the operations with each result and output, and the definitions as a form.
 */
export function ExecutionWorkspacePage({ companyId, workspaceId }: { companyId: string; workspaceId: string }) {
  const base = `/api/execution-workspaces/${workspaceId}`;
  const workspace = useLoad(() => api.get<Workspace>(base), [workspaceId]);
  const services = useLoad(() => api.get<ServiceState[]>(`${base}/runtime-services`), [workspaceId]);
  const operations = useLoad(() => api.get<Operation[]>(`${base}/workspace-operations`), [workspaceId]);
  const secrets = useSecrets(companyId);
  const underWay = (operations.data ?? []).some((op) => op.status === 'running' && op.kind === 'runtime_command') || (services.data ?? []).some((s) => s.status === 'starting');
  usePollWhile(underWay, operations.reload);
  usePollWhile(underWay, services.reload);
  const refresh = async () => { await Promise.all([services.reload(), operations.reload()]); };
  const act = (path: string, body: Record<string, string>) => async () => { try { await api.post(`${base}/${path}`, body); } finally { await refresh(); } };
  const ws = workspace.data;
  const open = ws?.status === 'active' || ws?.status === 'idle';
  return (
    <section>
      <p><Link to={`/companies/${companyId}/workspaces`}>Workspaces</Link></p>
      <h1>{ws ? ws.name : 'Execution workspace'}</h1>
      {workspace.loading && !ws ? <Loading what="the execution workspace" /> : null}
      <ErrorNote error={workspace.error} />
      {ws ? <>
        <p><Status value={ws.status} /> <span className="muted wrap-anywhere">{ws.mode.replace('_', ' ')} · {ws.cwd ?? 'no directory'}{ws.branch ? ` · branch ${ws.branch}` : ''} · since {when(ws.createdAt)}</span></p>
        {open ? null : <p className="muted">A {ws.status} workspace runs nothing.</p>}
        <div className="card">
          <h2>Runtime services</h2>
          <ErrorNote error={services.error} />
          {services.data?.length === 0 ? <p className="muted">No services: define them below.</p> : null}
          <ul className="rows" aria-label="Runtime services">{(services.data ?? []).map((service) => (
            <li key={service.id} className="row-item">
              <strong>{service.name}</strong> <Status value={service.status} />
              <span className="muted wrap-anywhere"><code>{service.id}</code>{service.port ? ` · port ${service.port}` : ''}{service.url ? ` · ${service.url}` : ''}
                {service.exitCode !== null ? ` · exit code ${service.exitCode}` : ''}{service.signal ? ` · ${service.signal}` : ''}{service.errorCode ? ` · ${service.errorCode}` : ''}
                {service.startedAt ? ` · started ${when(service.startedAt)}` : ''}</span>
              {open ? <>
                <ActionButton label={`Start ${service.name}`} disabled={service.status === 'running' || service.status === 'starting'} action={act('runtime-services/start', { runtimeServiceId: service.id })}>Start</ActionButton>
                <ActionButton label={`Restart ${service.name}`} action={act('runtime-services/restart', { runtimeServiceId: service.id })}>Restart</ActionButton>
                <ActionButton label={`Stop ${service.name}`} kind="danger" disabled={service.status !== 'running' && service.status !== 'starting'} action={act('runtime-services/stop', { runtimeServiceId: service.id })}>Stop</ActionButton>
              </> : null}
            </li>))}
          </ul>
          <h2>Commands</h2>
          {ws.workspaceCommands.length === 0 ? <p className="muted">No commands: define them below.</p> : null}
          <ul className="rows" aria-label="Commands">{ws.workspaceCommands.map((command) => (
            <li key={command.id} className="row-item">
              <strong>{command.name}</strong> <code className="wrap-anywhere">{[command.command, ...(command.args ?? [])].join(' ')}</code>
              {open ? <ActionButton label={`Run ${command.name}`} action={act('runtime-commands/run', { workspaceCommandId: command.id })}>Run</ActionButton> : null}
            </li>))}
          </ul>
        </div>
        <div className="card">
          <div className="row"><h2>Operations</h2><ActionButton label="Refresh operations" action={refresh}>Refresh</ActionButton></div>
          <ErrorNote error={operations.error} />
          {operations.data ? <OperationsList workspaceId={workspaceId} operations={operations.data} /> : null}
        </div>
        <details className="card">
          <summary>Edit services and commands</summary>
          <p className="muted">Plain values are shown to the board as written; use a secret for anything confidential. Only board users define and run these.</p>
          <DefinitionsEditor key={ws.id} workspace={ws} secrets={secrets.data ?? []} onSaved={async () => { await workspace.reload(); await services.reload(); }} />
        </details>
      </> : null}
    </section>
  );
}
