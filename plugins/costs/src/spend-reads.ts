import type { CostsContext } from './context.ts';
import type { RouteRequest } from '@keel/sdk/plugin';
import { rangeOf, trailing, type TimeRange } from './periods.ts';
import { measures, spendSource, SUMMED } from './spend-source.ts';
import { POLICY_AMOUNT } from './policies.ts';

type Row = Record<string, unknown>;

/** Sums of one company's spend in a range, grouped by the given columns, largest first. */
export async function spendBy(ctx: CostsContext, companyId: string, range: TimeRange, columns: readonly string[]): Promise<Row[]> {
  const params: unknown[] = [companyId];
  const source = spendSource(range, columns, params);
  const grouping = columns.length ? `group by ${columns.join(', ')} order by cost_cents desc, ${columns.join(', ')}` : '';
  const { rows } = await ctx.db.query(`select ${columns.length ? `${columns.join(', ')}, ` : ''}${SUMMED} from (${source}) s ${grouping}`, params);
  return rows;
}

/** The company's monthly budget (the kernel's budgetMonthlyCents) while its calendar-month policy is active, 0 without one. */
export async function companyMonthlyBudget(ctx: CostsContext, companyId: string): Promise<number> {
  const { rows } = await ctx.db.query(
    `select ${POLICY_AMOUNT} as amount from budget_policies p where company_id = $1 and scope_type = 'company' and scope_id = $1
        and metric = 'billed_cents' and window_kind = 'calendar_month_utc' and is_active`, [companyId]);
  return Number(rows[0]?.amount ?? 0);
}

const percent = (part: number, whole: number) => (whole > 0 ? Math.round((part / whole) * 10_000) / 100 : 0);

export async function summary(req: RouteRequest, ctx: CostsContext) {
  const companyId = req.companyId!;
  const range = rangeOf(req.query);
  let spendCents: number;
  if (!range.from && !range.to) {
    // All time is one running total.
    const { rows } = await ctx.db.query(`select cost_cents from spend_totals where company_id = $1 and scope_type = 'company' and scope_id = $1 and period = 'lifetime'`, [companyId]);
    spendCents = Number(rows[0]?.cost_cents ?? 0);
  } else {
    spendCents = Number((await spendBy(ctx, companyId, range, []))[0]?.cost_cents ?? 0);
  }
  const budgetCents = await companyMonthlyBudget(ctx, companyId);
  return { companyId, from: req.query.from ?? null, to: req.query.to ?? null, spendCents, budgetCents, utilizationPercent: percent(spendCents, budgetCents) };
}

const BREAKDOWNS = {
  'by-agent': ['agent_id'],
  'by-agent-model': ['agent_id', 'provider', 'biller', 'model'],
  'by-provider': ['provider'],
  'by-biller': ['biller'],
  'by-project': ['project_id'],
  'by-source': ['source'],
  'by-source-model': ['source', 'provider', 'model'],
} as const;

const FIELD: Record<string, string> = { agent_id: 'agentId', provider: 'provider', biller: 'biller', model: 'model', project_id: 'projectId', source: 'source' };

export function breakdown(kind: keyof typeof BREAKDOWNS) {
  return async (req: RouteRequest, ctx: CostsContext) => {
    // by-source splits by model too when asked (`groupBy=model`; the manifest refuses other values).
    const columns = BREAKDOWNS[kind === 'by-source' && req.query.groupBy === 'model' ? 'by-source-model' : kind];
    const rows = await spendBy(ctx, req.companyId!, rangeOf(req.query), columns);
    const names = columns.includes('agent_id' as never) ? await agentNames(ctx) : null;
    return rows.map((row) => {
      const entry: Record<string, unknown> = {};
      for (const column of columns) entry[FIELD[column]!] = row[column] ?? null;
      if (names) entry.agentName = names.get(String(row.agent_id)) ?? null;
      return { ...entry, ...measures(row) };
    });
  };
}

async function agentNames(ctx: CostsContext): Promise<Map<string, string>> {
  const agents = await ctx.agents.list();
  return new Map(agents.map((agent) => [String(agent.id), String(agent.name)]));
}

export const WINDOWS = [{ window: '5h', hours: 5 }, { window: '24h', hours: 24 }, { window: '7d', hours: 168 }] as const;

/** Rolling spend over the last 5 hours, 24 hours and 7 days, with the providers behind each. */
export async function windowSpend(req: RouteRequest, ctx: CostsContext) {
  const now = new Date();
  const windows = [];
  for (const { window, hours } of WINDOWS) {
    const range = trailing(hours, now);
    const byProvider = await spendBy(ctx, req.companyId!, range, ['provider']);
    const total = byProvider.reduce((sum, row) => sum + Number(row.cost_cents), 0);
    windows.push({
      window, from: range.from!.toISOString(), to: now.toISOString(), spendCents: total,
      eventCount: byProvider.reduce((sum, row) => sum + Number(row.event_count), 0),
      byProvider: byProvider.map((row) => ({ provider: row.provider, ...measures(row) })),
    });
  }
  return { companyId: req.companyId, asOf: now.toISOString(), windows };
}

/** Per provider, spend and tokens in each window against the operator's configured quota (plugin config `quotas`). */
export async function quotaWindows(req: RouteRequest, ctx: CostsContext) {
  const now = new Date();
  const quotas = (ctx.config.quotas ?? {}) as Record<string, Partial<Record<'5h' | '24h' | '7d', number>>>;
  const perWindow = new Map<string, Map<string, Row>>();
  for (const { window, hours } of WINDOWS) {
    const rows = await spendBy(ctx, req.companyId!, trailing(hours, now), ['provider']);
    perWindow.set(window, new Map(rows.map((row) => [String(row.provider), row])));
  }
  const providers = new Set([...Object.keys(quotas), ...[...perWindow.values()].flatMap((rows) => [...rows.keys()])]);
  return [...providers].sort().map((provider) => ({
    provider,
    windows: WINDOWS.map(({ window }) => {
      const used = measures(perWindow.get(window)!.get(provider) ?? {});
      const limitCents = quotas[provider]?.[window] ?? null;
      return { window, ...used, limitCents, usedPercent: limitCents ? percent(used.spendCents, limitCents) : null, exceeded: limitCents !== null && used.spendCents >= limitCents };
    }),
  }));
}
