import { useState } from 'react';
import { api } from '../api.ts';
import { navigate } from '../router.tsx';
import { ActionButton, ErrorNote, useLoad } from '../ui.tsx';
import type { ProjectWorkspace } from './project-workspaces.tsx';
import type { Environment } from './environments.tsx';

/**
 * Creates an execution workspace from a project workspace: the project's own directory
 * (project_primary) or a git worktree of it (git_worktree, with its directory and branch).
 * The API judges the fields (a worktree without a branch, a directory for project_primary).
 */
export function NewExecutionWorkspace({ companyId, projects }: { companyId: string; projects: Array<{ id: string; name: string }> }) {
  const [projectId, setProjectId] = useState('');
  const [sourceId, setSourceId] = useState('');
  const [mode, setMode] = useState('project_primary');
  const [name, setName] = useState('');
  const [cwd, setCwd] = useState('');
  const [branch, setBranch] = useState('');
  const [baseRef, setBaseRef] = useState('');
  const [environmentId, setEnvironmentId] = useState('');
  const sources = useLoad(async () => (projectId ? api.get<ProjectWorkspace[]>(`/api/projects/${projectId}/workspaces`) : []), [projectId]);
  const environments = useLoad(() => api.get<Environment[]>(`/api/companies/${companyId}/environments`, { status: 'active' }), [companyId]);
  const source = sourceId || sources.data?.[0]?.id || '';
  const worktree = mode === 'git_worktree';
  const create = async () => {
    const optional = (value: string) => value.trim() || undefined;
    const created = await api.post<{ id: string }>(`/api/companies/${companyId}/execution-workspaces`, {
      projectWorkspaceId: source, mode, name: optional(name), cwd: worktree ? optional(cwd) : undefined, branch: worktree ? optional(branch) : undefined,
      baseRef: optional(baseRef), environmentId: environmentId || undefined,
    });
    navigate(`/companies/${companyId}/workspaces/${created.id}`);
  };
  return (
    <form className="form" aria-label="New execution workspace" onSubmit={(event) => event.preventDefault()}>
      <label className="field"><span>Project</span>
        <select value={projectId} onChange={(event) => { setProjectId(event.target.value); setSourceId(''); }}>
          <option value="">choose a project</option>{projects.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
        </select>
      </label>
      <label className="field"><span>Project workspace</span>
        <select value={source} onChange={(event) => setSourceId(event.target.value)} disabled={!projectId}>
          {projectId && sources.data?.length === 0 ? <option value="">the project has no workspaces</option> : null}
          {(sources.data ?? []).map((ws) => <option key={ws.id} value={ws.id}>{ws.name}{ws.cwd ? ` (${ws.cwd})` : ''}</option>)}
        </select>
      </label>
      <ErrorNote error={sources.error} />
      <label className="field"><span>Mode</span>
        <select value={mode} onChange={(event) => setMode(event.target.value)}>
          <option value="project_primary">project's own directory</option><option value="git_worktree">git worktree</option>
        </select>
      </label>
      <label className="field"><span>Name (default: the project workspace's)</span><input value={name} onChange={(event) => setName(event.target.value)} /></label>
      {worktree ? <>
        <label className="field"><span>Worktree directory (absolute path)</span><input value={cwd} onChange={(event) => setCwd(event.target.value)} /></label>
        <label className="field"><span>Branch</span><input value={branch} onChange={(event) => setBranch(event.target.value)} /></label>
      </> : null}
      <label className="field"><span>Base ref (default: the project workspace's ref)</span><input value={baseRef} onChange={(event) => setBaseRef(event.target.value)} /></label>
      <label className="field"><span>Environment (optional)</span>
        <select value={environmentId} onChange={(event) => setEnvironmentId(event.target.value)}>
          <option value="">none</option>{(environments.data ?? []).map((env) => <option key={env.id} value={env.id}>{env.name}</option>)}
        </select>
      </label>
      <div className="form-actions"><ActionButton kind="primary" disabled={!source} action={create}>Create execution workspace</ActionButton></div>
    </form>
  );
}
