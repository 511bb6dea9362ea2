import type { CostsContext } from './context.ts';
import { costsEvents, type DatabaseCapability } from '@keel/sdk/plugin';
import { monthKey, monthStart, nextMonthStart } from './periods.ts';

export type ScopeType = 'company' | 'agent' | 'project';
export interface Scope { companyId: string; scopeType: ScopeType; scopeId: string }

/** The pause reason of a hard stop; a resume lifts only a pause made with it. */
export const HARD_STOP_REASON = 'budget_hard_stop';

export const POLICY_DEFAULTS = { metric: 'billed_cents', warnPercent: 80, hardStopEnabled: true, notifyEnabled: true, isActive: true } as const;
export const defaultWindowKind = (scopeType: ScopeType) => (scopeType === 'project' ? 'lifetime' : 'calendar_month_utc');

export interface PolicyInput {
  scopeType: ScopeType; scopeId: string; amount: number; metric?: string; windowKind?: string;
  warnPercent?: number; hardStopEnabled?: boolean; notifyEnabled?: boolean; isActive?: boolean;
}

/**
 * Whether a policy's budget is the kernel's `budgetMonthlyCents` (the calendar-month
 * billed-cents policy of a company or an agent): such a policy stores no amount of its own
 * (migration 0006), the kernel's row is the one stored budget and its one writer is
 * `ctx.budgets.setMonthlyBudget`.
 */
export function isKernelBudget(scopeType: unknown, metric: unknown = POLICY_DEFAULTS.metric, windowKind: unknown = defaultWindowKind(scopeType as ScopeType)): boolean {
  return (scopeType === 'company' || scopeType === 'agent') && metric === 'billed_cents' && windowKind === 'calendar_month_utc';
}

/**
 * The budget of policy `p` in SQL: its own amount, or (amount null) the kernel's monthly budget
 * of its company or agent, read through keel_bridge.monthly_budget (budgets.write) in the
 * statement that uses it.
 */
export const POLICY_AMOUNT = 'coalesce(p.amount, keel_bridge.monthly_budget(p.company_id, p.scope_type, p.scope_id))';

/** A policy row with its budget (`budget`) whichever place holds it, as policyJson reads it. */
export const POLICY_ROW = `p.*, ${POLICY_AMOUNT} as budget`;

/**
 * Creates the policy of a scope or updates it. Fields left out keep their stored value on an
 * update and take the documented defaults on a create. A company's or agent's monthly policy
 * stores no amount: the caller writes `input.amount` to the kernel (ctx.budgets) after this
 * statement, which compares it with the kernel's figure still unchanged to bump the revision.
 */
export async function upsertPolicy(db: DatabaseCapability, companyId: string, input: PolicyInput): Promise<{ row: Record<string, unknown>; created: boolean }> {
  const metric = input.metric ?? POLICY_DEFAULTS.metric;
  const windowKind = input.windowKind ?? defaultWindowKind(input.scopeType);
  const stored = isKernelBudget(input.scopeType, metric, windowKind) ? null : input.amount;
  const { rows } = await db.query(
    `insert into budget_policies as p (company_id, scope_type, scope_id, metric, window_kind, amount, warn_percent, hard_stop_enabled, notify_enabled, is_active)
     values ($1, $2, $3, $4, $5, $6, coalesce($7, ${POLICY_DEFAULTS.warnPercent}), coalesce($8, true), coalesce($9, true), coalesce($10, true))
     on conflict (company_id, scope_type, scope_id, metric, window_kind) do update
       set revision = p.revision + case when (${POLICY_AMOUNT}, p.warn_percent, p.hard_stop_enabled, p.notify_enabled, p.is_active)
                                             is distinct from ($11::bigint, coalesce($7, p.warn_percent), coalesce($8, p.hard_stop_enabled),
                                                               coalesce($9, p.notify_enabled), coalesce($10, p.is_active)) then 1 else 0 end,
           amount = excluded.amount,
           warn_percent = coalesce($7, p.warn_percent),
           hard_stop_enabled = coalesce($8, p.hard_stop_enabled),
           notify_enabled = coalesce($9, p.notify_enabled),
           is_active = coalesce($10, p.is_active),
           updated_at = now()
     returning p.*, (xmax = 0) as created`,
    [companyId, input.scopeType, input.scopeId, metric, windowKind, stored, input.warnPercent ?? null, input.hardStopEnabled ?? null,
      input.notifyEnabled ?? null, input.isActive ?? null, input.amount]);
  const row = rows[0]!;
  return { row: { ...row, budget: input.amount }, created: row.created === true };
}

/**
 * The monthly policy of a company or agent follows its `budgetMonthlyCents`, which only the
 * kernel stores: it is created (with the defaults) when the budget becomes positive, and its
 * revision goes up when the budget changes, so that each threshold may fire again. A budget of
 * 0 with no policy creates none. `changed`: the budget is known to have changed (a kernel
 * event's `changes`); otherwise it is compared with the kernel's figure, which the caller has
 * not written yet. `unlessChangedAfter`: the moment the change is from (an event's); a policy
 * changed since is left as it is, so a late or repeated event bumps nothing twice. Answers the
 * policy with `budget` = `cents`, or null when there is none (or none changed, for a budget of 0).
 */
export async function followMonthlyBudget(db: DatabaseCapability, companyId: string, scopeType: 'company' | 'agent', scopeId: string, cents: number,
  { changed = false, unlessChangedAfter = null }: { changed?: boolean; unlessChangedAfter?: string | null } = {}): Promise<Record<string, unknown> | null> {
  const differs = `($4::boolean or ${POLICY_AMOUNT} is distinct from $5::bigint)`;
  const values = [companyId, scopeType, scopeId, changed, cents, unlessChangedAfter];
  const { rows } = cents > 0
    ? await db.query(
      `insert into budget_policies as p (company_id, scope_type, scope_id, metric, window_kind, amount)
       values ($1, $2, $3, 'billed_cents', 'calendar_month_utc', null)
       on conflict (company_id, scope_type, scope_id, metric, window_kind) do update
         set revision = p.revision + case when ${differs} then 1 else 0 end, updated_at = now()
         where $6::timestamptz is null or p.updated_at <= $6::timestamptz
       returning p.*`, values)
    : await db.query(
      `update budget_policies p set revision = p.revision + 1, updated_at = now()
        where company_id = $1 and scope_type = $2 and scope_id = $3 and metric = 'billed_cents' and window_kind = 'calendar_month_utc'
          and ${differs} and ($6::timestamptz is null or updated_at <= $6::timestamptz)
        returning p.*`, values);
  return rows[0] ? { ...rows[0], budget: cents } : null;
}

/**
 * The part of a statement that opens the incidents the current totals call for, for every
 * active policy of the touched scopes (CTE `touched`: company_id, scope_type, scope_id): soft
 * at the warn threshold (notifications on), hard at 100% (hard stop on). The unique key
 * (policy, window, threshold, policy revision) makes each fire at most once per window until
 * the budget changes, whichever concurrent transaction gets there first. A policy's budget is
 * read here (the kernel's for a company's or agent's monthly policy, keel_bridge.monthly_budgets), in the
 * statement's one snapshot with the totals it is compared with. `observed` is the SQL
 * of a scope's total in the policy's period, given `p` (the policy) and `period` (its period
 * key). Parameters: $2 the current month key, $3 and $4 the month's start and end.
 */
export function incidentsSql(observed: string): string {
  // The kernel's budgets of the touched companies and agents, in one call (POLICY_AMOUNT's
  // function called per policy row cost a sixth of cost ingest's time).
  return `kernel_budgets as (
       select * from keel_bridge.monthly_budgets((select jsonb_agg(distinct jsonb_build_object('company_id', company_id, 'scope_type', scope_type, 'scope_id', scope_id))
                                                   from touched where scope_type in ('company', 'agent')))
     ),
     candidates as (
       select p.id as policy_id, p.revision, p.company_id, p.scope_type, p.scope_id, p.metric, p.window_kind, w.amount, p.warn_percent,
              p.hard_stop_enabled, p.notify_enabled, ${observed} as observed,
              case when p.window_kind = 'lifetime' then '-infinity'::timestamptz else $3::timestamptz end as window_start,
              case when p.window_kind = 'lifetime' then null else $4::timestamptz end as window_end
         from budget_policies p
         join (select distinct company_id, scope_type, scope_id from touched) t on t.company_id = p.company_id and t.scope_type = p.scope_type and t.scope_id = p.scope_id
         left join kernel_budgets k on k.company_id = p.company_id and k.scope_type = p.scope_type and k.scope_id = p.scope_id
         cross join lateral (select case when p.window_kind = 'lifetime' then 'lifetime' else $2 end as period, coalesce(p.amount, k.amount, 0) as amount) w
        where p.is_active and w.amount > 0
     ),
     crossed as (
       select c.*, 'soft' as threshold_type from candidates c where c.notify_enabled and c.observed * 100 >= c.amount * c.warn_percent
       union all
       select c.*, 'hard' as threshold_type from candidates c where c.hard_stop_enabled and c.observed >= c.amount
     ),
     incidents as (
       insert into budget_incidents (company_id, policy_id, policy_revision, scope_type, scope_id, metric, window_kind, window_start, window_end, threshold_type, amount_limit, amount_observed)
       select company_id, policy_id, revision, scope_type, scope_id, metric, window_kind, window_start, window_end, threshold_type, amount, observed
         from crossed order by policy_id, threshold_type
       on conflict (policy_id, window_start, threshold_type, policy_revision) do nothing
       returning *
     )`;
}

/** A scope's stored running total in the policy's period (see incidentsSql). */
export const STORED_TOTAL = `coalesce((select s.cost_cents from spend_totals s where s.company_id = p.company_id and s.scope_type = p.scope_type
                                      and s.scope_id = p.scope_id and s.period = w.period), 0)`;

/** The month key and window bounds incidentsSql's parameters $2-$4 take. */
export function incidentWindow(now: Date): [string, string, string] {
  return [monthKey(now), monthStart(now).toISOString(), nextMonthStart(now).toISOString()];
}

/** Opens the incidents the stored totals of the touched scopes call for (see incidentsSql). */
export async function openIncidents(db: DatabaseCapability, touched: Scope[], now: Date): Promise<Array<Record<string, unknown>>> {
  if (touched.length === 0) return [];
  const { rows } = await db.query(
    `with touched as (select * from jsonb_to_recordset($1::jsonb) as t(company_id uuid, scope_type text, scope_id uuid)),
     ${incidentsSql(STORED_TOTAL)}
     select * from incidents`,
    [JSON.stringify(touched.map((s) => ({ company_id: s.companyId, scope_type: s.scopeType, scope_id: s.scopeId }))), ...incidentWindow(now)]);
  return rows;
}

/**
 * What a new incident does beyond being stored: an activity entry, and for a hard stop the
 * pause of its scope in the same transaction. Projects belong to the work plugin: their stop
 * is announced as a durable event written in the same transaction, on which the work plugin
 * holds the project (and lifts the hold on costs.budget.resumed).
 */
export async function actOnIncidents(ctx: CostsContext, incidents: Array<Record<string, unknown>>): Promise<void> {
  // The pauses change kernel rows (the company's, an agent's): they come before this
  // transaction's activity entries, whose per-company chain lock is taken last (see cost-events.ts).
  for (const incident of incidents) {
    if (incident.threshold_type !== 'hard') continue;
    if (incident.scope_type === 'company') await ctx.companies.pause(HARD_STOP_REASON);
    else if (incident.scope_type === 'agent') await ctx.agents.pause(String(incident.scope_id), HARD_STOP_REASON);
    else await announceProjectStop(ctx, String(incident.scope_id), true, String(incident.id));
  }
  for (const incident of incidents) {
    await ctx.activity.record({
      action: 'budget.incident_opened', entityType: 'budget_incident', entityId: String(incident.id),
      details: { policyId: incident.policy_id, thresholdType: incident.threshold_type, scopeType: incident.scope_type, scopeId: incident.scope_id,
        amountLimit: Number(incident.amount_limit), amountObserved: Number(incident.amount_observed) },
    });
  }
}

export async function announceProjectStop(ctx: CostsContext, projectId: string, stopped: boolean, incidentId: string): Promise<void> {
  await ctx.events.publish((stopped ? costsEvents.budgetStopped : costsEvents.budgetResumed).name,
    { scopeType: 'project', scopeId: projectId, reason: HARD_STOP_REASON, incidentId }, { entityType: 'project', entityId: projectId });
}

/** The spend a policy is measured against right now: its window's running total. */
export async function observedSpend(db: DatabaseCapability, policy: Record<string, unknown>, now: Date): Promise<number> {
  const period = policy.window_kind === 'lifetime' ? 'lifetime' : monthKey(now);
  const { rows } = await db.query('select cost_cents from spend_totals where company_id = $1 and scope_type = $2 and scope_id = $3 and period = $4',
    [policy.company_id, policy.scope_type, policy.scope_id, period]);
  return Number(rows[0]?.cost_cents ?? 0);
}
