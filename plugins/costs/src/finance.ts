import type { CostsContext } from './context.ts';
import { createOnce, type RouteRequest } from '@keel/sdk/plugin';
import { financeEventJson } from './json.ts';
import { rangeOf } from './periods.ts';

interface FinanceBody {
  kind: string; direction: 'debit' | 'credit'; amountCents: number; currency?: string; estimated?: boolean;
  biller?: string | null; description?: string | null; metadata?: Record<string, unknown> | null; occurredAt?: string;
}

/** With an Idempotency-Key, a retried create answers the finance event it made (200) and writes nothing (createOnce). */
export async function createFinanceEvent(req: RouteRequest, ctx: CostsContext) {
  const companyId = req.companyId!;
  return createOnce(ctx.db, {
    key: req.headers['idempotency-key'], companyId, kind: 'finance_event', request: req.body,
    load: async (id) => {
      const { rows } = await ctx.db.query('select * from finance_events where id = $1 and company_id = $2', [id, companyId]);
      return rows[0] ? financeEventJson(rows[0]) : null;
    },
    create: () => insertFinanceEvent(req, ctx),
  });
}

async function insertFinanceEvent(req: RouteRequest, ctx: CostsContext) {
  const body = req.body as FinanceBody;
  const { rows } = await ctx.db.query(
    `insert into finance_events (company_id, kind, direction, amount_cents, currency, estimated, biller, description, metadata, occurred_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, coalesce($10::timestamptz, now())) returning *`,
    [req.companyId, body.kind, body.direction, body.amountCents, body.currency ?? 'USD', body.estimated ?? false, body.biller ?? null,
      body.description ?? null, body.metadata ?? null, body.occurredAt ?? null]);
  const event = financeEventJson(rows[0]!);
  await ctx.activity.record({ action: 'finance_event.created', entityType: 'finance_event', entityId: String(event.id), details: { kind: event.kind, direction: event.direction, amountCents: event.amountCents, currency: event.currency } });
  return { id: String(event.id), answer: event };
}

/** `where` for one company's finance events in the query's range; `$1` is the company. */
function inRange(req: RouteRequest, params: unknown[]): string {
  const range = rangeOf(req.query);
  let sql = 'company_id = $1';
  if (range.from) { params.push(range.from.toISOString()); sql += ` and occurred_at >= $${params.length}`; }
  if (range.to) { params.push(range.to.toISOString()); sql += ` and occurred_at < $${params.length}`; }
  return sql;
}

const TOTALS = `coalesce(sum(amount_cents) filter (where direction = 'debit'), 0)::bigint as debit,
                coalesce(sum(amount_cents) filter (where direction = 'credit'), 0)::bigint as credit,
                coalesce(sum(amount_cents) filter (where estimated), 0)::bigint as estimated, count(*)::bigint as events`;

function totals(row: Record<string, unknown>) {
  const debitCents = Number(row.debit ?? 0);
  const creditCents = Number(row.credit ?? 0);
  return { debitCents, creditCents, netCents: debitCents - creditCents, estimatedCents: Number(row.estimated ?? 0), eventCount: Number(row.events ?? 0) };
}

export async function financeSummary(req: RouteRequest, ctx: CostsContext) {
  const params: unknown[] = [req.companyId];
  const where = inRange(req, params);
  const { rows } = await ctx.db.query(`select currency, ${TOTALS} from finance_events where ${where} group by currency order by currency`, params);
  const all = rows.reduce<Record<string, number>>((sum, row) => ({ debit: sum.debit! + Number(row.debit), credit: sum.credit! + Number(row.credit), estimated: sum.estimated! + Number(row.estimated), events: sum.events! + Number(row.events) }), { debit: 0, credit: 0, estimated: 0, events: 0 });
  return { companyId: req.companyId, from: req.query.from ?? null, to: req.query.to ?? null, ...totals(all), currencies: rows.map((row) => ({ currency: row.currency, ...totals(row) })) };
}

export function financeBy(column: 'biller' | 'kind') {
  return async (req: RouteRequest, ctx: CostsContext) => {
    const params: unknown[] = [req.companyId];
    const where = inRange(req, params);
    const { rows } = await ctx.db.query(`select ${column}, currency, ${TOTALS} from finance_events where ${where} group by ${column}, currency order by debit desc, ${column}, currency`, params);
    return rows.map((row) => ({ [column]: row[column] ?? null, currency: row.currency, ...totals(row) }));
  };
}

export async function financeEvents(req: RouteRequest, ctx: CostsContext) {
  const params: unknown[] = [req.companyId];
  const where = inRange(req, params);
  params.push(Number(req.query.limit ?? 100));
  const { rows } = await ctx.db.query(`select * from finance_events where ${where} order by occurred_at desc, created_at desc, id limit $${params.length}`, params);
  return rows.map(financeEventJson);
}
