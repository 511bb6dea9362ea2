import { useState } from 'react';
import { api, type Agent } from '../api.ts';
import { useIssuePages } from './issues.tsx';
import { ProjectWorkspaces } from './project-workspaces.tsx';
import { Link } from '../router.tsx';
import { ActionButton, ErrorNote, Field, Form, Loading, Paged, Status, useLoad, when } from '../ui.tsx';

export interface Project {
  id: string; companyId: string; name: string; description: string | null; status: string; leadAgentId: string | null; goalId: string | null;
  targetDate: string | null; color: string | null; archivedAt: string | null; pausedAt: string | null; pauseReason: string | null; createdAt: string; updatedAt: string;
}
interface GoalRef { id: string; title: string }

export const PROJECT_STATUSES = ['backlog', 'planned', 'in_progress', 'completed', 'cancelled'] as const;
const ISSUES_PAGE = 100;
const PROJECT_ISSUE_PAGES = { first: ISSUES_PAGE, rest: ISSUES_PAGE };

/**
 * Reads the project form. An empty optional field is null on an edit (it clears the value) and
 * left out on a create (the default applies); the API judges every value and says what is wrong.
 */
function projectBody(fields: FormData, editing: boolean): Record<string, unknown> {
  const optional = (name: string) => {
    const value = String(fields.get(name) ?? '').trim();
    return value ? value : editing ? null : undefined;
  };
  // A name of spaces only is sent empty, for the API to refuse, rather than kept as a blank name.
  return {
    name: String(fields.get('name') ?? '').trim(), description: optional('description'), status: fields.get('status') || undefined,
    leadAgentId: optional('leadAgentId'), goalId: optional('goalId'), targetDate: optional('targetDate'), color: optional('color'),
  };
}

/** The fields of a project, empty for a new one, filled from `project` for an edit. */
function ProjectFields({ agents, goals, project }: { agents: Agent[]; goals: GoalRef[]; project?: Project }) {
  return (
    <>
      <Field label="Name" name="name" required defaultValue={project?.name} />
      <Field label="Description" name="description" type="textarea" defaultValue={project?.description ?? undefined} />
      <Field label="Status" name="status">
        <select name="status" defaultValue={project?.status ?? 'backlog'}>{PROJECT_STATUSES.map((s) => <option key={s} value={s}>{s.replace('_', ' ')}</option>)}</select>
      </Field>
      <Field label="Lead agent" name="leadAgentId">
        <select name="leadAgentId" defaultValue={project?.leadAgentId ?? ''}><option value="">nobody</option>{agents.map((a) => <option key={a.id} value={a.id}>{a.name}</option>)}</select>
      </Field>
      <Field label="Goal" name="goalId">
        <select name="goalId" defaultValue={project?.goalId ?? ''}><option value="">none</option>{goals.map((g) => <option key={g.id} value={g.id}>{g.title}</option>)}</select>
      </Field>
      <Field label="Target date" name="targetDate" type="date" defaultValue={project?.targetDate ?? undefined} />
      <Field label="Color (#rrggbb)" name="color" placeholder="#3366cc" defaultValue={project?.color ?? undefined} />
    </>
  );
}

function useCompanyRefs(companyId: string) {
  const agents = useLoad(() => api.get<Agent[]>(`/api/companies/${companyId}/agents`), [companyId]);
  const goals = useLoad(() => api.get<GoalRef[]>(`/api/companies/${companyId}/goals`), [companyId]);
  return { agents: agents.data ?? [], goals: goals.data ?? [], loaded: !!agents.data && !!goals.data, error: agents.error ?? goals.error };
}

function Swatch({ color }: { color: string | null }) {
  return color ? <span className="swatch" style={{ background: color }} aria-hidden="true" /> : null;
}

export function ProjectsPage({ companyId }: { companyId: string }) {
  const [archived, setArchived] = useState(false);
  const projects = useLoad(() => api.get<Project[]>(`/api/companies/${companyId}/projects`, archived ? { includeArchived: 'true' } : undefined), [companyId, archived]);
  const refs = useCompanyRefs(companyId);
  const agentName = (id: string | null) => refs.agents.find((a) => a.id === id)?.name ?? '—';
  return (
    <section>
      <h1>Projects</h1>
      <details className="card">
        <summary>New project</summary>
        <Form label="New project" submit="Create project" onSubmit={async (fields) => {
          await api.post(`/api/companies/${companyId}/projects`, projectBody(fields, false));
          await projects.reload();
        }}><ProjectFields agents={refs.agents} goals={refs.goals} /></Form>
      </details>
      <ErrorNote error={refs.error} />
      <div className="toolbar">
        <label className="field inline"><input type="checkbox" checked={archived} onChange={(event) => setArchived(event.target.checked)} /> <span>Show archived</span></label>
      </div>
      {projects.loading && !projects.data ? <Loading what="projects" /> : null}
      <ErrorNote error={projects.error} />
      {projects.data ? (
        <Paged label="Projects" items={projects.data} empty="No projects yet. Open “New project” above to group issues, a budget and the code’s workspaces." render={(project) => (
          <li key={project.id} className="row-item">
            <Swatch color={project.color} />
            <Link to={`/companies/${companyId}/projects/${project.id}`}>{project.name}</Link> <Status value={project.status} />
            <span className="muted"> lead {agentName(project.leadAgentId)} · target {project.targetDate ?? '—'}{project.archivedAt ? ' · archived' : ''}{project.pausedAt ? ` · paused (${project.pauseReason ?? 'hold'})` : ''}</span>
          </li>
        )} />
      ) : null}
    </section>
  );
}

export function ProjectPage({ companyId, projectId }: { companyId: string; projectId: string }) {
  const project = useLoad(() => api.get<Project>(`/api/projects/${projectId}`), [projectId]);
  const refs = useCompanyRefs(companyId);
  const issues = useIssuePages(companyId, { projectId }, PROJECT_ISSUE_PAGES);
  const [saved, setSaved] = useState<string | null>(null);
  if (project.loading && !project.data) return <Loading what="the project" />;
  if (project.error) return <ErrorNote error={project.error} />;
  const p = project.data!;
  const patch = async (body: Record<string, unknown>) => { await api.patch(`/api/projects/${projectId}`, body); await project.reload(); };
  return (
    <section>
      <p><Link to={`/companies/${companyId}/projects`}>Projects</Link> / {p.name}</p>
      <div className="title-row"><h1><Swatch color={p.color} /> {p.name}</h1><Status value={p.status} />{p.archivedAt ? <Status value="archived" /> : null}</div>
      {p.description ? <p className="prewrap">{p.description}</p> : null}
      {p.pausedAt ? <p className="error">Paused since {when(p.pausedAt)} ({p.pauseReason ?? 'hold'}): it takes no new work.</p> : null}
      <dl className="facts">
        <div><dt>Lead</dt><dd>{refs.agents.find((a) => a.id === p.leadAgentId)?.name ?? '—'}</dd></div>
        <div><dt>Goal</dt><dd>{refs.goals.find((g) => g.id === p.goalId)?.title ?? '—'}</dd></div>
        <div><dt>Target date</dt><dd>{p.targetDate ?? '—'}</dd></div>
        <div><dt>Updated</dt><dd>{when(p.updatedAt)}</dd></div>
      </dl>
      <div className="row">
        {p.archivedAt
          ? <ActionButton action={() => patch({ archivedAt: null })}>Unarchive</ActionButton>
          : <ActionButton kind="danger" action={() => patch({ archivedAt: new Date().toISOString() })}>Archive</ActionButton>}
        <Link to={`/companies/${companyId}/costs`}>Budget on the costs page</Link>
      </div>
      <div className="grid2">
        <div className="card">
          <h2>Edit</h2>
          <ErrorNote error={refs.error} />
          {/* A select's first value is its value for good, so the form waits for the agents and goals it offers.
              Keyed by the update time: after a save the fields show what the server kept. */}
          {refs.loaded ? <Form key={p.updatedAt} label="Edit project" submit="Save project" onSubmit={async (fields) => {
            setSaved(null);
            await patch(projectBody(fields, true));
            setSaved('Saved.');
          }}><ProjectFields agents={refs.agents} goals={refs.goals} project={p} /></Form> : <Loading what="the form" />}
          {saved ? <p role="status">{saved}</p> : null}
        </div>
        <div className="card">
          <h2>Issues</h2>
          <ErrorNote error={issues.error} />
          {!issues.loading && issues.items.length === 0 && !issues.error ? <p className="muted">No issues in this project.</p> : null}
          <ul className="rows" aria-label="Project issues">{issues.items.map((issue) => (
            <li key={issue.id} className="row-item">
              <Link to={`/companies/${companyId}/issues/${issue.id}`}>{issue.identifier} {issue.title}</Link> <Status value={issue.status} />
            </li>))}
          </ul>
          {issues.loading ? <Loading what="issues" /> : null}
          {issues.next && !issues.loading ? <button type="button" onClick={() => void issues.more()}>Load {ISSUES_PAGE} more</button> : null}
        </div>
      </div>
      <ProjectWorkspaces projectId={projectId} />
    </section>
  );
}
