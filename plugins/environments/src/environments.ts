import { PluginError, respond, type RouteRequest } from '@keel/sdk/plugin';
import { assertMayManage } from './access.ts';
import type { EnvironmentsContext } from './context.ts';
import { assertDriverConfigured, checkEnvVars, checkLocalConfig, driverCapabilities } from './drivers.ts';
import { environmentJson } from './json.ts';
import { probeLocal } from './probe.ts';
import { updateSets, type ColumnMap } from './update-sets.ts';

type Body = Record<string, unknown>;
type Row = Record<string, unknown>;
const MAX_METADATA_CHARS = 16 * 1024;

/** The checks of a body a schema cannot make: the driver is available, its config, secrets as references, metadata's size. */
function checkBody(body: Body, driver: string): Body {
  const out: Body = { ...body };
  if (body.metadata !== undefined && body.metadata !== null && JSON.stringify(body.metadata).length > MAX_METADATA_CHARS) {
    throw new PluginError(400, 'metadata_too_large', `metadata: at most ${MAX_METADATA_CHARS} characters of JSON`, { field: 'metadata', limit: MAX_METADATA_CHARS });
  }
  assertDriverConfigured(driver);
  if (body.config !== undefined) out.config = checkLocalConfig(body.config as Record<string, unknown>);
  if (body.envVars !== undefined) checkEnvVars(body.envVars as Record<string, unknown>);
  return out;
}

async function lockEnvironment(ctx: EnvironmentsContext, id: string, companyId: string): Promise<Row> {
  const { rows } = await ctx.db.query('select * from environments where id = $1 and company_id = $2 for update', [id, companyId]);
  if (!rows[0]) throw new PluginError(404, 'not_found', 'Environment not found');
  return rows[0];
}

export async function listEnvironments(req: RouteRequest, ctx: EnvironmentsContext) {
  const params: unknown[] = [req.companyId];
  let where = 'company_id = $1';
  if (req.query.status !== undefined) { params.push(req.query.status); where += ` and status = $${params.length}`; }
  if (req.query.driver !== undefined) { params.push(req.query.driver); where += ` and driver = $${params.length}`; }
  const { rows } = await ctx.db.query(`select * from environments where ${where} order by created_at, id`, params);
  return rows.map(environmentJson);
}

export async function getEnvironment(req: RouteRequest, ctx: EnvironmentsContext) {
  const { rows } = await ctx.db.query('select * from environments where id = $1 and company_id = $2', [req.params.id, req.companyId]);
  if (!rows[0]) throw new PluginError(404, 'not_found', 'Environment not found');
  return environmentJson(rows[0]);
}

export async function createEnvironment(req: RouteRequest, ctx: EnvironmentsContext) {
  await assertMayManage(ctx);
  const body = checkBody(req.body as Body, String((req.body as Body).driver));
  const { rows } = await ctx.db.query(
    `insert into environments (company_id, name, description, driver, config, env_vars, max_concurrent_leases, metadata)
     values ($1, $2, $3, $4, $5::jsonb, $6::jsonb, coalesce($7, 10), $8::jsonb) returning *`,
    [req.companyId, body.name, body.description ?? null, body.driver, JSON.stringify(body.config), JSON.stringify(body.envVars ?? {}),
      body.maxConcurrentLeases ?? null, body.metadata === undefined || body.metadata === null ? null : JSON.stringify(body.metadata)]);
  const environment = environmentJson(rows[0]!);
  await ctx.activity.record({
    action: 'environment.created', entityType: 'environment', entityId: String(environment.id),
    details: { name: environment.name, driver: environment.driver, envVarNames: Object.keys(environment.envVars as object) },
  });
  return respond(201, environment);
}

const COLUMNS: ColumnMap = {
  name: { column: 'name' }, description: { column: 'description' }, status: { column: 'status' }, config: { column: 'config', json: true },
  envVars: { column: 'env_vars', json: true }, maxConcurrentLeases: { column: 'max_concurrent_leases' }, metadata: { column: 'metadata', json: true },
};

export async function updateEnvironment(req: RouteRequest, ctx: EnvironmentsContext) {
  await assertMayManage(ctx);
  const current = await lockEnvironment(ctx, req.params.id!, req.companyId!);
  const body = checkBody(req.body as Body, String(current.driver));
  const params: unknown[] = [current.id];
  const sets = updateSets(body, COLUMNS, params);
  const { rows } = await ctx.db.query(`update environments set ${sets.join(', ')}, updated_at = now() where id = $1 returning *`, params);
  const environment = environmentJson(rows[0]!);
  // Field names only: values (a root, variables) stay out of the activity log.
  await ctx.activity.record({ action: 'environment.updated', entityType: 'environment', entityId: String(environment.id), details: { changedFields: Object.keys(body).sort() } });
  return environment;
}

export async function deleteEnvironment(req: RouteRequest, ctx: EnvironmentsContext) {
  await assertMayManage(ctx);
  const current = await lockEnvironment(ctx, req.params.id!, req.companyId!);
  const { rows } = await ctx.db.query(
    `select (select count(*)::int from environment_leases where environment_id = $1 and status = 'active') as leases,
            (select count(*)::int from execution_workspaces where environment_id = $1 and status in ('active', 'idle')) as workspaces`, [current.id]);
  const { leases, workspaces } = rows[0] as { leases: number; workspaces: number };
  if (leases > 0 || workspaces > 0) {
    throw new PluginError(409, 'environment_in_use', 'The environment has active leases or open execution workspaces; release and close them first', { activeLeases: leases, openExecutionWorkspaces: workspaces });
  }
  await ctx.db.query('delete from environments where id = $1', [current.id]);
  const environment = environmentJson(current);
  await ctx.activity.record({ action: 'environment.deleted', entityType: 'environment', entityId: String(environment.id), details: { name: environment.name, driver: environment.driver } });
  return environment;
}

export async function environmentCapabilities() {
  return driverCapabilities();
}

/** Probe a candidate config without saving anything. */
export async function probeConfig(req: RouteRequest, ctx: EnvironmentsContext) {
  await assertMayManage(ctx);
  const body = req.body as Body;
  assertDriverConfigured(String(body.driver));
  const { root } = checkLocalConfig(body.config as Record<string, unknown>);
  return probeLocal(ctx, root);
}

/** Health check of a saved environment (its driver's probe); changes nothing. */
export async function probeEnvironment(req: RouteRequest, ctx: EnvironmentsContext) {
  await assertMayManage(ctx);
  const { rows } = await ctx.db.query('select * from environments where id = $1 and company_id = $2', [req.params.id, req.companyId]);
  if (!rows[0]) throw new PluginError(404, 'not_found', 'Environment not found');
  assertDriverConfigured(String(rows[0].driver));
  const { root } = checkLocalConfig(rows[0].config as Record<string, unknown>);
  return { environmentId: rows[0].id, ...(await probeLocal(ctx, root)) };
}
