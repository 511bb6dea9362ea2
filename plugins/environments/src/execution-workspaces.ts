import { PluginError, respond, type RouteRequest } from '@keel/sdk/plugin';
import { actorOf, assertMayManage } from './access.ts';
import type { EnvironmentsContext } from './context.ts';
import { executionWorkspaceJson, operationJson } from './json.ts';
import { refusal } from './probe.ts';
import { assertBoardUser, checkDefinitions, listRuntimeServices, runningServices, runtimeActionOn } from './runtime-services.ts';
import { updateSets, type ColumnMap } from './update-sets.ts';

type Body = Record<string, unknown>;
type Row = Record<string, unknown>;
const MAX_METADATA_CHARS = 16 * 1024;
const OPERATION_PAGE = 100;

interface ProjectWorkspace { id: string; projectId: string; name: string; cwd: string | null; repoUrl: string | null; repoRef: string | null }

function checkMetadata(body: Body): void {
  if (body.metadata !== undefined && body.metadata !== null && JSON.stringify(body.metadata).length > MAX_METADATA_CHARS) {
    throw new PluginError(400, 'metadata_too_large', `metadata: at most ${MAX_METADATA_CHARS} characters of JSON`, { field: 'metadata', limit: MAX_METADATA_CHARS });
  }
}

/** Appends to the workspace's recorded operations, in the call's transaction. */
export async function recordOperation(ctx: EnvironmentsContext, workspace: Row, kind: string, status: string, message: string | null, details: Record<string, unknown> | null,
  action: string | null = null, executionId: string | null = null): Promise<Row> {
  const actor = actorOf(ctx);
  const { rows } = await ctx.db.query(
    `insert into workspace_operations (company_id, execution_workspace_id, kind, action, status, message, details, actor_type, actor_id, execution_id)
     values ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10) returning *`,
    [workspace.company_id, workspace.id, kind, action, status, message, details === null ? null : JSON.stringify(details), actor.type, actor.id, executionId]);
  return rows[0]!;
}

async function lockWorkspace(ctx: EnvironmentsContext, id: string, companyId: string): Promise<Row> {
  const { rows } = await ctx.db.query('select * from execution_workspaces where id = $1 and company_id = $2 for update', [id, companyId]);
  if (!rows[0]) throw new PluginError(404, 'not_found', 'Execution workspace not found');
  return rows[0];
}

/**
 * An execution workspace is made from a project workspace (the work plugin's, asked through its
 * `project-workspaces` service, so only the calling company's): `project_primary` works in the
 * project workspace's own cwd; `git_worktree` records a worktree at its own cwd and branch
 * (Keel records the worktree; creating it on disk is the run's work).
 */
export async function createExecutionWorkspace(req: RouteRequest, ctx: EnvironmentsContext) {
  await assertMayManage(ctx);
  const body = req.body as Body;
  checkMetadata(body);
  const mode = (body.mode as string | undefined) ?? 'project_primary';
  const { workspaces } = await ctx.services.call<{ workspaces: ProjectWorkspace[] }>('work', 'project-workspaces', { workspaceIds: [body.projectWorkspaceId] });
  const source = workspaces[0];
  if (!source) throw new PluginError(422, 'project_workspace_not_found', 'projectWorkspaceId: no project workspace with this id belongs to the company', { field: 'projectWorkspaceId' });
  let cwd = source.cwd;
  if (mode === 'git_worktree') {
    if (typeof body.cwd !== 'string') throw new PluginError(422, 'cwd_required', 'A git_worktree execution workspace needs the cwd of its worktree', { field: 'cwd' });
    if (!body.branch) throw new PluginError(422, 'branch_required', 'A git_worktree execution workspace needs its branch', { field: 'branch' });
    cwd = body.cwd;
  } else if (body.cwd !== undefined) {
    throw new PluginError(422, 'cwd_not_allowed', 'A project_primary execution workspace works in the project workspace\'s own cwd', { field: 'cwd' });
  }
  if (typeof cwd === 'string' && cwd.split('/').some((segment) => segment === '.' || segment === '..')) {
    throw new PluginError(422, 'invalid_cwd', 'cwd must be an absolute path without "." or ".." segments', { field: 'cwd' });
  }
  if (body.environmentId) {
    const { rows } = await ctx.db.query('select 1 from environments where id = $1 and company_id = $2', [body.environmentId, req.companyId]);
    if (!rows.length) throw new PluginError(422, 'environment_not_found', 'environmentId: no environment with this id belongs to the company', { field: 'environmentId' });
  }
  const { rows } = await ctx.db.query(
    `insert into execution_workspaces (company_id, project_id, project_workspace_id, environment_id, source_issue_id, name, mode, cwd, repo_url, base_ref, branch, metadata)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::jsonb) returning *`,
    [req.companyId, source.projectId, source.id, body.environmentId ?? null, body.sourceIssueId ?? null, body.name ?? source.name, mode, cwd,
      source.repoUrl, body.baseRef ?? source.repoRef, body.branch ?? null, body.metadata === undefined || body.metadata === null ? null : JSON.stringify(body.metadata)]);
  const row = rows[0]!;
  await recordOperation(ctx, row, 'create', 'succeeded', `Created (${mode})`, { mode, projectWorkspaceId: source.id });
  const workspace = executionWorkspaceJson(row);
  await ctx.activity.record({ action: 'execution_workspace.created', entityType: 'execution_workspace', entityId: String(workspace.id), details: { mode, projectWorkspaceId: source.id, branch: workspace.branch } });
  return respond(201, workspace);
}

export async function listExecutionWorkspaces(req: RouteRequest, ctx: EnvironmentsContext) {
  const params: unknown[] = [req.companyId];
  let where = 'company_id = $1';
  for (const [field, column] of [['projectId', 'project_id'], ['projectWorkspaceId', 'project_workspace_id'], ['status', 'status'], ['sourceIssueId', 'source_issue_id']] as const) {
    if (req.query[field] === undefined) continue;
    params.push(req.query[field]);
    where += ` and ${column} = $${params.length}`;
  }
  const { rows } = await ctx.db.query(`select * from execution_workspaces where ${where} order by created_at desc, id desc`, params);
  return rows.map(executionWorkspaceJson);
}

export async function getExecutionWorkspace(req: RouteRequest, ctx: EnvironmentsContext) {
  const { rows } = await ctx.db.query('select * from execution_workspaces where id = $1 and company_id = $2', [req.params.id, req.companyId]);
  if (!rows[0]) throw new PluginError(404, 'not_found', 'Execution workspace not found');
  return executionWorkspaceJson(rows[0]);
}

export interface ReadinessCheck { key: string; status: 'passed' | 'failed' | 'skipped'; message: string; details?: Record<string, unknown> }

/**
 * Whether the workspace may be closed: no active lease works in it, and a git worktree has no
 * uncommitted changes (staged, unstaged or untracked), read by `git status` outside the isolate.
 * A worktree whose status cannot be read is not ready (closing could lose work). The project
 * primary's copy stays where it is when its execution workspace closes, so git is not asked.
 */
export async function closeReadiness(ctx: EnvironmentsContext, workspace: Row) {
  const checks: ReadinessCheck[] = [];
  const { rows } = await ctx.db.query("select count(*)::int as n from environment_leases where execution_workspace_id = $1 and status = 'active'", [workspace.id]);
  const leases = Number(rows[0]!.n);
  checks.push(leases === 0
    ? { key: 'no_active_leases', status: 'passed', message: 'No run holds a lease in this workspace' }
    : { key: 'no_active_leases', status: 'failed', message: `${leases} active lease(s) work in this workspace`, details: { activeLeases: leases } });
  const services = await runningServices(ctx, workspace.id);
  checks.push(services === 0
    ? { key: 'no_running_services', status: 'passed', message: 'No runtime service of this workspace runs' }
    : { key: 'no_running_services', status: 'failed', message: `${services} runtime service(s) of this workspace run; stop them first`, details: { runningServices: services } });
  let git: Record<string, unknown> | null = null;
  if (workspace.mode !== 'git_worktree') {
    checks.push({ key: 'git_clean', status: 'skipped', message: 'The project primary working copy is not removed when its execution workspace closes' });
  } else if (!workspace.cwd) {
    checks.push({ key: 'git_clean', status: 'failed', message: 'The worktree has no cwd to check' });
  } else {
    try {
      const status = await ctx.workspaces.gitStatus(String(workspace.cwd));
      git = { ...status };
      if (!status.repository) checks.push({ key: 'git_clean', status: 'failed', message: 'The cwd is not a git working tree' });
      else if (status.clean) checks.push({ key: 'git_clean', status: 'passed', message: 'No uncommitted changes' });
      else checks.push({ key: 'git_clean', status: 'failed', message: `${status.changedFiles} path(s) have uncommitted changes`, details: { changedFiles: status.changedFiles, sample: status.sample } });
    } catch (error) {
      const { code, message } = refusal(error);
      checks.push({ key: 'git_clean', status: 'failed', message: `The worktree's git status could not be read: ${message}`, details: { code } });
    }
  }
  return { executionWorkspaceId: workspace.id, ready: checks.every((check) => check.status !== 'failed'), checks, git, checkedAt: new Date().toISOString() };
}

export async function getCloseReadiness(req: RouteRequest, ctx: EnvironmentsContext) {
  const { rows } = await ctx.db.query('select * from execution_workspaces where id = $1 and company_id = $2', [req.params.id, req.companyId]);
  if (!rows[0]) throw new PluginError(404, 'not_found', 'Execution workspace not found');
  return closeReadiness(ctx, rows[0]);
}

const COLUMNS: ColumnMap = {
  name: { column: 'name' }, status: { column: 'status' }, branch: { column: 'branch' }, baseRef: { column: 'base_ref' },
  environmentId: { column: 'environment_id' }, metadata: { column: 'metadata', json: true },
  runtimeServices: { column: 'runtime_services', json: true }, workspaceCommands: { column: 'workspace_commands', json: true },
};

export async function updateExecutionWorkspace(req: RouteRequest, ctx: EnvironmentsContext) {
  await assertMayManage(ctx);
  const body = req.body as Body;
  checkMetadata(body);
  checkDefinitions(ctx, body);
  const current = await lockWorkspace(ctx, req.params.id!, req.companyId!);
  if (body.environmentId) {
    const { rows } = await ctx.db.query('select 1 from environments where id = $1 and company_id = $2', [body.environmentId, req.companyId]);
    if (!rows.length) throw new PluginError(422, 'environment_not_found', 'environmentId: no environment with this id belongs to the company', { field: 'environmentId' });
  }
  const closing = body.status === 'closed' && current.status !== 'closed';
  if (closing) {
    const readiness = await closeReadiness(ctx, current);
    if (!readiness.ready) throw new PluginError(409, 'workspace_not_ready_to_close', 'The execution workspace is not ready to close', { readiness });
  }
  const params: unknown[] = [current.id];
  const sets = updateSets(body, COLUMNS, params);
  if (body.status !== undefined) sets.push(body.status === 'closed' ? 'closed_at = coalesce(closed_at, now())' : 'closed_at = null');
  const { rows } = await ctx.db.query(`update execution_workspaces set ${sets.join(', ')}, updated_at = now() where id = $1 returning *`, params);
  const row = rows[0]!;
  const changedFields = Object.keys(body).sort();
  await recordOperation(ctx, row, closing ? 'close' : 'update', 'succeeded', closing ? 'Closed' : `Updated ${changedFields.join(', ')}`, { changedFields });
  const workspace = executionWorkspaceJson(row);
  await ctx.activity.record({ action: closing ? 'execution_workspace.closed' : 'execution_workspace.updated', entityType: 'execution_workspace', entityId: String(workspace.id), details: { changedFields } });
  return workspace;
}

export async function listWorkspaceOperations(req: RouteRequest, ctx: EnvironmentsContext) {
  const { rows } = await ctx.db.query(
    `select * from workspace_operations where execution_workspace_id = $1 and company_id = $2 order by created_at desc, id desc limit ${OPERATION_PAGE}`,
    [req.params.id, req.companyId]);
  return rows.map(operationJson);
}

export async function getRuntimeServices(req: RouteRequest, ctx: EnvironmentsContext) {
  const { rows } = await ctx.db.query('select * from execution_workspaces where id = $1 and company_id = $2', [req.params.id, req.companyId]);
  if (!rows[0]) throw new PluginError(404, 'not_found', 'Execution workspace not found');
  return listRuntimeServices(ctx, rows[0]);
}

const RUNTIME_ACTIONS = ['start', 'stop', 'restart', 'run'];

/**
 * Runtime services and workspace commands (`runtime-services/{action}`, `runtime-commands/{action}`,
 * one handler): `start`, `stop`, `restart` act on a service (runtimeServiceId or serviceIndex),
 * `run` runs a command (workspaceCommandId); runtime-services.ts does the work. Board users
 * only; the workspace must be open and have a cwd.
 */
export const runtimeAction = (kind: 'runtime_service' | 'runtime_command') => async (req: RouteRequest, ctx: EnvironmentsContext) => {
  const action = String(req.params.action ?? '').toLowerCase();
  if (!RUNTIME_ACTIONS.includes(action)) throw new PluginError(404, 'not_found', 'Workspace command action not found');
  assertBoardUser(ctx, 'Workspace services and commands run');
  const current = await lockWorkspace(ctx, req.params.id!, req.companyId!);
  if (current.status === 'closed' || current.status === 'archived') throw new PluginError(409, 'workspace_closed', `The execution workspace is ${current.status}`);
  if (!current.cwd) throw new PluginError(422, 'workspace_path_required', 'Execution workspace needs a local path before workspace commands can run');
  return runtimeActionOn(ctx, current, action, (req.body ?? {}) as Body,
    (status, message, details, operationAction, executionId = null) => recordOperation(ctx, current, kind, status, message, details, operationAction, executionId));
};
