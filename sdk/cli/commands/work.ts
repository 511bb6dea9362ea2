import { CliError, clientFor, companyIdFor, emit, emitList, emitRecord, type GlobalOptions } from '../output.ts';
import { path } from './agent-ref.ts';
import { parsePayload } from './payload.ts';

/** Issues, comments and projects (plugins/work; docs/api/work.md). */
type Options = GlobalOptions & Record<string, any>;

/** Fields given as flags, or the whole body as --payload-json (flags then add to it). */
function bodyOf(options: Options, fields: Record<string, string>): Record<string, unknown> {
  const body: Record<string, unknown> = options.payloadJson !== undefined ? parsePayload(options.payloadJson) : {};
  for (const [flag, field] of Object.entries(fields)) {
    const value = options[flag];
    if (value !== undefined) body[field] = value === 'null' ? null : value;
  }
  return body;
}

const ISSUE_FIELDS = { title: 'title', description: 'description', status: 'status', priority: 'priority', assigneeAgentId: 'assigneeAgentId', projectId: 'projectId', goalId: 'goalId', parentId: 'parentId' };
const ISSUE_COLUMNS = ['identifier', 'status', 'priority', 'title', 'assigneeAgentId', 'updatedAt'];

export async function issueListCommand(options: Options): Promise<void> {
  let nextCursor: string | null = null;
  const issues = await clientFor(options).request<unknown[]>('GET', path`/api/companies/${companyIdFor(options)}/issues`, undefined, {
    query: { status: options.status, assigneeAgentId: options.assigneeAgentId, projectId: options.projectId, q: options.query, limit: options.limit, cursor: options.cursor },
    onHeaders: (headers) => { nextCursor = headers.get('x-next-cursor'); },
  });
  if (options.json) return emit(options, '', { issues, nextCursor });
  emitList(options, issues, ISSUE_COLUMNS, 'No issues');
  if (nextCursor) process.stdout.write(`More: --cursor ${nextCursor}\n`);
}

export async function issueGetCommand(id: string, options: Options): Promise<void> {
  emitRecord(options, await clientFor(options).get(path`/api/issues/${id}`));
}

export async function issueCreateCommand(options: Options): Promise<void> {
  const body = bodyOf(options, ISSUE_FIELDS);
  if (body.title === undefined) throw new CliError('usage', 'issue create needs --title <title> (or a title in --payload-json)');
  const issue = await clientFor(options).create<Record<string, any>>(path`/api/companies/${companyIdFor(options)}/issues`, body, { idempotencyKey: options.idempotencyKey });
  emit(options, `Created ${issue.identifier}: ${issue.title} (${issue.status})`, issue);
}

export async function issueUpdateCommand(id: string, options: Options): Promise<void> {
  const body = bodyOf(options, ISSUE_FIELDS);
  if (!Object.keys(body).length) throw new CliError('usage', 'Nothing to update: pass --title, --status, --priority, --description, --assignee-agent-id, --project-id ... or --payload-json');
  const issue = await clientFor(options).patch<Record<string, any>>(path`/api/issues/${id}`, body);
  emit(options, `Updated ${issue.identifier}: ${issue.title} (${issue.status})`, issue);
}

export async function issueCommentCommand(id: string, options: Options): Promise<void> {
  if (!options.body) throw new CliError('usage', 'issue comment needs --body <text>');
  const comment = await clientFor(options).create<Record<string, any>>(path`/api/issues/${id}/comments`, { body: options.body, ...(options.parentCommentId ? { parentCommentId: options.parentCommentId } : {}) });
  emit(options, `Commented on ${id} (${comment.id})`, comment);
}

export async function issueCommentsCommand(id: string, options: Options): Promise<void> {
  const comments = await clientFor(options).get<unknown[]>(path`/api/issues/${id}/comments`);
  emitList(options, comments, ['createdAt', ['AUTHOR', (c) => c.authorAgentId ?? c.authorUserId ?? c.authorType], 'body'], 'No comments');
}

export async function issueCheckoutCommand(id: string, options: Options): Promise<void> {
  if (!options.agentId) throw new CliError('usage', 'issue checkout needs --agent-id <id> (the calling agent itself)');
  const issue = await clientFor(options).post<Record<string, any>>(path`/api/issues/${id}/checkout`, { agentId: options.agentId, ...(options.expectedStatuses ? { expectedStatuses: String(options.expectedStatuses).split(',') } : {}) });
  emit(options, `Checked out ${issue.identifier} (${issue.status})`, issue);
}

export async function issueReleaseCommand(id: string, options: Options): Promise<void> {
  const issue = await clientFor(options).post<Record<string, any>>(path`/api/issues/${id}/release`, {});
  emit(options, `Released ${issue.identifier} (${issue.status})`, issue);
}

export async function issueActivityCommand(id: string, options: Options): Promise<void> {
  const entries = await clientFor(options).get<unknown[]>(path`/api/issues/${id}/activity`);
  emitList(options, entries, ['createdAt', 'action', 'actorType', 'actorId'], 'No activity');
}

const PROJECT_FIELDS = { name: 'name', description: 'description', status: 'status', leadAgentId: 'leadAgentId', goalId: 'goalId', targetDate: 'targetDate', color: 'color' };
const PROJECT_COLUMNS = ['id', 'name', 'status', 'leadAgentId', 'targetDate'];

export async function projectListCommand(options: Options): Promise<void> {
  const projects = await clientFor(options).get<unknown[]>(path`/api/companies/${companyIdFor(options)}/projects`, { status: options.status, includeArchived: options.includeArchived ? 'true' : undefined });
  emitList(options, projects, PROJECT_COLUMNS, 'No projects');
}

export async function projectGetCommand(id: string, options: Options): Promise<void> {
  emitRecord(options, await clientFor(options).get(path`/api/projects/${id}`));
}

export async function projectCreateCommand(options: Options): Promise<void> {
  const body = bodyOf(options, PROJECT_FIELDS);
  if (body.name === undefined) throw new CliError('usage', 'project create needs --name <name> (or a name in --payload-json)');
  const project = await clientFor(options).create<Record<string, any>>(path`/api/companies/${companyIdFor(options)}/projects`, body);
  emit(options, `Created project ${project.name} (${project.id})`, project);
}

export async function projectUpdateCommand(id: string, options: Options): Promise<void> {
  const body = bodyOf(options, PROJECT_FIELDS);
  if (!Object.keys(body).length) throw new CliError('usage', 'Nothing to update: pass --name, --status, --description, --lead-agent-id ... or --payload-json');
  const project = await clientFor(options).patch<Record<string, any>>(path`/api/projects/${id}`, body);
  emit(options, `Updated project ${project.name} (${project.status})`, project);
}
