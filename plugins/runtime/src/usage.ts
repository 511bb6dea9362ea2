import type { Row, RuntimeContext } from './context.ts';
import { finishRun } from './run-end.ts';
import { stopExecution } from './dispatch.ts';
import { IN_FLIGHT_BILLING_CODE } from './after-stop.ts';

const BILLING_TYPES = new Set(['metered_api', 'subscription_included', 'subscription_overage', 'credits', 'fixed', 'unknown']);
const MAX_TOKENS = 1_000_000_000_000;
const MAX_CENTS = 100_000_000_000;

export interface UsageReport {
  provider: string; model: string; biller: string; billingType: string;
  inputTokens: number; cachedInputTokens: number; outputTokens: number; costCents: number;
}

const count = (value: unknown, max: number): number | null => (value === undefined || value === null ? 0 : typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= max ? value : null);
const name = (value: unknown, fallback: string): string | null => (value === undefined || value === null ? fallback : typeof value === 'string' && value.length >= 1 && value.length <= 200 ? value : null);

/**
 * A `service.usage` line (or an http answer's `usage`) as a report, or null when it is not one:
 * counts must be non-negative integers, so a report can only add spend. `costUsd` is accepted
 * in place of `costCents` (rounded to cents); subscription-included usage costs nothing.
 */
export function parseUsage(data: Record<string, unknown>): UsageReport | null {
  const provider = name(data.provider, 'unknown');
  const model = name(data.model, 'unknown');
  const biller = name(data.biller, provider ?? 'unknown');
  const billingType = data.billingType === undefined ? 'unknown' : typeof data.billingType === 'string' && BILLING_TYPES.has(data.billingType) ? data.billingType : null;
  const inputTokens = count(data.inputTokens, MAX_TOKENS);
  const cachedInputTokens = count(data.cachedInputTokens, MAX_TOKENS);
  const outputTokens = count(data.outputTokens, MAX_TOKENS);
  let costCents = data.costCents === undefined && typeof data.costUsd === 'number' && Number.isFinite(data.costUsd) && data.costUsd >= 0
    ? Math.round(data.costUsd * 100) : count(data.costCents, MAX_CENTS);
  if (costCents !== null && costCents > MAX_CENTS) costCents = null;
  if (!provider || !model || !biller || !billingType || inputTokens === null || cachedInputTokens === null || outputTokens === null || costCents === null) return null;
  return { provider, model, biller, billingType, inputTokens, cachedInputTokens, outputTokens, costCents: billingType === 'subscription_included' ? 0 : costCents };
}

interface Recorded { results: Array<{ costEventId: string; duplicate: boolean }>; stopped: Array<{ scopeType: 'company' | 'agent' | 'project'; scopeId: string }> }

/** Who measured a run's usage, as the costs plugin records it: a tool's output, or a run server for a remote run. */
export type UsageSource = 'adapter' | 'remote_runner';

/** A usage claim as it arrived: the line's object and the key that makes its redelivery count once. */
export interface UsageClaim { data: Record<string, unknown>; sourceKey: string }

/**
 * Meters the usage reports of one batch of a run's output as they stream: cost events at once,
 * in order, attributed to the run's agent, issue and project and stored with the run as their
 * source, budgets evaluated in the same step (the costs plugin's `record-usages` service, one
 * call for the batch). When a hard stop now blocks the run's company, agent or project, the run
 * is ended at once (its process killed) rather than when the holds' events arrive. Each claim's
 * `sourceKey` makes a redelivered report count once. Malformed claims are counted as rejected.
 * `firstHandling`: the batch comes with an event this plugin handles for the first time, so none
 * of its reports is in the run's totals yet, whatever the costs plugin recorded before.
 */
export async function meterUsage(ctx: RuntimeContext, run: Row, claims: UsageClaim[], inFlightAt: string | null = null, source: UsageSource = 'adapter', firstHandling = false): Promise<void> {
  const parsed = claims.map((claim) => ({ claim, report: parseUsage(claim.data) }));
  const valid = parsed.filter((item): item is { claim: UsageClaim; report: UsageReport } => item.report !== null);
  const totals = { ...emptyTotals(), ...((run.usage_json ?? {}) as Record<string, number>) };
  totals.rejectedReports += parsed.length - valid.length;
  let recorded: Recorded = { results: [], stopped: [] };
  if (valid.length > 0) {
    // Usage in flight when the run was stopped is recorded as such (after-stop.ts): when it was recorded, and marked.
    const occurredAt = inFlightAt ?? new Date().toISOString();
    const marker = inFlightAt ? { billingCode: IN_FLIGHT_BILLING_CODE } : {};
    recorded = await ctx.services.call<Recorded>('costs', 'record-usages', {
      agentId: run.agent_id, runId: run.id, issueId: run.issue_id ?? null, projectId: run.project_id ?? null, source,
      reports: valid.map(({ claim, report }) => ({ ...report, ...marker, occurredAt, idempotencyKey: claim.sourceKey })),
    });
  }
  const added = emptyTotals();
  valid.forEach(({ report }, index) => {
    // A report the costs plugin had recorded already is counted again only where this batch was
    // never counted: its event's first handling here (handled-events.ts). Then the cost event is
    // what an earlier attempt left, committed by the costs plugin while this plugin's transaction
    // rolled back (a deadline under load), and the run's totals must still count it once.
    if (recorded.results[index]?.duplicate && !firstHandling) return;
    added.reports += 1;
    added.inputTokens += report.inputTokens;
    added.cachedInputTokens += report.cachedInputTokens;
    added.outputTokens += report.outputTokens;
    added.costCents += report.costCents;
  });
  const after = {
    ...totals, reports: totals.reports + added.reports, ...(inFlightAt ? { inFlightAtStop: (totals.inFlightAtStop ?? 0) + added.reports } : {}), inputTokens: totals.inputTokens + added.inputTokens,
    cachedInputTokens: totals.cachedInputTokens + added.cachedInputTokens, outputTokens: totals.outputTokens + added.outputTokens,
    costCents: totals.costCents + added.costCents,
  };
  await ctx.db.query('update runs set usage_json = $2::jsonb, updated_at = clock_timestamp() where id = $1', [run.id, JSON.stringify(after)]);
  run.usage_json = after;
  if (added.reports > 0) {
    await ctx.db.query(
      `update agent_states set input_tokens = input_tokens + $2, cached_input_tokens = cached_input_tokens + $3, output_tokens = output_tokens + $4,
              cost_cents = cost_cents + $5, updated_at = clock_timestamp() where agent_id = $1`,
      [run.agent_id, added.inputTokens, added.cachedInputTokens, added.outputTokens, added.costCents]);
  }
  const stop = await stoppingScope(ctx, run, recorded.stopped);
  if (stop && (run.status === 'running' || run.status === 'queued')) {
    await stopExecution(ctx, run, `budget_hard_stop_${stop.scopeType}`);
    await finishRun(ctx, run, { status: 'cancelled', cancelReason: `budget_hard_stop_${stop.scopeType}` });
  }
}

/**
 * The hard stop that ends this run now: a project's stop of its project, or an agent's or
 * company's stop while it still pauses its scope (the board may have resumed the scope over it).
 */
async function stoppingScope(ctx: RuntimeContext, run: Row, stopped: Recorded['stopped']): Promise<Recorded['stopped'][number] | undefined> {
  for (const stop of stopped) {
    if (stop.scopeType === 'project' && stop.scopeId === run.project_id) return stop;
    if (stop.scopeType === 'agent' && stop.scopeId === run.agent_id && (await ctx.agents.getConfig(String(run.agent_id)))?.status === 'paused') return stop;
    if (stop.scopeType === 'company' && (await ctx.companies.get(String(run.company_id)))?.status === 'paused') return stop;
  }
  return undefined;
}

/**
 * Usage a run's tool reported for calls Keel's model gateway served (`meteredBy: "gateway"`):
 * the gateway metered the provider's own answers into cost events, so these are not charged
 * again. They are kept beside the run for comparison, in its usage as `toolReported`
 * (reports, tokens and the cents the tool's own figures name). Malformed ones are counted as
 * rejected, as for metered reports.
 */
export async function keepToolReported(ctx: RuntimeContext, run: Row, lines: Array<Record<string, unknown>>): Promise<void> {
  const totals = { ...emptyTotals(), ...((run.usage_json ?? {}) as Record<string, unknown>) } as Record<string, unknown>;
  const kept = { reports: 0, inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, costCents: 0, ...(totals.toolReported as Record<string, number> | undefined) };
  let rejected = 0;
  for (const line of lines) {
    const report = parseUsage(line);
    if (!report) { rejected += 1; continue; }
    kept.reports += 1;
    kept.inputTokens += report.inputTokens;
    kept.cachedInputTokens += report.cachedInputTokens;
    kept.outputTokens += report.outputTokens;
    kept.costCents += report.costCents;
  }
  const after = { ...totals, rejectedReports: Number(totals.rejectedReports ?? 0) + rejected, toolReported: kept };
  await ctx.db.query('update runs set usage_json = $2::jsonb, updated_at = clock_timestamp() where id = $1', [run.id, JSON.stringify(after)]);
  run.usage_json = after;
}

/** Usage reports recorded after the run's stop decision: not metered, only counted on the run (after-stop.ts). */
export async function countUnmetered(ctx: RuntimeContext, run: Row, reports: number): Promise<void> {
  const totals = { ...emptyTotals(), ...((run.usage_json ?? {}) as Record<string, number>) };
  const after = { ...totals, unmeteredAfterStop: (totals.unmeteredAfterStop ?? 0) + reports };
  await ctx.db.query('update runs set usage_json = $2::jsonb, updated_at = clock_timestamp() where id = $1', [run.id, JSON.stringify(after)]);
  run.usage_json = after;
}

function emptyTotals(): Record<string, number> {
  return { reports: 0, rejectedReports: 0, inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, costCents: 0 };
}
