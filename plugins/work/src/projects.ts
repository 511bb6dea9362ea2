import { createOnce, PluginError, respond, type RouteRequest } from '@keel/sdk/plugin';
import type { WorkContext } from './context.ts';
import { rowOfCompany } from './issues.ts';
import { projectJson } from './json.ts';
import { assertAgentOfCompany, assertRowOfCompany } from './references.ts';
import { assignments, changedFields, lockRow, updateRow } from './sql.ts';

const COLUMNS = {
  name: 'name', description: 'description', status: 'status', leadAgentId: 'lead_agent_id', goalId: 'goal_id',
  targetDate: 'target_date', color: 'color', archivedAt: 'archived_at',
};
const FIELDS = Object.keys(COLUMNS);

async function checkReferences(ctx: WorkContext, companyId: string, body: Record<string, unknown>): Promise<void> {
  await assertRowOfCompany(ctx, companyId, 'goal', 'goalId', body.goalId);
  await assertAgentOfCompany(ctx, 'leadAgentId', body.leadAgentId);
}

/** With an Idempotency-Key, a retried create answers the project it made (200) and writes nothing (createOnce). */
export async function createProject(req: RouteRequest, ctx: WorkContext) {
  const companyId = req.companyId!;
  return createOnce(ctx.db, {
    key: req.headers['idempotency-key'], companyId, kind: 'project', request: req.body,
    load: async (id) => { const row = await rowOfCompany(ctx, 'projects', id, companyId); return row && projectJson(row); },
    create: () => insertProject(req, ctx),
  });
}

async function insertProject(req: RouteRequest, ctx: WorkContext) {
  const body = req.body as Record<string, unknown>;
  const companyId = req.companyId!;
  await checkReferences(ctx, companyId, body);
  const { rows } = await ctx.db.query(
    `insert into projects (company_id, name, description, status, lead_agent_id, goal_id, target_date, color)
     values ($1, $2, $3, coalesce($4, 'backlog'), $5, $6, $7::date, $8) returning *`,
    [companyId, body.name, body.description ?? null, body.status ?? null, body.leadAgentId ?? null, body.goalId ?? null, body.targetDate ?? null, body.color ?? null]);
  const project = projectJson(rows[0]!);
  await ctx.activity.record({ action: 'project.created', entityType: 'project', entityId: String(project.id), details: { name: project.name, status: project.status } });
  return { id: String(project.id), answer: respond(201, project) };
}

export async function listProjects(req: RouteRequest, ctx: WorkContext) {
  const params: unknown[] = [req.companyId];
  let where = 'company_id = $1';
  if (req.query.status !== undefined) { params.push(req.query.status); where += ` and status = $${params.length}`; }
  // Archived projects are left out unless asked for, as archived companies are.
  if (req.query.includeArchived !== true) where += ' and archived_at is null';
  const { rows } = await ctx.db.query(`select * from projects where ${where} order by created_at, id`, params);
  return rows.map(projectJson);
}

export async function getProject(req: RouteRequest, ctx: WorkContext) {
  const { rows } = await ctx.db.query('select * from projects where id = $1 and company_id = $2', [req.params.projectId, req.companyId]);
  if (!rows[0]) throw new PluginError(404, 'not_found', 'Project not found');
  return projectJson(rows[0]);
}

export async function updateProject(req: RouteRequest, ctx: WorkContext) {
  const body = req.body as Record<string, unknown>;
  const companyId = req.companyId!;
  const current = await lockRow(ctx.db, 'projects', req.params.projectId!, companyId);
  await checkReferences(ctx, companyId, body);
  const params: unknown[] = [current.id];
  const row = await updateRow(ctx.db, 'projects', current, assignments(body, COLUMNS, params), params);
  const before = projectJson(current);
  const after = projectJson(row);
  const { changes, previous } = changedFields(before, after, FIELDS);
  await ctx.activity.record({ action: 'project.updated', entityType: 'project', entityId: String(after.id), details: { changes, previous } });
  return after;
}
