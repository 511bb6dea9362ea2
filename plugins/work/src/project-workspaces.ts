import { createOnce, PluginError, respond, type RouteRequest } from '@keel/sdk/plugin';
import type { WorkContext } from './context.ts';
import { rowOfCompany } from './issues.ts';
import { time } from './json.ts';
import { lockRow, list } from './sql.ts';

/**
 * Project workspaces: where a project's code lives (an absolute working directory and/or the
 * repository it is a copy of). At most one is primary per project; the first one made is
 * primary, making another primary clears the old one, and deleting the primary promotes the
 * oldest remaining workspace. Every write locks the project first, so concurrent writes of one
 * project's workspaces are serial (the partial unique index backs this up).
 */
type Row = Record<string, unknown>;
type Body = Record<string, unknown>;

const MAX_METADATA_CHARS = 16 * 1024;
/** Written on a line of its own so the patch and the list stay in step. */
const COLUMNS = { name: 'name', cwd: 'cwd', repoUrl: 'repo_url', repoRef: 'repo_ref', isPrimary: 'is_primary', metadata: 'metadata' } as const;

export function projectWorkspaceJson(row: Row) {
  return {
    id: row.id, companyId: row.company_id, projectId: row.project_id, name: row.name, cwd: row.cwd ?? null,
    repoUrl: row.repo_url ?? null, repoRef: row.repo_ref ?? null, isPrimary: row.is_primary === true,
    metadata: row.metadata ?? null, createdAt: time(row.created_at), updatedAt: time(row.updated_at),
  };
}

/** Checks a schema cannot make: no `.`/`..` segments in cwd, no credentials in repoUrl, metadata's size. */
function checkBody(body: Body): void {
  if (typeof body.cwd === 'string' && body.cwd.split('/').some((segment) => segment === '.' || segment === '..')) {
    throw new PluginError(422, 'invalid_cwd', 'cwd must be an absolute path without "." or ".." segments', { field: 'cwd' });
  }
  if (typeof body.repoUrl === 'string' && /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i.test(body.repoUrl)) {
    throw new PluginError(422, 'repo_url_credentials', 'repoUrl must not contain a user name or password; use a secret for credentials', { field: 'repoUrl' });
  }
  if (body.metadata !== undefined && body.metadata !== null && JSON.stringify(body.metadata).length > MAX_METADATA_CHARS) {
    throw new PluginError(400, 'metadata_too_large', `metadata: at most ${MAX_METADATA_CHARS} characters of JSON`, { field: 'metadata', limit: MAX_METADATA_CHARS });
  }
}

/**
 * The host resolved the workspace (its company checked) from the path; the path's project must
 * be the workspace's own, or the workspace is not found there. The project is locked first.
 */
async function lockWorkspace(ctx: WorkContext, req: RouteRequest): Promise<{ project: Row; current: Row }> {
  const { rows: found } = await ctx.db.query('select project_id from project_workspaces where id = $1 and company_id = $2', [req.params.workspaceId, req.companyId]);
  if (!found[0] || String(found[0].project_id) !== String(req.params.projectId).toLowerCase()) throw new PluginError(404, 'not_found', 'Project workspace not found');
  const project = await lockRow(ctx.db, 'projects', String(found[0].project_id), req.companyId!);
  const { rows } = await ctx.db.query('select * from project_workspaces where id = $1 for update', [req.params.workspaceId]);
  if (!rows[0]) throw new PluginError(404, 'not_found', 'Project workspace not found');
  return { project, current: rows[0] };
}

async function clearOtherPrimaries(ctx: WorkContext, projectId: unknown, keepId: unknown): Promise<void> {
  await ctx.db.query('update project_workspaces set is_primary = false, updated_at = now() where project_id = $1 and is_primary and id is distinct from $2', [projectId, keepId]);
}

async function record(ctx: WorkContext, action: string, projectId: unknown, workspace: ReturnType<typeof projectWorkspaceJson>, extra: Record<string, unknown> = {}) {
  await ctx.activity.record({
    action, entityType: 'project', entityId: String(projectId),
    details: { workspaceId: workspace.id, name: workspace.name, cwd: workspace.cwd, isPrimary: workspace.isPrimary, ...extra },
  });
}

export async function listProjectWorkspaces(req: RouteRequest, ctx: WorkContext) {
  const { rows } = await ctx.db.query('select * from project_workspaces where project_id = $1 and company_id = $2 order by created_at, id', [req.params.projectId, req.companyId]);
  return rows.map(projectWorkspaceJson);
}

export async function getProjectWorkspace(req: RouteRequest, ctx: WorkContext) {
  const { rows } = await ctx.db.query('select * from project_workspaces where id = $1 and company_id = $2', [req.params.workspaceId, req.companyId]);
  if (!rows[0] || String(rows[0].project_id) !== String(req.params.projectId).toLowerCase()) throw new PluginError(404, 'not_found', 'Project workspace not found');
  return projectWorkspaceJson(rows[0]);
}

/** With an Idempotency-Key, a retried create answers the workspace it made (200) and writes nothing (createOnce). */
export async function createProjectWorkspace(req: RouteRequest, ctx: WorkContext) {
  const companyId = req.companyId!;
  return createOnce(ctx.db, {
    key: req.headers['idempotency-key'], companyId, kind: 'project_workspace', request: { projectId: req.params.projectId, body: req.body },
    load: async (id) => { const row = await rowOfCompany(ctx, 'project_workspaces', id, companyId); return row && projectWorkspaceJson(row); },
    create: () => insertProjectWorkspace(req, ctx),
  });
}

async function insertProjectWorkspace(req: RouteRequest, ctx: WorkContext) {
  const body = req.body as Body;
  checkBody(body);
  if (!body.cwd && !body.repoUrl) throw new PluginError(422, 'workspace_location_required', 'A project workspace needs a cwd, a repoUrl or both');
  const project = await lockRow(ctx.db, 'projects', req.params.projectId!, req.companyId!);
  const { rows: existing } = await ctx.db.query('select count(*)::int as n from project_workspaces where project_id = $1', [project.id]);
  // The project's first workspace is its primary whatever the body says: a project with workspaces always has one.
  const primary = Number(existing[0]!.n) === 0 ? true : body.isPrimary === true;
  if (primary) await clearOtherPrimaries(ctx, project.id, null);
  const { rows } = await ctx.db.query(
    `insert into project_workspaces (company_id, project_id, name, cwd, repo_url, repo_ref, is_primary, metadata)
     values ($1, $2, $3, $4, $5, $6, $7, $8::jsonb) returning *`,
    [req.companyId, project.id, body.name, body.cwd ?? null, body.repoUrl ?? null, body.repoRef ?? null, primary,
      body.metadata === undefined || body.metadata === null ? null : JSON.stringify(body.metadata)]);
  const workspace = projectWorkspaceJson(rows[0]!);
  await record(ctx, 'project.workspace_created', project.id, workspace);
  return { id: String(workspace.id), answer: respond(201, workspace) };
}

export async function updateProjectWorkspace(req: RouteRequest, ctx: WorkContext) {
  const body = req.body as Body;
  checkBody(body);
  const { project, current } = await lockWorkspace(ctx, req);
  const cwd = Object.hasOwn(body, 'cwd') ? body.cwd : current.cwd;
  const repoUrl = Object.hasOwn(body, 'repoUrl') ? body.repoUrl : current.repo_url;
  if (!cwd && !repoUrl) throw new PluginError(422, 'workspace_location_required', 'A project workspace needs a cwd, a repoUrl or both');
  if (body.isPrimary === true) await clearOtherPrimaries(ctx, project.id, current.id);
  const params: unknown[] = [current.id];
  const sets: string[] = [];
  for (const [field, column] of Object.entries(COLUMNS)) {
    if (!Object.hasOwn(body, field)) continue;
    const value = body[field];
    params.push(field === 'metadata' && value !== null && value !== undefined ? JSON.stringify(value) : (value ?? null));
    sets.push(`${column} = $${params.length}${field === 'metadata' ? '::jsonb' : ''}`);
  }
  const { rows } = await ctx.db.query(`update project_workspaces set ${sets.join(', ')}, updated_at = now() where id = $1 returning *`, params);
  const before = projectWorkspaceJson(current);
  const after = projectWorkspaceJson(rows[0]!);
  const changed = Object.keys(COLUMNS).filter((field) => JSON.stringify(before[field as keyof typeof before]) !== JSON.stringify(after[field as keyof typeof after]));
  await record(ctx, 'project.workspace_updated', project.id, after, { changedFields: changed });
  return after;
}

export async function deleteProjectWorkspace(req: RouteRequest, ctx: WorkContext) {
  const { project, current } = await lockWorkspace(ctx, req);
  await ctx.db.query('delete from project_workspaces where id = $1', [current.id]);
  if (current.is_primary === true) {
    // The project keeps a primary while it has workspaces: the oldest remaining one takes over.
    await ctx.db.query(
      `update project_workspaces set is_primary = true, updated_at = now()
       where id = (select id from project_workspaces where project_id = $1 order by created_at, id limit 1)`, [project.id]);
  }
  const workspace = projectWorkspaceJson(current);
  await record(ctx, 'project.workspace_deleted', project.id, workspace);
  return workspace;
}

/**
 * Service `project-workspaces` (for other plugins: skills, summaries, environments): the calling
 * company's project workspaces, oldest first, optionally only of some projects and/or some
 * workspace ids. Ids of another company are simply not found.
 */
export async function projectWorkspacesService(input: unknown, ctx: WorkContext) {
  const { projectIds, workspaceIds } = (input ?? {}) as { projectIds?: string[]; workspaceIds?: string[] };
  const params: unknown[] = [ctx.invocation.companyId];
  let where = 'company_id = $1';
  if (projectIds !== undefined) { params.push(JSON.stringify(projectIds)); where += ` and project_id = any(${list(params.length, 'uuid')})`; }
  if (workspaceIds !== undefined) { params.push(JSON.stringify(workspaceIds)); where += ` and id = any(${list(params.length, 'uuid')})`; }
  const { rows } = await ctx.db.query(`select * from project_workspaces where ${where} order by created_at, id`, params);
  return { workspaces: rows.map(projectWorkspaceJson) };
}
