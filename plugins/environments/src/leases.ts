import { PluginError, respond, type RouteRequest } from '@keel/sdk/plugin';
import { assertMayManage } from './access.ts';
import type { EnvironmentsContext } from './context.ts';
import { assertDriverConfigured, checkLocalConfig } from './drivers.ts';
import { leaseJson } from './json.ts';
import { refusal } from './probe.ts';

type Body = Record<string, unknown>;
const LEASE_PAGE = 100;

/**
 * Leases: a run gets a directory of an environment. `ephemeral` leases get a fresh directory
 * (`<root>/leases/<leaseId>`) that is removed when the lease is released; `reusable` leases
 * share one directory per reuse key (`<root>/reusable/<reuseKey>`), held by one lease at a time
 * and kept between leases. Acquiring locks the environment row: the concurrency limit is
 * counted under that lock, and the partial unique index on (environment, reuse key) of active
 * leases backs up the reuse rule, so two Keel processes never hand out the same lease.
 */
export async function acquireLease(req: RouteRequest, ctx: EnvironmentsContext) {
  await assertMayManage(ctx);
  const body = (req.body ?? {}) as Body;
  const lease = await takeLease(ctx, req.companyId!, req.params.id!, {
    policy: (body.policy as string | undefined) ?? 'ephemeral', reuseKey: (body.reuseKey as string | undefined) ?? null,
    runId: (body.runId as string | undefined) ?? null, issueId: (body.issueId as string | undefined) ?? null,
    executionWorkspaceId: (body.executionWorkspaceId as string | undefined) ?? null,
  });
  return respond(201, lease);
}

interface LeaseRequest { policy: string; reuseKey: string | null; runId: string | null; issueId: string | null; executionWorkspaceId: string | null }

/** One lease of a company's environment, under the environment row's lock (the route's and the runtime's way). */
async function takeLease(ctx: EnvironmentsContext, companyId: string, environmentId: string, request: LeaseRequest) {
  const { policy, reuseKey } = request;
  if (policy === 'reusable' && !reuseKey) throw new PluginError(422, 'reuse_key_required', 'A reusable lease needs a reuseKey', { field: 'reuseKey' });
  if (policy === 'ephemeral' && reuseKey) throw new PluginError(422, 'reuse_key_not_allowed', 'An ephemeral lease takes no reuseKey', { field: 'reuseKey' });
  const { rows: found } = await ctx.db.query('select * from environments where id = $1 and company_id = $2 for update', [environmentId, companyId]);
  const environment = found[0];
  if (!environment) throw new PluginError(404, 'environment_not_found', 'Environment not found');
  if (environment.status !== 'active') throw new PluginError(409, 'environment_archived', 'The environment is archived and hands out no leases');
  assertDriverConfigured(String(environment.driver));
  const { root } = checkLocalConfig(environment.config as Record<string, unknown>);
  if (request.executionWorkspaceId) {
    const { rows } = await ctx.db.query('select 1 from execution_workspaces where id = $1 and company_id = $2', [request.executionWorkspaceId, companyId]);
    if (!rows.length) throw new PluginError(422, 'execution_workspace_not_found', 'executionWorkspaceId: no execution workspace with this id belongs to the company', { field: 'executionWorkspaceId' });
  }
  const { rows: counted } = await ctx.db.query("select count(*)::int as n from environment_leases where environment_id = $1 and status = 'active'", [environment.id]);
  const active = Number(counted[0]!.n);
  if (reuseKey) {
    const { rows: held } = await ctx.db.query("select id from environment_leases where environment_id = $1 and reuse_key = $2 and status = 'active'", [environment.id, reuseKey]);
    if (held[0]) throw new PluginError(409, 'lease_in_use', `The reusable lease "${reuseKey}" is held by another run`, { leaseId: held[0].id });
  }
  if (active >= Number(environment.max_concurrent_leases)) {
    throw new PluginError(409, 'lease_limit_reached', `The environment hands out at most ${environment.max_concurrent_leases} leases at once`, { maxConcurrentLeases: Number(environment.max_concurrent_leases), activeLeases: active });
  }
  const { rows: ids } = await ctx.db.query('select gen_random_uuid()::text as id');
  const leaseId = String(ids[0]!.id);
  const path = reuseKey ? `${root}/reusable/${reuseKey}` : `${root}/leases/${leaseId}`;
  const { rows } = await ctx.db.query(
    `insert into environment_leases (id, company_id, environment_id, policy, reuse_key, path, run_id, issue_id, execution_workspace_id)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9) returning *`,
    [leaseId, companyId, environment.id, policy, reuseKey, path, request.runId, request.issueId, request.executionWorkspaceId]);
  try {
    // Outside the isolate; a failure rolls the lease row back with the call.
    await ctx.workspaces.makeDirectory(path);
  } catch (error) {
    const { code, message } = refusal(error);
    throw new PluginError(409, 'lease_directory_unavailable', `The lease directory could not be created: ${message}`, { cause: code });
  }
  const lease = leaseJson(rows[0]!);
  await ctx.activity.record({ action: 'environment.lease_acquired', entityType: 'environment', entityId: String(environment.id), details: { leaseId, policy, reuseKey, runId: lease.runId } });
  return lease;
}

/**
 * The `run-lease` service: the runtime's lease for one run of an agent whose configuration
 * names an environment of the calling company (another company's id is not found). An
 * ephemeral lease, recorded with the run: released (and its directory removed) when the run
 * closes, however it ends (run.closed). Asking again for the same run answers its active lease
 * (a retried start). Answers the environment's variables as stored (secret references stay
 * references: the kernel resolves them when the process starts).
 */
export async function runLeaseService(input: unknown, ctx: EnvironmentsContext) {
  const { environmentId, runId, issueId } = input as { environmentId: string; runId: string; issueId?: string | null };
  const companyId = ctx.invocation.companyId;
  if (!companyId) throw new PluginError(403, 'company_scope_required', 'A run lease belongs to a company');
  const { rows: environments } = await ctx.db.query('select env_vars from environments where id = $1 and company_id = $2', [environmentId, companyId]);
  if (!environments[0]) throw new PluginError(404, 'environment_not_found', 'The agent\'s environment does not exist in its company', { environmentId });
  const { rows: held } = await ctx.db.query(
    "select * from environment_leases where company_id = $1 and environment_id = $2 and run_id = $3 and status = 'active' order by acquired_at limit 1",
    [companyId, environmentId, runId]);
  const lease = held[0] ? leaseJson(held[0]) : await takeLease(ctx, companyId, environmentId, { policy: 'ephemeral', reuseKey: null, runId, issueId: issueId ?? null, executionWorkspaceId: null });
  return { lease, envVars: environments[0].env_vars ?? {} };
}

/** Ends a locked active lease: an ephemeral lease's directory is removed (best effort), the row marked released, activity written. */
async function endLease(ctx: EnvironmentsContext, current: Record<string, unknown>, reason: string | null) {
  let directoryRemoved = false;
  if (current.policy === 'ephemeral') {
    try {
      directoryRemoved = (await ctx.workspaces.removeDirectory(String(current.path))).removed;
    } catch (error) {
      // The lease ends whatever happened to its directory (an operator may have unmounted the folder).
      ctx.log.warn('lease directory not removed', { leaseId: current.id, code: refusal(error).code });
    }
  }
  const { rows } = await ctx.db.query(
    "update environment_leases set status = 'released', released_at = now(), release_reason = $2 where id = $1 returning *",
    [current.id, reason]);
  const lease = leaseJson(rows[0]!);
  await ctx.activity.record({ action: 'environment.lease_released', entityType: 'environment', entityId: String(current.environment_id), details: { leaseId: lease.id, policy: lease.policy, directoryRemoved, reason } });
  return lease;
}

export async function releaseLease(req: RouteRequest, ctx: EnvironmentsContext) {
  await assertMayManage(ctx);
  const body = (req.body ?? {}) as Body;
  const { rows: found } = await ctx.db.query('select * from environment_leases where id = $1 and company_id = $2 for update', [req.params.leaseId, req.companyId]);
  const current = found[0];
  if (!current) throw new PluginError(404, 'not_found', 'Environment lease not found');
  // Releasing twice changes nothing: the first release's answer stands.
  if (current.status === 'released') return leaseJson(current);
  return endLease(ctx, current, (body.reason as string | undefined) ?? null);
}

/**
 * A run that ends, however it ends, gives back the leases it held (`run.closed`, delivered at
 * least once: a redelivery finds none active any more).
 */
export async function onRunClosed(payload: Record<string, unknown>, ctx: EnvironmentsContext): Promise<void> {
  const runId = typeof payload.runId === 'string' ? payload.runId : '';
  const companyId = ctx.invocation.companyId;
  if (!runId || !companyId) return;
  const { rows } = await ctx.db.query("select * from environment_leases where company_id = $1 and run_id = $2 and status = 'active' order by id for update", [companyId, runId]);
  for (const row of rows) await endLease(ctx, row, 'run_closed');
}

export async function listLeases(req: RouteRequest, ctx: EnvironmentsContext) {
  const params: unknown[] = [req.params.id, req.companyId];
  let where = 'environment_id = $1 and company_id = $2';
  if (req.query.status !== undefined) { params.push(req.query.status); where += ` and status = $${params.length}`; }
  const { rows } = await ctx.db.query(`select * from environment_leases where ${where} order by acquired_at desc, id desc limit ${LEASE_PAGE}`, params);
  return rows.map(leaseJson);
}

export async function getLease(req: RouteRequest, ctx: EnvironmentsContext) {
  const { rows } = await ctx.db.query('select * from environment_leases where id = $1 and company_id = $2', [req.params.leaseId, req.companyId]);
  if (!rows[0]) throw new PluginError(404, 'not_found', 'Environment lease not found');
  return leaseJson(rows[0]);
}
