import type { CostsContext } from './context.ts';
import { PluginError, respond, type EventPayload, type RouteRequest } from '@keel/sdk/plugin';
import { incidentJson, policyJson } from './json.ts';
import { monthKey, monthStart } from './periods.ts';
import { spendBy } from './spend-reads.ts';
import { measures } from './spend-source.ts';
import { actOnIncidents, announceProjectStop, followMonthlyBudget, HARD_STOP_REASON, isKernelBudget, observedSpend, openIncidents, POLICY_ROW, upsertPolicy, type PolicyInput } from './policies.ts';

type Row = Record<string, unknown>;

/**
 * A changed budget is evaluated at once: lowered below what the window has already spent, it
 * opens its incidents (and hard stop) now rather than at the next cost event.
 */
async function evaluateNow(ctx: CostsContext, policy: Row): Promise<Array<Record<string, unknown>>> {
  const incidents = await openIncidents(ctx.db, [{ companyId: String(policy.company_id), scopeType: policy.scope_type as never, scopeId: String(policy.scope_id) }], new Date());
  await actOnIncidents(ctx, incidents);
  return incidents;
}

/** Writes a company's or agent's monthly budget where it is kept: the kernel's row (budgets.write), its one place. */
function writeKernelBudget(ctx: CostsContext, scopeType: 'company' | 'agent', scopeId: string, cents: number) {
  return ctx.budgets.setMonthlyBudget(scopeType === 'company' ? { scope: 'company', cents } : { scope: 'agent', agentId: scopeId, cents });
}

async function setMonthlyBudget(ctx: CostsContext, companyId: string, scopeType: 'company' | 'agent', scopeId: string, cents: number) {
  // The policy first: it compares the budget with the kernel's figure before that is written.
  const policy = await followMonthlyBudget(ctx.db, companyId, scopeType, scopeId, cents);
  await writeKernelBudget(ctx, scopeType, scopeId, cents);
  await ctx.activity.record({ action: 'budget.updated', entityType: scopeType, entityId: scopeId, details: { budgetMonthlyCents: cents, policyId: policy?.id ?? null } });
  if (policy) await evaluateNow(ctx, policy);
  return { scopeType, scopeId, budgetMonthlyCents: cents, policy: policy ? policyJson(policy) : null };
}

export function companyBudget(req: RouteRequest, ctx: CostsContext) {
  const { budgetMonthlyCents } = req.body as { budgetMonthlyCents: number };
  return setMonthlyBudget(ctx, req.companyId!, 'company', req.companyId!, budgetMonthlyCents);
}

export function agentBudget(req: RouteRequest, ctx: CostsContext) {
  const { budgetMonthlyCents } = req.body as { budgetMonthlyCents: number };
  return setMonthlyBudget(ctx, req.companyId!, 'agent', req.params.agentId!, budgetMonthlyCents);
}

/** Projects are the work plugin's: a project policy names one of the company's projects. */
async function assertProjectExists(ctx: CostsContext, projectId: string): Promise<void> {
  const missing = (why: string) => new PluginError(404, 'project_not_found', `scopeId: no project with this id belongs to the company${why}`);
  let found: { exists: boolean };
  try {
    found = await ctx.services.call<{ exists: boolean }>('work', 'project', { projectId });
  } catch (error) {
    // Without the work plugin there are no projects.
    if ((error as PluginError).code === 'service_unavailable') throw missing(' (the work plugin is not enabled)');
    throw error;
  }
  if (!found.exists) throw missing('');
}

export async function upsertPolicyRoute(req: RouteRequest, ctx: CostsContext) {
  const companyId = req.companyId!;
  const body = req.body as PolicyInput & { scopeId?: string | null };
  let scopeId = body.scopeId ?? null;
  if (body.scopeType === 'company') {
    if (scopeId && scopeId.toLowerCase() !== companyId) throw new PluginError(422, 'invalid_scope', 'scopeId of a company policy must be the company itself');
    scopeId = companyId;
  } else if (!scopeId) {
    throw new PluginError(400, 'validation_failed', `scopeId is required for a ${body.scopeType} policy`);
  } else if (body.scopeType === 'agent') {
    scopeId = scopeId.toLowerCase();
    const agent = await ctx.agents.get(scopeId).catch((error: PluginError) => { if (error.code === 'cross_company_denied') return null; throw error; });
    if (!agent) throw new PluginError(404, 'agent_not_found', 'scopeId: no agent with this id belongs to the company');
  } else if (body.scopeType === 'project') {
    scopeId = scopeId.toLowerCase();
    await assertProjectExists(ctx, scopeId);
  }
  const { row, created } = await upsertPolicy(ctx.db, companyId, { ...body, scopeId: scopeId.toLowerCase() });
  // The amount of a company's or agent's monthly policy is its budgetMonthlyCents, kept by the kernel alone.
  if (isKernelBudget(row.scope_type, row.metric, row.window_kind)) await writeKernelBudget(ctx, row.scope_type as 'company' | 'agent', String(row.scope_id), body.amount);
  await ctx.activity.record({ action: created ? 'budget.policy_created' : 'budget.policy_updated', entityType: 'budget_policy', entityId: String(row.id), details: policyJson(row) });
  await evaluateNow(ctx, row);
  return respond(created ? 201 : 200, policyJson(row));
}

export async function overview(req: RouteRequest, ctx: CostsContext) {
  const companyId = req.companyId!;
  const now = new Date();
  const { rows: policies } = await ctx.db.query(
    `select ${POLICY_ROW}, coalesce(s.cost_cents, 0) as observed
       from budget_policies p
       left join spend_totals s on s.company_id = p.company_id and s.scope_type = p.scope_type and s.scope_id = p.scope_id
                               and s.period = case when p.window_kind = 'lifetime' then 'lifetime' else $2 end
      where p.company_id = $1 order by p.created_at, p.id`, [companyId, monthKey(now)]);
  const { rows: incidents } = await ctx.db.query(`select * from budget_incidents where company_id = $1 and status = 'open' order by created_at desc, id`, [companyId]);
  const agents = await ctx.agents.list();
  // Approvals waiting for the board's decision (a hire, among others); one sent back for revision waits for its requester.
  const pendingApprovalCount = await ctx.approvals.count({ status: 'pending' });
  const pausedProjects = new Set(incidents.filter((i) => i.scope_type === 'project' && i.threshold_type === 'hard').map((i) => String(i.scope_id)));
  // The company's spend this month per source: what Keel measured (gateway) apart from what was reported to it.
  const monthBySource = await spendBy(ctx, companyId, { from: monthStart(now), to: null }, ['source']);
  return {
    companyId,
    policies: policies.map((p) => {
      const observed = Number(p.observed);
      const amount = Number(p.budget);
      return { ...policyJson(p), observedAmount: observed, remainingAmount: Math.max(amount - observed, 0), utilizationPercent: amount > 0 ? Math.round((observed / amount) * 10_000) / 100 : 0 };
    }),
    activeIncidents: incidents.map(incidentJson),
    pausedAgentCount: agents.filter((agent) => agent.status === 'paused').length,
    pausedProjectCount: pausedProjects.size,
    pendingApprovalCount,
    monthSpendBySource: monthBySource.map((row) => ({ source: row.source, ...measures(row) })),
  };
}

export async function resolveIncident(req: RouteRequest, ctx: CostsContext) {
  const companyId = req.companyId!;
  const incidentId = req.params.incidentId ?? '';
  const body = req.body as { action: 'keep_paused' | 'raise_budget_and_resume'; amount?: number; note?: string };
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(incidentId)) throw new PluginError(404, 'incident_not_found', 'Budget incident not found');
  const { rows } = await ctx.db.query('select * from budget_incidents where id = $1 and company_id = $2 for no key update', [incidentId.toLowerCase(), companyId]);
  const incident = rows[0];
  if (!incident) throw new PluginError(404, 'incident_not_found', 'Budget incident not found');
  if (incident.status !== 'open') throw new PluginError(409, 'incident_not_open', `This incident is already ${incident.status}`);
  // NO KEY UPDATE: cost events opening incidents meanwhile take KEY SHARE on the policy (the
  // foreign key) while holding the agent's row, which this resolve updates too; FOR UPDATE
  // would make the two wait on each other.
  const { rows: policyRows } = await ctx.db.query(`select ${POLICY_ROW} from budget_policies p where id = $1 for no key update of p`, [incident.policy_id]);
  const policy = policyRows[0]!;
  let resumed = false;
  if (body.action === 'raise_budget_and_resume') {
    if (body.amount === undefined) throw new PluginError(400, 'validation_failed', 'amount (the new budget in cents) is required to raise the budget');
    const observed = await observedSpend(ctx.db, policy, new Date());
    if (body.amount <= observed) {
      throw new PluginError(422, 'budget_not_above_spend', `The new budget (${body.amount}) must be greater than the spend already observed in this window (${observed})`);
    }
    // A company's or agent's monthly budget is raised in the kernel's row (its one place), any other policy's here.
    const kernelBudget = isKernelBudget(policy.scope_type, policy.metric, policy.window_kind);
    const { rows: updated } = await ctx.db.query('update budget_policies set amount = $2, revision = revision + 1, updated_at = now() where id = $1 returning *',
      [policy.id, kernelBudget ? null : body.amount]);
    if (kernelBudget) await writeKernelBudget(ctx, policy.scope_type as 'company' | 'agent', String(policy.scope_id), body.amount);
    if (policy.scope_type === 'company') resumed = (await ctx.companies.resume(HARD_STOP_REASON)).changed;
    else if (policy.scope_type === 'agent') resumed = (await ctx.agents.resume(String(policy.scope_id), HARD_STOP_REASON)).changed;
    else {
      await announceProjectStop(ctx, String(policy.scope_id), false, String(incident.id));
      resumed = true;
    }
    Object.assign(policy, updated[0], { budget: body.amount });
  }
  // Raising the budget settles every open incident of the policy's window; keeping the scope paused settles this one.
  const { rows: resolved } = await ctx.db.query(
    `update budget_incidents set status = 'resolved', resolution = $3, resolution_note = $4, resolved_at = now()
      where status = 'open' and (id = $1 or ($3 = 'raise_budget_and_resume' and policy_id = $2
                                             and window_start = (select window_start from budget_incidents where id = $1)))
      returning *`, [incident.id, policy.id, body.action, body.note ?? null]);
  const own = resolved.find((row) => row.id === incident.id)!;
  await ctx.activity.record({
    action: 'budget.incident_resolved', entityType: 'budget_incident', entityId: String(incident.id),
    details: { resolution: body.action, amount: body.amount ?? null, resumed, scopeType: incident.scope_type, scopeId: incident.scope_id },
  });
  return { ...incidentJson(own), policy: policyJson(policy), resumed };
}

/**
 * Durable subscribers (company.created/updated, agent.created/updated), awaited: a company or
 * agent created with a monthly budget, or whose budget changed (the event's `changes`), gets its
 * policy (or the policy's next revision) after the kernel commits and before the kernel's route
 * answers. The budget itself stays in the kernel's row and is not copied: the policy reads it.
 * They run at least once, in commit order per company or agent: a policy changed after the
 * event's moment (by a redelivery, or by this plugin's own routes) is left as it is.
 */
export async function onCompanyChanged(payload: EventPayload<'company.created'> | EventPayload<'company.updated'>, ctx: CostsContext): Promise<void> {
  const changes = 'changes' in payload ? payload.changes : undefined;
  await followEvent(ctx, changes, payload.companyId, 'company', payload.companyId, payload.company.budgetMonthlyCents);
}

export async function onAgentChanged(payload: EventPayload<'agent.created'> | EventPayload<'agent.updated'>, ctx: CostsContext): Promise<void> {
  const changes = 'changes' in payload ? payload.changes : undefined;
  await followEvent(ctx, changes, payload.companyId, 'agent', payload.agent.id, payload.agent.budgetMonthlyCents);
}

/** A created scope (no `changes`) with a budget, or a change that names the budget. */
async function followEvent(ctx: CostsContext, changes: Record<string, unknown> | undefined, companyId: string, scopeType: 'company' | 'agent', scopeId: string, cents: number): Promise<void> {
  if (changes && !('budgetMonthlyCents' in changes)) return;
  await followMonthlyBudget(ctx.db, companyId, scopeType, scopeId, cents, { changed: changes !== undefined, unlessChangedAfter: ctx.invocation.event?.occurredAt ?? null });
}

/** A deleted company's cost data goes with it. */
export async function onCompanyDeleted(payload: EventPayload<'company.deleted'>, ctx: CostsContext): Promise<void> {
  const { companyId } = payload;
  for (const table of ['budget_incidents', 'budget_policies', 'spend_totals', 'cost_rollups', 'cost_rollups_daily', 'cost_events', 'finance_events', 'idempotency_keys']) {
    await ctx.db.query(`delete from ${table} where company_id = $1`, [companyId]);
  }
}

/**
 * The `open-incidents` service: the calling company's open budget incidents (soft and hard),
 * newest first, as the budget overview answers them. The board user's inbox lists them.
 */
export async function openIncidentsService(_input: unknown, ctx: CostsContext) {
  const { rows } = await ctx.db.query(
    `select * from budget_incidents where company_id = $1 and status = 'open' order by created_at desc, id limit 200`, [ctx.invocation.companyId]);
  return { incidents: rows.map(incidentJson) };
}
