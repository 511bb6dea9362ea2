import { useEffect, useState } from 'react';
import { api, type Agent, type Company, type Issue } from '../api.ts';
import { Link } from '../router.tsx';

export interface Entry { id: string; actorType: string; actorId: string; action: string; entityType: string; entityId: string; agentId: string | null; runId: string | null; createdAt: string; details: unknown }
interface Member { userId: string; email: string | null; name: string | null }
interface Named { id: string; name?: string | null; title?: string | null }

/** The names the feed speaks of, read once per company: agents, members, projects, goals, secrets, the company. */
export interface Names { agents: Map<string, string>; users: Map<string, string>; projects: Map<string, string>; goals: Map<string, string>; secrets: Map<string, string>; company: Company | null; issues: Map<string, Issue> }

const byId = (rows: Named[] | undefined, field: 'name' | 'title') => new Map((rows ?? []).map((row) => [row.id, String(row[field] ?? row.id)]));
const quietly = <T,>(read: Promise<T>) => read.catch(() => undefined);

/**
 * Reads the names once, then the issues the entries name: the newest 200 in one list, any other
 * one by id (at most 100, the feed's first), so a long feed costs a few requests, not one an entry.
 */
export function useNames(companyId: string, entries: Entry[] | undefined): Names {
  const [names, setNames] = useState<Names>({ agents: new Map(), users: new Map(), projects: new Map(), goals: new Map(), secrets: new Map(), company: null, issues: new Map() });
  useEffect(() => {
    let live = true;
    void Promise.all([
      quietly(api.get<Agent[]>(`/api/companies/${companyId}/agents`)), quietly(api.get<Member[]>(`/api/companies/${companyId}/members`)),
      quietly(api.get<Named[]>(`/api/companies/${companyId}/projects`, { includeArchived: 'true' })), quietly(api.get<Named[]>(`/api/companies/${companyId}/goals`)),
      quietly(api.get<Named[]>(`/api/companies/${companyId}/secrets`)), quietly(api.get<Company>(`/api/companies/${companyId}`)),
    ]).then(([agents, members, projects, goals, secrets, company]) => {
      if (!live) return;
      setNames((before) => ({
        ...before, agents: byId(agents, 'name'), projects: byId(projects, 'name'), goals: byId(goals, 'title'), secrets: byId(secrets, 'name'), company: company ?? null,
        users: new Map((members ?? []).map((member) => [member.userId, member.name ?? member.email ?? 'a member'])),
      }));
    });
    return () => { live = false; };
  }, [companyId]);
  const issueIds = [...new Set((entries ?? []).filter((entry) => entry.entityType === 'issue').map((entry) => entry.entityId))];
  const wanted = issueIds.join(',');
  useEffect(() => {
    if (!wanted) return undefined;
    let live = true;
    (async () => {
      const found = new Map<string, Issue>();
      for (const issue of (await quietly(api.get<Issue[]>(`/api/companies/${companyId}/issues`, { limit: 200 }))) ?? []) found.set(issue.id, issue);
      const missing = wanted.split(',').filter((id) => !found.has(id)).slice(0, 100);
      for (let index = 0; index < missing.length; index += 6) {
        const batch = await Promise.all(missing.slice(index, index + 6).map((id) => quietly(api.get<Issue>(`/api/issues/${id}`))));
        for (const issue of batch) if (issue) found.set(issue.id, issue);
      }
      if (live) setNames((before) => ({ ...before, issues: found }));
    })();
    return () => { live = false; };
  }, [companyId, wanted]);
  return names;
}

const LOCAL_BOARD = 'local-board';
const KEEL_PARTS = new Set(['system', 'executor', 'extension-host', 'cli-auth', 'webhook', 'anonymous', 'kernel']);

/** Who did it, by name: an agent's or member's name, the local board, a plugin, or Keel itself. */
export function actorName(entry: Entry, names: Names): string {
  if (entry.actorType === 'agent') return names.agents.get(entry.actorId) ?? 'A removed agent';
  if (entry.actorType === 'user') return entry.actorId === LOCAL_BOARD ? 'The local board' : names.users.get(entry.actorId) ?? 'A board user';
  if (entry.actorId.startsWith('plugin:')) return `The ${entry.actorId.slice('plugin:'.length)} plugin`;
  // Keel's own parts are Keel; another system actor (one a board user recorded by hand) keeps its name.
  return KEEL_PARTS.has(entry.actorId) ? 'Keel' : entry.actorId;
}

/** The entity by name, linked to its page where the console has one. */
export function EntityName({ entry, names, companyId }: { entry: Entry; names: Names; companyId: string }) {
  const base = `/companies/${companyId}`;
  const id = entry.entityId;
  switch (entry.entityType) {
    case 'issue': {
      const issue = names.issues.get(id);
      return <Link to={`${base}/issues/${id}`}>{issue ? `${issue.identifier} ${issue.title}` : 'an issue'}</Link>;
    }
    case 'agent': return <Link to={`${base}/agents/${id}`}>{names.agents.get(id) ?? 'an agent'}</Link>;
    case 'project': return <Link to={`${base}/projects/${id}`}>{names.projects.get(id) ?? 'a project'}</Link>;
    case 'goal': return <Link to={`${base}/goals`}>{names.goals.get(id) ?? 'a goal'}</Link>;
    case 'run': case 'heartbeat_run': return <Link to={`${base}/runs/${id}`}>run {id.slice(0, 8)}</Link>;
    case 'approval': return <Link to={`${base}/approvals`}>an approval</Link>;
    case 'secret': return <Link to={`${base}/secrets`}>{names.secrets.get(id) ?? 'a secret'}</Link>;
    case 'company': return <Link to={`${base}/dashboard`}>{names.company && names.company.id === id ? names.company.name : 'the company'}</Link>;
    case 'user': return <>{id === LOCAL_BOARD ? 'the local board' : names.users.get(id) ?? 'a user'}</>;
    case 'resource_membership': return <>{names.agents.get(id) ?? names.projects.get(id) ?? 'a resource'}</>;
    default: return <>{entry.entityType.replace(/_/g, ' ')} <code>{id.length > 24 ? `${id.slice(0, 12)}…` : id}</code></>;
  }
}
