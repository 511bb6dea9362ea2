import { createOnce, PluginError, respond, type RouteRequest } from '@keel/sdk/plugin';
import type { WorkContext } from './context.ts';
import { rowOfCompany } from './issues.ts';
import { goalJson } from './json.ts';
import { assertAgentOfCompany, assertNotUnderItself, assertRowOfCompany } from './references.ts';
import { assignments, changedFields, lockRow, updateRow } from './sql.ts';

const COLUMNS = { title: 'title', description: 'description', level: 'level', status: 'status', parentId: 'parent_id', ownerAgentId: 'owner_agent_id' };
const FIELDS = Object.keys(COLUMNS);

async function checkReferences(ctx: WorkContext, companyId: string, body: Record<string, unknown>, goalId?: string): Promise<void> {
  await assertRowOfCompany(ctx, companyId, 'goal', 'parentId', body.parentId);
  await assertAgentOfCompany(ctx, 'ownerAgentId', body.ownerAgentId);
  if (goalId) await assertNotUnderItself(ctx, 'goal', goalId, body.parentId, 'a goal cannot be placed under itself or one of its descendants');
}

/** With an Idempotency-Key, a retried create answers the goal it made (200) and writes nothing (createOnce). */
export async function createGoal(req: RouteRequest, ctx: WorkContext) {
  const companyId = req.companyId!;
  return createOnce(ctx.db, {
    key: req.headers['idempotency-key'], companyId, kind: 'goal', request: req.body,
    load: async (id) => { const row = await rowOfCompany(ctx, 'goals', id, companyId); return row && goalJson(row); },
    create: () => insertGoal(req, ctx),
  });
}

async function insertGoal(req: RouteRequest, ctx: WorkContext) {
  const body = req.body as Record<string, unknown>;
  const companyId = req.companyId!;
  await checkReferences(ctx, companyId, body);
  const { rows } = await ctx.db.query(
    `insert into goals (company_id, title, description, level, status, parent_id, owner_agent_id)
     values ($1, $2, $3, coalesce($4, 'task'), coalesce($5, 'planned'), $6, $7) returning *`,
    [companyId, body.title, body.description ?? null, body.level ?? null, body.status ?? null, body.parentId ?? null, body.ownerAgentId ?? null]);
  const goal = goalJson(rows[0]!);
  await ctx.activity.record({ action: 'goal.created', entityType: 'goal', entityId: String(goal.id), details: { title: goal.title, level: goal.level } });
  return { id: String(goal.id), answer: respond(201, goal) };
}

export async function listGoals(req: RouteRequest, ctx: WorkContext) {
  const params: unknown[] = [req.companyId];
  let where = 'company_id = $1';
  for (const [field, column] of [['status', 'status'], ['level', 'level'], ['parentId', 'parent_id'], ['ownerAgentId', 'owner_agent_id']] as const) {
    if (req.query[field] === undefined) continue;
    params.push(req.query[field]);
    where += ` and ${column} = $${params.length}`;
  }
  const { rows } = await ctx.db.query(`select * from goals where ${where} order by created_at, id`, params);
  return rows.map(goalJson);
}

export async function getGoal(req: RouteRequest, ctx: WorkContext) {
  const { rows } = await ctx.db.query('select * from goals where id = $1 and company_id = $2', [req.params.goalId, req.companyId]);
  if (!rows[0]) throw new PluginError(404, 'not_found', 'Goal not found');
  return goalJson(rows[0]);
}

export async function updateGoal(req: RouteRequest, ctx: WorkContext) {
  const body = req.body as Record<string, unknown>;
  const companyId = req.companyId!;
  const current = await lockRow(ctx.db, 'goals', req.params.goalId!, companyId);
  await checkReferences(ctx, companyId, body, req.params.goalId);
  const params: unknown[] = [current.id];
  const row = await updateRow(ctx.db, 'goals', current, assignments(body, COLUMNS, params), params);
  const before = goalJson(current);
  const after = goalJson(row);
  const { changes, previous } = changedFields(before, after, FIELDS);
  await ctx.activity.record({ action: 'goal.updated', entityType: 'goal', entityId: String(after.id), details: { changes, previous } });
  return after;
}
