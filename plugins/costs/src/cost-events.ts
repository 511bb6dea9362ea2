import type { CostsContext, BatchCall } from './context.ts';
import { allOf, fingerprint, PluginError, respond } from '@keel/sdk/plugin';
import { costEventJson } from './json.ts';
import { actOnIncidents, incidentsSql, incidentWindow, STORED_TOTAL } from './policies.ts';

interface CostEventBody {
  agentId: string; provider: string; model: string; costCents: number; occurredAt: string;
  issueId?: string | null; projectId?: string | null; goalId?: string | null; heartbeatRunId?: string | null;
  billingCode?: string | null; biller?: string | null; billingType?: string;
  inputTokens?: number | null; cachedInputTokens?: number | null; outputTokens?: number | null;
}

type Row = Record<string, unknown>;
const MAX_IDEMPOTENCY_KEY = 255;

/** Where a cost event's figures come from (docs/api/costs.md): the route's events are the caller's own claim. */
export const COST_SOURCES = ['self_reported', 'adapter', 'gateway', 'remote_runner'] as const;
export type CostSource = (typeof COST_SOURCES)[number];

/** A call of the batch; the usage services name the source of their reports, the route never does. */
export type SourcedCall = BatchCall & { source?: CostSource };

/**
 * Accepts the cost events of one group commit together. One statement stores the new events
 * (and finds the stored ones of retried idempotency keys), adds them to the rollups and to the
 * running totals of every scope and period, whose rows then stay locked until commit (which
 * orders concurrent batches of one company), and opens the incidents those totals call for.
 * The activity entries are buffered and hard stops pause their scope, in the same transaction.
 * Month-to-date spend is these running totals themselves: the kernel reads them through this
 * plugin's view month_spend (migration 0005), so nothing is reported back. A batch without
 * retried keys or incidents waits for the database twice: for this statement (its BEGIN
 * travels with it) and for the COMMIT (the activity entries travel with it).
 */
export async function acceptCostEvents(calls: SourcedCall[], ctx: CostsContext): Promise<unknown[]> {
  const answers: unknown[] = new Array(calls.length).fill(null);
  const candidates: Array<{ index: number; row: Row }> = [];
  calls.forEach((call, index) => {
    try {
      candidates.push({ index, row: toRow(call, index) });
    } catch (error) {
      answers[index] = error;
    }
  });
  if (candidates.length === 0) return answers;

  const now = new Date();
  // One statement stores the new events (finding the stored ones of retried idempotency keys)
  // and adds what it stored to the rollups and running totals, opening the incidents the new
  // totals call for. From it to the commit, the rows of the company's running totals stay
  // locked: concurrent batches of one company take turns there (several are in flight).
  const { rows } = await ctx.db.query<{ ids: Array<{ ord: number; id: string }>; inserted: Row[]; incidents: Row[] }>(
    STORE_AND_ADD, [JSON.stringify(candidates.map((c) => c.row)), ...incidentWindow(now)]);
  const { ids, inserted, incidents } = rows[0]!;
  const insertedById = new Map(inserted.map((row) => [String(row.id), row]));
  const idByIndex = new Map(ids.map((entry) => [entry.ord, entry.id]));

  const replays = candidates.filter((c) => !insertedById.has(idByIndex.get(c.index)!));
  const stored = replays.length ? await storedUnderKeys(ctx, replays.map((c) => c.row)) : new Map<string, Row>();

  const ctxOfCompany = new Map<string, CostsContext>();
  // Activity entries are written after the kernel's rows (pauses) are changed: the activity
  // chain's per-company lock is taken last, as every kernel route takes it, so that this transaction and one that holds an agent row (a key being created) never
  // wait on each other in a circle.
  const activity: Array<() => Promise<void>> = [];
  for (const { index, row } of candidates) {
    const call = calls[index]!;
    const created = insertedById.get(idByIndex.get(index)!);
    if (created) {
      ctxOfCompany.set(String(row.company_id), ctxOfCompany.get(String(row.company_id)) ?? call.ctx);
      activity.push(() => call.ctx.activity.record({
        action: 'cost_event.created', entityType: 'cost_event', entityId: String(created.id),
        details: { agentId: created.agent_id, source: created.source, provider: created.provider, model: created.model, biller: created.biller, billingType: created.billing_type, costCents: Number(created.cost_cents), occurredAt: created.occurred_at },
      }));
      answers[index] = costEventJson(created);
      continue;
    }
    const previous = stored.get(`${row.company_id}/${row.idempotency_key}`);
    if (!previous) {
      answers[index] = new PluginError(409, 'idempotency_conflict', 'A request with this Idempotency-Key is still being processed; retry it');
    } else if (previous.fingerprint !== row.fingerprint) {
      answers[index] = new PluginError(409, 'idempotency_key_reused', 'This Idempotency-Key was already used for a different cost event');
    } else {
      activity.push(() => call.ctx.activity.record({ action: 'cost_event.replayed', entityType: 'cost_event', entityId: String(previous.id), details: { idempotencyKey: row.idempotency_key } }));
      answers[index] = respond(201, costEventJson(previous), { 'x-idempotent-replayed': 'true' });
    }
  }
  const writeActivity = () => allOf(activity.map((record) => record()));
  if (inserted.length === 0) {
    await writeActivity();
    return answers;
  }

  // The buffered activity entries (sent with the COMMIT), then hard stops pause their scope now.
  await writeActivity();
  for (const [companyId, companyCtx] of ctxOfCompany) {
    const own = incidents.filter((incident) => incident.company_id === companyId);
    if (own.length) await actOnIncidents(companyCtx, own);
  }
  return answers;
}

/** The stored row of a cost event; throws the per-call error when the call cannot be accepted. */
function toRow(call: SourcedCall, index: number): Row {
  const body = call.request.body as CostEventBody;
  const actor = call.ctx.invocation.actor;
  if (actor.type === 'agent' && actor.agentId !== body.agentId.toLowerCase()) {
    throw new PluginError(403, 'forbidden', 'An agent may report only its own costs');
  }
  // The kernel has checked the run an agent acts for (its run token's, or X-Service-Run-Id) as
  // a live run of its own; the body may name that run and no other, or a cost would be
  // attributed to another agent's run.
  const runId = call.ctx.invocation.runId;
  if (actor.type === 'agent' && body.heartbeatRunId && body.heartbeatRunId.toLowerCase() !== runId) {
    throw new PluginError(403, 'run_not_owned', runId
      ? `heartbeatRunId must be the run this call acts for (${runId})`
      : 'heartbeatRunId must be the run this call acts for: call with the run token of the run, or with X-Service-Run-Id naming it');
  }
  const key = call.request.headers['idempotency-key'];
  if (key !== undefined && (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY)) {
    throw new PluginError(400, 'invalid_idempotency_key', `Idempotency-Key must be 1-${MAX_IDEMPOTENCY_KEY} characters`);
  }
  const occurredAt = new Date(body.occurredAt);
  if (Number.isNaN(occurredAt.getTime())) throw new PluginError(400, 'validation_failed', 'occurredAt is not a valid date-time');
  return {
    ord: index, company_id: call.request.companyId, agent_id: body.agentId.toLowerCase(),
    project_id: body.projectId ?? null, issue_id: body.issueId ?? null, goal_id: body.goalId ?? null, heartbeat_run_id: body.heartbeatRunId ?? null,
    provider: body.provider, biller: body.biller ?? body.provider, model: body.model, billing_type: body.billingType ?? 'unknown',
    billing_code: body.billingCode ?? null, cost_cents: body.costCents,
    input_tokens: body.inputTokens ?? null, cached_input_tokens: body.cachedInputTokens ?? null, output_tokens: body.outputTokens ?? null,
    occurred_at: occurredAt.toISOString(), source: call.source ?? 'self_reported',
    // A report's source is part of what a retry must repeat; the runtime's reports (the default,
    // `adapter`) keep the fingerprint they had before sources existed.
    idempotency_key: key ?? null, fingerprint: key === undefined ? null : fingerprint(call.source && call.source !== 'adapter' ? { ...body, source: call.source } : body),
  };
}

async function storedUnderKeys(ctx: CostsContext, rows: Row[]): Promise<Map<string, Row>> {
  const keys = rows.filter((row) => row.idempotency_key !== null).map((row) => ({ company_id: row.company_id, key: row.idempotency_key }));
  if (keys.length === 0) return new Map();
  const { rows: found } = await ctx.db.query(
    `select e.* from cost_events e join jsonb_to_recordset($1::jsonb) as k(company_id uuid, key text)
       on e.company_id = k.company_id and e.idempotency_key = k.key`, [JSON.stringify(keys)]);
  return new Map(found.map((row) => [`${row.company_id}/${row.idempotency_key}`, row]));
}

/** Adds the events of CTE `ins` to a rollup table keyed by `unit` ('hour' or 'day', UTC), in key order. */
function rollupUpsert(table: string, unit: 'hour' | 'day'): string {
  return `
  insert into ${table} as r (company_id, ${unit}, agent_id, project_id, provider, biller, model, billing_type, source,
                             cost_cents, input_tokens, cached_input_tokens, output_tokens, event_count)
  select company_id, date_trunc('${unit}', occurred_at, 'UTC'), agent_id, project_id, provider, biller, model, billing_type, source,
         sum(cost_cents), coalesce(sum(input_tokens), 0), coalesce(sum(cached_input_tokens), 0), coalesce(sum(output_tokens), 0), count(*)
    from ins group by 1, 2, 3, 4, 5, 6, 7, 8, 9 order by 1, 2, 3, 4, 5, 6, 7, 8, 9
  on conflict (company_id, ${unit}, agent_id, project_id, provider, biller, model, billing_type, source) do update
    set cost_cents = r.cost_cents + excluded.cost_cents, input_tokens = r.input_tokens + excluded.input_tokens,
        cached_input_tokens = r.cached_input_tokens + excluded.cached_input_tokens, output_tokens = r.output_tokens + excluded.output_tokens,
        event_count = r.event_count + excluded.event_count
  returning 1`;
}

/**
 * Stores the events (CTE `ins`: those it inserted; a retried idempotency key inserts nothing)
 * and adds what it stored to the hourly and daily rollups and to every scope's running totals,
 * in key order (no deadlocks between batches), and opens the incidents the new totals call for
 * (policies.ts, incidentsSql): a total this statement changed is read from what it wrote, any
 * other from the table. Answers the id of every input row (`ids`, by `ord`), the inserted rows
 * and the opened incidents. Parameters: $1 the events, $2-$4 the incident
 * window (incidentWindow).
 */
const STORE_AND_ADD = `
with input as materialized (
  select gen_random_uuid() as id, x.*
    from jsonb_to_recordset($1::jsonb) as x(ord int, company_id uuid, agent_id uuid, project_id uuid, issue_id uuid, goal_id uuid, heartbeat_run_id uuid,
         provider text, biller text, model text, billing_type text, billing_code text, cost_cents bigint, input_tokens bigint,
         cached_input_tokens bigint, output_tokens bigint, occurred_at timestamptz, source text, idempotency_key text, fingerprint text)
),
ins as (
  insert into cost_events (id, company_id, agent_id, project_id, issue_id, goal_id, heartbeat_run_id, provider, biller, model, billing_type,
                           billing_code, cost_cents, input_tokens, cached_input_tokens, output_tokens, occurred_at, source, idempotency_key, fingerprint)
  select id, company_id, agent_id, project_id, issue_id, goal_id, heartbeat_run_id, provider, biller, model, billing_type,
         billing_code, cost_cents, input_tokens, cached_input_tokens, output_tokens, occurred_at, source, idempotency_key, fingerprint
    from input order by company_id, idempotency_key, ord
  on conflict (company_id, idempotency_key) where idempotency_key is not null do nothing
  returning *
),
rolled as (${rollupUpsert('cost_rollups', 'hour')}),
rolled_daily as (${rollupUpsert('cost_rollups_daily', 'day')}),
scoped as (
  select company_id, 'company' as scope_type, company_id as scope_id, occurred_at, cost_cents from ins
  union all select company_id, 'agent', agent_id, occurred_at, cost_cents from ins
  union all select company_id, 'project', project_id, occurred_at, cost_cents from ins where project_id is not null
),
totals as (
  insert into spend_totals as t (company_id, scope_type, scope_id, period, cost_cents)
  select company_id, scope_type, scope_id, p.period, sum(cost_cents)
    from scoped cross join lateral (values (to_char(occurred_at at time zone 'UTC', 'YYYY-MM')), ('lifetime')) as p(period)
   group by 1, 2, 3, 4 order by 1, 2, 3, 4
  on conflict (company_id, scope_type, scope_id, period) do update set cost_cents = t.cost_cents + excluded.cost_cents
  returning t.company_id, t.scope_type, t.scope_id, t.period, t.cost_cents
),
touched as (select company_id, scope_type, scope_id from totals),
${incidentsSql(`coalesce((select n.cost_cents from totals n where n.company_id = p.company_id and n.scope_type = p.scope_type
                                      and n.scope_id = p.scope_id and n.period = w.period), ${STORED_TOTAL})`)}
select (select coalesce(jsonb_agg(jsonb_build_object('ord', ord, 'id', id)), '[]'::jsonb) from input) as ids,
       (select coalesce(jsonb_agg(to_jsonb(ins)), '[]'::jsonb) from ins) as inserted,
       (select coalesce(jsonb_agg(to_jsonb(incidents)), '[]'::jsonb) from incidents) as incidents`;
